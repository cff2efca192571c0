"""Running the real ``flujo`` command in tests: in-process (CliRunner) or as a subprocess."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from flujo_cli.main import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "blueprints" / "examples"


def flujo(args: Sequence[str], *, input: str | None = None) -> tuple[int, str, str]:
    """Run flujo in-process; returns (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def flujo_process(
    args: Sequence[str],
    *,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run flujo as a separate process (real stdin/stdout, real exit code). No time limit of its own unless
    given: the test's (pytest-timeout, tests/conftest.py) ends one that hangs, and the process with it."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", *args],
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def read_terminal_until(fd: int, marker: str, timeout: float | None = None, *, seen: str = "") -> str:
    """Read a pseudo-terminal (or a pipe) until ``marker`` appears (escape sequences and all) in ``seen`` (what
    was read before and not yet looked at: a marker may arrive split across two reads) and what follows; all
    of it, or what was read when the writer closed its end first. AssertionError, with the end of what the
    terminal showed, when ``timeout`` seconds (if given) pass first; the test's time limit ends the wait too,
    its error noting the same."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while marker not in seen:
            if deadline is not None and time.monotonic() > deadline:
                raise AssertionError(f"{marker!r} never appeared; the terminal showed:\n{seen[-3000:]}")
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    read = os.read(fd, 65536)
                except OSError:  # the process closed the terminal
                    break
                if not read:  # a pipe's writer closed it
                    break
                seen += read.decode("utf-8", "replace")
    except BaseException as stopped:  # the test's time limit (pytest-timeout) ends it here: say what was seen
        stopped.add_note(f"waiting for {marker!r}; the terminal showed:\n{seen[-3000:]}")
        raise
    return seen


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie, dead but not yet reaped, is not); Linux's ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def wait_until(condition: Callable[[], bool], *, process: subprocess.Popen[Any] | None = None) -> None:
    """Wait for an event: until ``condition()`` holds (a file appears, a row is in the store). No deadline:
    the test's time limit (pytest-timeout) ends a wait that never ends, whatever the machine's load. With
    ``process``, AssertionError (with its stderr) as soon as it ends without the event having come."""
    while not condition():
        if process is not None and process.poll() is not None and not condition():
            _, stderr = process.communicate()
            raise AssertionError(f"the process ended (exit {process.returncode}) first; its stderr:\n{stderr}")
        time.sleep(0.05)
