"""Running the real ``flujo`` command in tests: in-process (CliRunner) or as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from typer.testing import CliRunner

from flujo_cli.main import app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "blueprints" / "examples"


def flujo(args: Sequence[str], *, input: str | None = None) -> tuple[int, str, str]:
    """Run flujo in-process; returns (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def flujo_process(
    args: Sequence[str], *, input: str | None = None, env: Mapping[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run flujo as a separate process (real stdin/stdout, real exit code)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", *args],
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
