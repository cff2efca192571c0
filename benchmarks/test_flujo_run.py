"""What a user runs: a conversational blueprint compiled from YAML, on the SQLite store (issue 19).

The blueprint and answers come from ``benchmarks/conversation_run.py``: ``conversation: true`` (so
``stop_when: agent_finished`` is implied), a scripted clarifier and a HITL step answered from ``--answers``,
turns of ~180 characters, ``max_loops`` iterations. Targets (docs/performance.md):

- ``test_engine_iterations``: the engine alone, as ``flujo run`` builds it (``load_pipeline``, then
  ``gc.freeze()``, the SQLite store, a ``Redactor``), N iterations; per iteration ≤ 0.5 ms. ``extra_info``
  has the cost of the last iterations against iterations 5-15 (time between consecutive questions; target
  ≤ 1.2×).
- ``test_flujo_run_process``: whole ``flujo run`` processes of 1, 10, 100 and 1,000 iterations; the marginal
  cost per iteration is the difference of two sizes (targets: ≤ 0.8 ms over 2-200, ≤ 1.0 ms over 201-1,000; a
  1-iteration run ≤ 0.6 s). ``extra_info`` has the peak RSS of the process (target: 1,000 iterations ≤ 1.2× 10).

- ``test_engine_iterations_postgres`` and ``test_flujo_run_process_postgres``: the same on the PostgreSQL
  store (the tests' throwaway server, tests/support/postgres_server.py: 127.0.0.1, ``fsync=off``), each round on an
  empty store of its own (a new schema); figures as measured, no target yet.

``make test`` runs each once with the benchmark disabled, capped at 2 iterations (the PostgreSQL process
only at 1), so none can rot; ``make bench`` measures.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import sizes
from benchmarks.conversation_run import argv, write
from benchmarks.sizes import size
from tests.support.postgres_server import empty_store_uri

T = TypeVar("T")

HERE = Path(__file__).resolve().parent
# Run a child, its output into the file argv[1], and report its exit code and peak RSS (ru_maxrss of the
# only child it waited for, KiB on Linux).
_MEASURED = (
    "import resource, subprocess, sys; code = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], 'wb'),"
    " stderr=subprocess.DEVNULL).returncode; print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def _iterations(wanted: int) -> int:
    """``wanted``, or at most 2 when ``make test`` runs the benchmark once, untimed."""
    return size(wanted, min(wanted, 2))


class TimedHuman:
    """Answers from a list, as ``--answers`` does, and notes when each question came."""

    def __init__(self, answers: list[str]) -> None:
        self._answers = iter(answers)
        self.asked: list[float] = []

    async def ask(self, question: Any) -> str:
        self.asked.append(time.perf_counter())
        return next(self._answers)


def frozen_rounds(benchmark: BenchmarkFixture, run: Callable[[], Awaitable[T]], *, large: bool) -> T:
    """``asyncio.run(run())`` measured by ``benchmark`` (3 rounds if ``large``, else 5, after a warm-up) with
    the heap frozen first, as ``flujo run`` freezes it once the blueprint is loaded (later full collections
    need not scan it); the rest of the test session collects as before."""
    gc.freeze()
    try:
        result: T = benchmark.pedantic(lambda: asyncio.run(run()), rounds=3 if large else 5, warmup_rounds=1)
        return result
    finally:
        gc.unfreeze()


def _growth(asked: list[float]) -> float:
    """Median time between consecutive questions near the end, over the same near iteration 10."""
    gaps = [later - earlier for earlier, later in itertools.pairwise(asked)]
    if len(gaps) < 30:
        return 1.0
    return statistics.median(gaps[-10:]) / statistics.median(gaps[5:15])


@pytest.mark.parametrize("wanted", [10, 100, 1000])
def test_engine_iterations(benchmark: BenchmarkFixture, tmp_path: Path, wanted: int) -> None:
    counter = itertools.count()
    _engine_iterations(benchmark, tmp_path, wanted, lambda: str(tmp_path / f"{next(counter)}.db"))


@pytest.mark.slow
@pytest.mark.parametrize("wanted", [10, 100, 1000])
def test_engine_iterations_postgres(
    benchmark: BenchmarkFixture, tmp_path: Path, postgres_server: str, wanted: int
) -> None:
    _engine_iterations(benchmark, tmp_path, wanted, lambda: empty_store_uri(postgres_server))


def _engine_iterations(benchmark: BenchmarkFixture, tmp_path: Path, wanted: int, new_store: Callable[[], str]) -> None:
    """The engine alone on a run of ``wanted`` iterations; each round on the empty store ``new_store`` names."""
    from blueprints import load_pipeline
    from core import Engine, NullReporter, Redactor, load_settings
    from core.store import open_store

    iterations = _iterations(wanted)
    blueprint, answers_file = write(iterations, tmp_path)
    answers = json.loads(answers_file.read_text())["answer"]
    settings = load_settings()
    pipeline = load_pipeline(blueprint, settings)
    humans: list[TimedHuman] = []

    async def run() -> str:
        store = await open_store(new_store())
        human = TimedHuman(answers)
        humans.append(human)
        try:
            engine = Engine(store=store, human=human, reporter=NullReporter(), redactor=Redactor())
            outcome = await engine.run(pipeline, "Plan the offsite")
        finally:
            await store.close()
        return outcome.status

    status = frozen_rounds(benchmark, run, large=wanted >= 1000)
    assert status == "completed"
    assert len(humans[-1].asked) == iterations
    if benchmark.enabled and benchmark.stats is not None:
        per_iteration = benchmark.stats.stats.median / iterations
        growth = statistics.median(_growth(human.asked) for human in humans)
        benchmark.extra_info.update(ms_per_iteration=round(per_iteration * 1000, 3), last_vs_10th=round(growth, 2))
        print(f"\n{iterations} iterations: {per_iteration * 1000:.3f} ms each; the last ones cost {growth:.2f}x")


def _flujo(tmp_path: Path, iterations: int) -> tuple[list[str], dict[str, str]]:
    directory = tmp_path / f"n{iterations}"
    blueprint, answers = write(iterations, directory)
    return measured(argv(blueprint, answers), os.devnull), flujo_environment()


def measured(flujo_argv: list[str], stdout: str) -> list[str]:
    """The command that runs ``flujo FLUJO_ARGV`` (its output into the file ``stdout``) and prints its exit
    code and peak RSS."""
    return [sys.executable, "-c", _MEASURED, stdout, sys.executable, "-m", "flujo_cli.main", *flujo_argv]


def flujo_environment() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    env.pop("FLUJO_STATE_URI", None)
    return env


def run_measured(command: list[str], env: dict[str, str], state: str) -> tuple[int, int]:
    """Run ``command`` (from ``measured``) on the store ``state``: its exit code and peak RSS (KiB)."""
    done = subprocess.run(command, env={**env, "FLUJO_STATE_URI": state}, capture_output=True, text=True)
    code, rss = done.stdout.split()
    return int(code), int(rss)


def process_rounds(
    benchmark: BenchmarkFixture, command: list[str], env: dict[str, str], state: Callable[[], str], *, large: bool
) -> tuple[int, int]:
    """``run_measured`` measured by ``benchmark`` (3 rounds if ``large``, else 7, after a warm-up), each run
    on a new store ``state()``: the last run's exit code and peak RSS (KiB)."""
    return benchmark.pedantic(  # type: ignore[no-any-return]
        lambda: run_measured(command, env, state()), rounds=3 if large else 7, warmup_rounds=1
    )


@pytest.mark.slow
@pytest.mark.parametrize("wanted", [1, 10, 100, 1000])
def test_flujo_run_process(benchmark: BenchmarkFixture, tmp_path: Path, wanted: int) -> None:
    iterations = _iterations(wanted)
    command, env = _flujo(tmp_path, iterations)
    counter = itertools.count()
    code, rss = process_rounds(
        benchmark, command, env, lambda: str(tmp_path / f"{next(counter)}.db"), large=wanted >= 1000
    )
    assert code == 0
    benchmark.extra_info.update(iterations=iterations, peak_rss_kib=rss)


# Under make test one process is enough to keep this one from rotting (each costs a second or so).
@pytest.mark.slow
@pytest.mark.parametrize("iterations", [1, 10, 100, 1000] if sizes.FULL else [1])
def test_flujo_run_process_postgres(
    benchmark: BenchmarkFixture, tmp_path: Path, postgres_server: str, iterations: int
) -> None:
    command, env = _flujo(tmp_path, iterations)
    code, rss = process_rounds(
        benchmark, command, env, lambda: empty_store_uri(postgres_server), large=iterations >= 1000
    )
    assert code == 0
    benchmark.extra_info.update(iterations=iterations, peak_rss_kib=rss)
