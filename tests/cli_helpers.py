"""Running the real ``flujo`` command in tests: in-process (CliRunner) or as a subprocess."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
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


def read_terminal_until(fd: int, marker: str, timeout: float = 30, *, seen: str = "") -> str:
    """Read a pseudo-terminal until ``marker`` appears (escape sequences and all) in ``seen`` (what was read
    before and not yet looked at: a marker may arrive split across two reads) and what follows; all of it.
    AssertionError, with the end of what the terminal showed, when it never appears."""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        if time.monotonic() > deadline:
            raise AssertionError(f"{marker!r} never appeared; the terminal showed:\n{seen[-3000:]}")
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 65536).decode("utf-8", "replace")
            except OSError:  # the process closed the terminal
                break
    return seen
