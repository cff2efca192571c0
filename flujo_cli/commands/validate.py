"""``flujo validate``: every finding with file:line:col, or a stable JSON document."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import fail, require_file, stderr


def validate_blueprint(file: Path, *, json_output: bool, debug: bool, settings: Sequence[str] = ()) -> int:
    """Check ``file`` against the settings ``flujo run`` would use (flujo.toml, FLUJO_*, ``--set``
    ``settings``), so the two agree on what is valid."""
    require_file(file, "blueprint file", "check the path; examples live in blueprints/examples/")
    try:
        from blueprints import findings_to_json, validate_file
        from core import load_settings, overrides_from_assignments, use_bounds
        from flujo_cli.findings_view import render_findings

        configured = load_settings(overrides=overrides_from_assignments(settings))
        use_bounds(configured.bounds)
        findings = validate_file(file, settings=configured)
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
