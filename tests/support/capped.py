"""Running flujo (or a Python snippet) in a child process under a memory cap and a hang guard.

Tests of hostile input use it so that a regression shows as a failed test, not as a machine out of
memory or a suite that never ends: the child's address space is capped (RLIMIT_AS, ~2 GB) and it is
killed after a generous timeout (a guard against hangs, not a timing assertion).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEMORY_CAP = 2 * 1024**3
HANG_GUARD_S = 120


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def capped(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input_text: str | None = None,
    timeout: float = HANG_GUARD_S,
) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGS...`` (e.g. ``["-m", "flujo_cli.main", "validate", FILE]``) capped and guarded."""
    return subprocess.run(
        [sys.executable, *args],
        input=input_text,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=timeout,
        stdin=None if input_text is not None else subprocess.DEVNULL,
        preexec_fn=_cap,
    )


def capped_flujo(
    args: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``flujo ARGS...`` in a capped, guarded child process."""
    return capped(["-m", "flujo_cli.main", *args], cwd=cwd, env=env)
