"""The peak memory of a ``flujo`` process: its maximum resident set size, as the kernel counted it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.support.cli_helpers import ROOT


def flujo_peak_rss(args: Sequence[str], *, stdin: Path, cwd: Path) -> tuple[int, int]:
    """Run ``flujo ARGS`` with ``stdin`` as its standard input (what it prints is dropped); returns its exit
    code and its peak resident memory in bytes (``getrusage`` of that one child, from ``wait4``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "flujo_cli.main", *args]
    with stdin.open("rb") as given:
        process = subprocess.Popen(
            command, stdin=given, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    return process.returncode, usage.ru_maxrss * 1024  # kilobytes on Linux
