"""Per-iteration cost of a conversational loop on each durable store: SQLite (a file in WAL mode) and
PostgreSQL (the tests' throwaway server on 127.0.0.1, ``fsync=off``, so what is measured is flujo's work and
the round trips, not a disk). Each round runs a fresh 20-iteration ``conversation: true`` loop through the
engine: per iteration an agent step and a HITL step, each committed with its trace events. Run with
``make bench``; figures in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.test_conversation import ANSWER, _loop
from core import Engine, Pipeline
from core.store import open_store
from core.testing import ScriptedHuman

ITERATIONS = 20


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_loop_iteration_on_a_durable_store(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    uri = str(tmp_path / "flujo.db") if backend == "sqlite" else request.getfixturevalue("postgres_uri")
    pipeline = Pipeline(steps=(_loop(ITERATIONS),), name="bench")
    runs = itertools.count()
    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(open_store(uri))

    async def run() -> str:
        engine = Engine(store=store, human=ScriptedHuman([ANSWER] * ITERATIONS))
        outcome = await engine.run(pipeline, "Plan the offsite", run_id=f"bench-{next(runs)}")
        return outcome.status

    try:
        status = benchmark.pedantic(lambda: loop.run_until_complete(run()), rounds=15, warmup_rounds=2)
    finally:
        loop.run_until_complete(store.close())
        loop.close()
    assert status == "completed"
    benchmark.extra_info["iterations"] = ITERATIONS
