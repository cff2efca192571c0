"""The queue's bookkeeping in the store (docs/scale.md), on SQLite and on a real PostgreSQL: taking a run is
one transaction that gives the worker the run as it read it, marked running, and says whether it is fresh
(never started: nothing to read back); the status that settles a run takes it out of the queue in the same
transaction, so no second one is needed to finish it; a run given back, or whose taker is gone, is taken
again, not fresh; a cancelled one is settled, its claim given back. On SQLite, taking waits for a write
lock another process holds and then holds exactly the claim of the run it took."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import pytest

from core import RunRecord, RunUpdate
from core.store import PostgresStore, SqliteStore, open_store, process_label


@pytest.fixture(params=["sqlite", "postgres"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_uri"))
    return str(tmp_path / "flujo.db")


async def _opened(uri: str) -> SqliteStore | PostgresStore:
    store = await open_store(uri)
    assert isinstance(store, SqliteStore | PostgresStore)
    return store


async def _queue(store: SqliteStore | PostgresStore, *run_ids: str) -> None:
    await store.queue_runs(
        [RunRecord(run_id=run_id, pipeline_name="demo", status="queued", input=f"in {run_id}") for run_id in run_ids]
    )


async def test_taking_gives_the_oldest_run_fresh_marked_running_and_claimed(uri: str) -> None:
    store = await _opened(uri)
    try:
        await _queue(store, "a", "b")
        first = await store.take_queued()
        assert first is not None and first.fresh
        assert (first.record.run_id, first.record.status, first.record.input) == ("a", "running", "in a")
        assert first.record.owner == process_label()
        stored = await store.get_run("a")
        assert stored is not None and (stored.status, stored.owner) == ("running", process_label())
        assert await store.claimed_runs(["a", "b"]) == {"a"}
        second = await store.take_queued()
        assert second is not None and second.record.run_id == "b"
        assert await store.take_queued() is None
    finally:
        await store.close()


@pytest.mark.parametrize("status", ["completed", "paused", "failed", "cancelled"])
async def test_the_status_that_settles_a_run_takes_it_out_of_the_queue(uri: str, status: str) -> None:
    store = await _opened(uri)
    try:
        await _queue(store, "a")
        assert await store.take_queued() is not None
        await store.update_run("a", RunUpdate(status=status))  # type: ignore[arg-type]
        await store.release_run("a")  # as a worker killed right then would: its claim is gone
        assert await store.take_queued() is None  # not taken again: it left the queue with its status
        assert await store.claimed_runs(["a"]) == set()
    finally:
        await store.close()


async def test_a_run_given_back_is_taken_again_not_fresh(uri: str) -> None:
    store = await _opened(uri)
    try:
        await _queue(store, "a")
        assert await store.take_queued() is not None
        await store.update_run("a", RunUpdate(status="interrupted"))  # stays in the queue
        await store.leave_queued("a", requeue=True)
        await store.release_run("a")
        again = await store.take_queued()
        assert again is not None and again.record.run_id == "a" and not again.fresh
        assert again.record.status == "running"
    finally:
        await store.close()


async def test_a_run_whose_taker_is_gone_is_taken_again_not_fresh(uri: str) -> None:
    first = await _opened(uri)
    await _queue(first, "a")
    assert await first.take_queued() is not None
    await first.close()  # its claims go, as with a killed worker's process; the run stays taken and running
    second = await _opened(uri)
    try:
        again = await second.take_queued()
        assert again is not None and again.record.run_id == "a" and not again.fresh
        assert await second.claimed_runs(["a"]) == {"a"}
    finally:
        await second.close()


async def test_a_run_cancelled_while_taken_is_settled_when_its_taker_is_gone(uri: str) -> None:
    store = await _opened(uri)
    try:
        await _queue(store, "a")
        assert await store.take_queued() is not None
        other = await _opened(uri)
        try:
            assert await other.cancel_queued("a") == "requested"  # its worker is asked to stop
        finally:
            await other.close()
        assert await store.cancel_requests(["a"]) == {"a"}
        await store.release_run("a")  # the worker died before it stopped the run
        assert await store.take_queued() is None
        cancelled = await store.get_run("a")
        assert cancelled is not None and cancelled.status == "cancelled"
        assert await store.claimed_runs(["a"]) == set()
    finally:
        await store.close()


async def test_taking_waits_for_another_process_write_lock_and_holds_one_claim(tmp_path: Path) -> None:
    uri = str(tmp_path / "flujo.db")
    store = await _opened(uri)
    assert isinstance(store, SqliteStore)
    try:
        await _queue(store, "a", "b")
        with contextlib.closing(sqlite3.connect(uri, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            taking = asyncio.create_task(store.take_queued())
            while store.lock_waits == 0:  # the event: the take found the lock held, and waits
                await asyncio.sleep(0.01)
            assert not taking.done()
            other.execute("ROLLBACK")
        taken = await taking
        assert taken is not None and taken.record.run_id == "a" and taken.fresh
        assert await store.claimed_runs(["a", "b"]) == {"a"}
    finally:
        await store.close()
