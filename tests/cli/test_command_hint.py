"""The commands flujo suggests (``continue with: ... resume ...``) work as printed from where the person is:
after ``make run`` the virtual environment is not activated and ``flujo`` is not on PATH, so the hint names
the program as it was started (``.venv/bin/flujo``); with ``flujo`` on PATH it says ``flujo``."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import EXAMPLES, ROOT

PROGRAM = Path(sys.executable).parent / "flujo"  # the console script installed next to this Python


def _flujo(command: list[str], tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


def _hint(stderr: str) -> list[str]:
    [line] = [line for line in stderr.splitlines() if "continue with:" in line]
    return shlex.split(line.split("continue with:")[1].split("--answer")[0])


@pytest.mark.slow
@pytest.mark.skipif(not PROGRAM.is_file(), reason="flujo is not installed as a console script here")
def test_the_resume_hint_works_as_printed_without_an_activated_venv(tmp_path: Path) -> None:
    started_as = os.path.relpath(PROGRAM, ROOT)  # as make run starts it: $(BIN)/flujo
    without_venv = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != PROGRAM.parent)
    paused = _flujo([started_as, "run", str(EXAMPLES / "clarify.yaml"), "--no-input"], tmp_path, without_venv)
    assert paused.returncode == exit_codes.PAUSED, paused.stderr
    command = _hint(paused.stderr)
    assert command[0] == started_as and command[1] == "resume"
    resumed = _flujo([*command, "--answer", "Plan a trip", "--no-input"], tmp_path, without_venv)
    assert resumed.returncode == exit_codes.PAUSED, resumed.stderr  # resumed, then paused at the next question

    with_venv = os.pathsep.join([str(PROGRAM.parent), without_venv])
    paused = _flujo(["flujo", "run", str(EXAMPLES / "clarify.yaml"), "--no-input"], tmp_path, with_venv)
    assert _hint(paused.stderr)[0] == "flujo"
