"""What a plain ``flujo run`` leaves unimported: the optional extras (OpenTelemetry, MCP, the local model) and
what only some runs need (issue 36: start-up). Each module here was a measurable part of every run's start-up
before it was imported only by the runs that use it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.conversation_run import write

ROOT = Path(__file__).resolve().parents[2]
NEVER = (
    "opentelemetry",  # the [otel] extra: only with a collector configured or lens export --otlp
    "mcp",  # the [mcp] extra: only for an mcp: tool
    "xllamacpp",  # the [local] extra: only for model: local
    "core.agents.local_server",
    "textual",  # the viewer
    "httpx",  # no provider called
    "jsonschema",  # no schema checked
    "tiktoken",  # no history counted
    "psycopg",
    "typer._adapters",  # Typer's pydantic conversion of option values (flujo_cli/typed_values.py)
    "rich.status",  # the spinner, made at a terminal only (and rich.table with it)
    "rich.table",
    "core.replay",  # --replay only
    "blueprints.checking.salvage",  # a blueprint with errors only
    "tomllib",  # a settings file only
)
ONE_STEP = 'version: "0.1"\nagents:\n  a: {model: echo}\nsteps:\n  - {kind: step, name: s, uses: agents.a}\n'


def _imported(tmp_path: Path, *args: str) -> list[str]:
    spy = (
        "import atexit, json, sys; "
        f"atexit.register(lambda: print('IMPORTED', json.dumps([m for m in {NEVER!r} if m in sys.modules]), "
        "file=sys.stderr)); from flujo_cli.main import main; main()"
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env["FLUJO_STATE_URI"] = str(tmp_path / "s.db")
    done = subprocess.run(
        [sys.executable, "-c", spy, "run", *args, "--no-input"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED ")]
    return list(json.loads(line.removeprefix("IMPORTED ")))


def test_a_one_step_run_imports_no_extra(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    assert _imported(tmp_path, "one.yaml", "--input", "hi") == []


@pytest.mark.slow
def test_a_conversational_run_imports_no_extra(tmp_path: Path) -> None:
    blueprint, answers = write(1, tmp_path)
    assert _imported(tmp_path, str(blueprint), "--input", "Plan", "--answers", str(answers)) == []


def test_the_spy_sees_a_module_that_is_imported(tmp_path: Path) -> None:
    """The check above can fail: a settings file makes the run read TOML."""
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    (tmp_path / "flujo.toml").write_text("default_context_window = 8192\n")
    assert _imported(tmp_path, "one.yaml", "--input", "hi") == ["tomllib"]
