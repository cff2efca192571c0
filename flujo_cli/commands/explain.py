"""``flujo explain``: what a blueprint will do, in plain words (or ``--json``), without running it.

A blueprint with errors is not explained: its errors are printed as by ``flujo validate`` and the exit
code is 3, as for ``flujo run`` (with ``--json``, validate's JSON document is printed on stdout).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import divert_stdout, fail, plain_console, require_file, stderr
from flujo_cli.model_flags import model_overrides, refused_at_load


def explain_file(
    file: Path, *, json_output: bool, debug: bool, settings: Sequence[str] = (), models: Sequence[str] = ()
) -> int:
    """Explain ``file`` with the settings ``flujo run`` would use (flujo.toml, FLUJO_*, ``--set``) and the
    models ``--model`` gives its agents."""
    require_file(file, "blueprint file", "check the path; examples live in blueprints/examples/")
    overrides = model_overrides(models)
    try:
        from blueprints import InvalidBlueprint, ModelOverrideError, explain_blueprint, findings_to_json, load_blueprint
        from core import overrides_from_assignments, settings_from_layers, settings_layers
        from flujo_cli.commands.config import set_where
        from flujo_cli.explain_view import render_explanation
        from flujo_cli.findings_view import render_findings
        from flujo_cli.user_cache import kept_settings, validated_files

        layers = settings_layers(overrides=overrides_from_assignments(settings))
        configured = settings_from_layers(layers, check=kept_settings())
        try:
            with divert_stdout():  # a module the blueprint imports may print: stdout holds only the explanation
                blueprint = load_blueprint(file, settings=configured, models=overrides, kept=validated_files())
        except ModelOverrideError as exc:
            return refused_at_load(exc)
        except InvalidBlueprint as exc:
            if json_output:
                sys.stdout.write(json.dumps(findings_to_json(exc.findings, file=str(file)), ensure_ascii=False) + "\n")
            errors = [f for f in exc.findings if f.is_error]
            console = stderr()
            render_findings(errors, console)
            console.print(f"[bold red]{len(errors)} error(s)[/]; nothing to explain. Check with: flujo validate FILE")
            return exit_codes.BLUEPRINT
        explanation = explain_blueprint(blueprint, configured, default_model_from=set_where(layers, ["default_model"]))
        if json_output:
            sys.stdout.write(json.dumps(explanation.to_json(), ensure_ascii=False) + "\n")
        else:
            render_explanation(explanation, plain_console())
        return exit_codes.OK
    except Exception as exc:  # the CLI's top level
        fail(exc, debug=debug)
