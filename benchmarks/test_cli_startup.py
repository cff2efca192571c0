"""Wall-clock start-up of the CLI, as a user feels it (targets: --help < 0.3 s, one-step run < 0.6 s).

Run with ``make bench``; the figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

HERE = Path(__file__).resolve().parent
FLUJO = [sys.executable, "-m", "flujo_cli.main"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["FLUJO_STATE_URI"] = str(tmp_path / "bench.db")
    env["PYTHONPATH"] = str(HERE.parent)
    return env


def test_help_startup(benchmark: BenchmarkFixture, tmp_path: Path) -> None:
    env = _env(tmp_path)
    result = benchmark.pedantic(
        subprocess.run, args=([*FLUJO, "--help"],), kwargs={"env": env, "capture_output": True}, rounds=15
    )
    assert result.returncode == 0


@pytest.mark.parametrize("blueprint", ["data_one_step.yaml"])
def test_one_step_run(benchmark: BenchmarkFixture, tmp_path: Path, blueprint: str) -> None:
    env = _env(tmp_path)
    argv = [*FLUJO, "run", str(HERE / blueprint), "--input", "hello", "--no-input"]
    result = benchmark.pedantic(subprocess.run, args=(argv,), kwargs={"env": env, "capture_output": True}, rounds=15)
    assert result.returncode == 0, result.stderr
