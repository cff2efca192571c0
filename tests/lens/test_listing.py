"""``lens.recent_runs`` finding runs in a store of many: a search and an offset that reach past the first page
the store is read in, a status that counts abandoned running runs as interrupted, with the others' order."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

import pytest

from core import Redactor, RunRecord, RunUpdate
from core.store import MemoryStore, open_store
from core.text import redaction
from lens import listing, recent_runs


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


TEXT = 2_000_000  # characters of each run's input (and, different, of its output)


def _big_runs(path: Path, count: int) -> None:
    """``count`` runs in a SQLite store at ``path``, each with an input and an output of ``TEXT`` characters
    of their own (words, so they compress as prose does); run 0's output says "needle" at its very end."""

    async def make() -> None:
        store = await open_store(str(path))
        try:
            for number in range(count):
                words = " ".join(f"w{number}x{n % 997}" for n in range(TEXT // 8))
                run_id = f"run{number}"
                await store.create_run(RunRecord(run_id, "big", "running", input=words[:TEXT], created_at=1.0 + number))
                output = words[: TEXT - 7] + ("needle!" if number == 0 else "hay....")
                await store.update_run(run_id, RunUpdate("completed", output=output.upper()))
        finally:
            await store.close()

    asyncio.run(make())


def _peak(path: Path, **options: object) -> tuple[list[str], int]:
    """The runs ``recent_runs`` lists from the store at ``path``, and the peak of Python's memory meanwhile."""

    async def listed() -> list[str]:
        store = await open_store(str(path), mode="read")
        try:
            rows = await recent_runs(store, redactor=Redactor(), **options)  # type: ignore[arg-type]
        finally:
            await store.close()
        return [row.record.run_id for row in rows]

    tracemalloc.start()
    try:
        ids = asyncio.run(listed())
        return ids, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_listing_reads_no_run_input_or_output(tmp_path: Path) -> None:
    """The list shows neither: five runs of 4 MB of text each took 20 MB and more to list, now nothing."""
    _big_runs(tmp_path / "big.db", 5)
    ids, peak = _peak(tmp_path / "big.db")
    assert ids == ["run4", "run3", "run2", "run1", "run0"]
    assert peak < TEXT // 2


def test_a_search_reads_one_run_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--search`` holds one run's texts at a time (with what the redactor remembers, at most
    ``_MEMO_CHARS`` characters: made small here, below a run's texts); it held every run's, and copies."""
    monkeypatch.setattr(redaction, "_MEMO_CHARS", TEXT // 4)
    _big_runs(tmp_path / "big.db", 5)
    ids, peak = _peak(tmp_path / "big.db", search="NEEDLE!")
    assert ids == ["run0"]
    assert peak < 3 * 2 * TEXT  # a run: its input and output, and the UTF-8 of one being read (was 5 runs, copied)


def test_a_search_finds_a_match_across_windows_and_between_input_and_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search looks in the input and output joined by a line break, casefolded a window at a time."""
    monkeypatch.setattr(listing, "_WINDOW", 8)
    store = MemoryStore()
    texts = {"a": ("0123456Straße-x", "out"), "b": ("in the end", "Beginning"), "c": ("STRASSE", None)}

    async def make() -> None:
        for number, (run_id, (input, output)) in enumerate(texts.items()):
            await store.create_run(RunRecord(run_id, "w", "running", input=input, created_at=float(number)))
            await store.update_run(run_id, RunUpdate("completed", output=output))

    asyncio.run(make())
    assert _ids(store, search="strasse") == ["c", "a"]  # ß casefolds to ss, across the window at 8
    assert _ids(store, search="6STRASSE-X\nOU") == ["a"]
    assert _ids(store, search="END\nbeg") == ["b"]
    assert _ids(store, search="end beg") == []
