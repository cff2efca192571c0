"""``lens.recent_runs`` finding runs in a store of many: a search and an offset that reach past the first page
the store is read in, a status that counts abandoned running runs as interrupted, with the others' order."""

from __future__ import annotations

import asyncio

from core import Redactor, RunRecord, RunUpdate
from core.store import MemoryStore
from lens import recent_runs


def _store(count: int) -> MemoryStore:
    """``count`` runs, run 0 the oldest; every seventh says "needle"; every fifth is left running with an
    owner and no claim (its process is gone) and every tenth is stored interrupted."""

    async def make() -> MemoryStore:
        store = MemoryStore()
        for number in range(count):
            run_id = f"run{number:05d}"
            text = "a needle here" if number % 7 == 0 else "hay"
            await store.create_run(RunRecord(run_id, "many", "running", input=text, created_at=1000.0 + number))
            if number % 5 == 0:
                await store.claim_run(run_id)  # its owner is recorded; then its process "ends"
                await store.release_run(run_id)
            else:
                status = "interrupted" if number % 10 == 3 else "completed"
                await store.update_run(run_id, RunUpdate(status, output="done"))
        return store

    return asyncio.run(make())


def _ids(store: MemoryStore, **options: object) -> list[str]:
    rows = asyncio.run(recent_runs(store, redactor=Redactor(), **options))  # type: ignore[arg-type]
    return [row.record.run_id for row in rows]


def test_a_search_and_an_offset_reach_past_the_first_page() -> None:
    store = _store(1000)
    needles = [f"run{n:05d}" for n in reversed(range(1000)) if n % 7 == 0]  # newest first
    assert _ids(store, search="NEEDLE", limit=500) == needles  # 143 of them, over five pages
    assert _ids(store, search="needle", limit=10, offset=100) == needles[100:110]
    assert _ids(store, limit=5, offset=995) == ["run00004", "run00003", "run00002", "run00001", "run00000"]


def test_interrupted_counts_the_running_runs_whose_process_is_gone() -> None:
    store = _store(60)
    interrupted = sorted(
        [f"run{n:05d}" for n in range(60) if n % 5 == 0 or n % 10 == 3], reverse=True
    )  # stored so, or running with no live claim
    assert _ids(store, status="interrupted", limit=100) == interrupted
    assert _ids(store, status="interrupted", limit=3, offset=2) == interrupted[2:5]
    assert _ids(store, status="interrupted", since=1030.0, limit=100) == [i for i in interrupted if i >= "run00030"]
    assert _ids(store, status="running", limit=100) == []  # none is executed by a live process
