"""Run-store size and write time of a conversation (issue 5).

Target: after a 100-turn conversation of 800-character turns, the database is at most 3x the raw text,
growing linearly. ``test_conversation_storage`` times the whole conversation (engine + SQLite store, no
history bound, so every call's ``agent.prompt`` event holds the whole history) and records the size in
``extra_info``; run with ``make bench``. Figures and the growth curve are in docs/performance.md.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.sizes import size
from tests.storage_growth import Growth, measure


@pytest.mark.parametrize("turns", [10, 50, 100, 200, 400])
def test_conversation_storage(benchmark: BenchmarkFixture, tmp_path: Path, turns: int) -> None:
    turns = size(turns, min(turns, 20))
    counter = itertools.count()

    def run() -> Growth:
        return measure(turns, tmp_path / str(next(counter)) / "flujo.db")

    growth = benchmark.pedantic(run, rounds=3, warmup_rounds=0)
    benchmark.extra_info.update(raw_bytes=growth.raw_bytes, db_bytes=growth.db_bytes, ratio=round(growth.ratio, 2))
    print(f"\n{turns} turns: {growth.raw_bytes} bytes of text, database {growth.db_bytes} bytes ({growth.ratio:.2f}x)")
    if turns >= 100:
        assert growth.ratio <= 3.0
