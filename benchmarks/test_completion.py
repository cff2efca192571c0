"""Wall-clock time of one shell completion, as a person pressing TAB waits for it: a whole ``flujo`` process
answering ``_FLUJO_COMPLETE=bash_complete`` (target: < 0.2 s on a quiet machine; docs/performance.md).

Measured against a SQLite store holding some hundreds of runs in a few threads: the run ids of ``lens show``,
the steps of a run for ``lens trace --step``, the agents of a blueprint for ``--simulate-user``, and the
subcommands of ``flujo`` (no store read), beside Python's own start for scale.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import sizes
from core import RunRecord, StepRecord
from core.store import open_store

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "blueprints" / "examples" / "chat.yaml"
RUNS = sizes.size(full=500, quick=5)


async def _fill(db: Path) -> str:
    async with await open_store(str(db)) as store:
        for n in range(RUNS):
            run_id = f"{n:016x}"
            await store.create_run(
                RunRecord(run_id, "chat", "completed", created_at=float(n), thread=f"thread-{n % 20}")
            )
            for i in range(1, 4):
                await store.record_step(StepRecord(run_id, f"chat/{i}/ask", "ask", "step", "completed"), [])
        return f"{RUNS - 1:016x}"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("completion") / "flujo.db"
    return db, asyncio.run(_fill(db))


@pytest.mark.parametrize(
    "line",
    ["flujo ", "flujo lens show ", "flujo lens trace {run} --step ", "flujo run {example} --simulate-user "],
    ids=["commands", "run-ids", "steps", "agents"],
)
def test_one_completion(benchmark: BenchmarkFixture, store: tuple[Path, str], line: str) -> None:
    db, newest = store
    words = line.format(run=newest, example=EXAMPLE)
    env = {
        **os.environ,
        "FLUJO_STATE_URI": str(db),
        "PYTHONPATH": str(HERE.parent),
        "_FLUJO_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split())),
    }
    argv = [sys.executable, "-m", "flujo_cli.main"]
    result = benchmark.pedantic(subprocess.run, args=(argv,), kwargs={"env": env, "capture_output": True}, rounds=15)
    assert result.returncode == 0 and result.stdout, result.stderr


def test_python_start_for_scale(benchmark: BenchmarkFixture) -> None:
    result = benchmark.pedantic(subprocess.run, args=([sys.executable, "-c", "pass"],), rounds=15)
    assert result.returncode == 0
