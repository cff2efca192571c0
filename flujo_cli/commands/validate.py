"""``flujo validate``: every finding with file:line:col, or a stable JSON document."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import divert_stdout, fail, require_file, stderr
from flujo_cli.model_flags import model_overrides, refused_at_load


def validate_blueprint(
    file: Path, *, json_output: bool, debug: bool, settings: Sequence[str] = (), models: Sequence[str] = ()
) -> int:
    """Check ``file`` against the settings ``flujo run`` would use (flujo.toml, FLUJO_*, ``--set``
    ``settings``) with the models ``--model`` gives its agents, so the two agree on what is valid."""
    require_file(file, "blueprint file", "check the path; examples live in blueprints/examples/")
    overrides = model_overrides(models)
    try:
        from blueprints import ModelOverrideError, findings_to_json, validate_file
        from core import load_settings, overrides_from_assignments, use_bounds
        from flujo_cli.findings_view import render_findings
        from flujo_cli.user_cache import kept_settings

        configured = load_settings(overrides=overrides_from_assignments(settings), check=kept_settings())
        use_bounds(configured.bounds)
        try:
            with divert_stdout():  # a module the blueprint imports may print: stdout holds only the findings
                findings = validate_file(file, settings=configured, models=overrides)
        except ModelOverrideError as exc:
            return refused_at_load(exc)
        errors = [f for f in findings if f.severity == "error"]
        if json_output:
            sys.stdout.write(json.dumps(findings_to_json(findings, file=str(file)), ensure_ascii=False) + "\n")
        else:
            console = stderr()
            render_findings(findings, console)
            warnings = sum(1 for f in findings if f.severity == "warning")
            if errors:
                console.print(f"[bold red]✗ {file}: {len(errors)} error(s), {warnings} warning(s)[/]")
            else:
                suffix = f" ({warnings} warning(s))" if warnings else ""
                console.print(f"[green]✓ {file} is valid[/]{suffix}")
        return exit_codes.FAILED if errors else exit_codes.OK
    except Exception as exc:  # the CLI's top level
        fail(exc, debug=debug)
