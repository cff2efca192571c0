"""The queue's bookkeeping in the store (docs/scale.md), on SQLite and on a real PostgreSQL: taking a run is
one transaction that gives the worker the run as it read it, marked running, and says whether it is fresh
(never started: nothing to read back); the status that settles a run takes it out of the queue in the same
transaction, so no second one is needed to finish it; a run given back, or whose taker is gone, is taken
again, not fresh, with its journal read in the same transaction (nothing read beside it, counted in
statements on both stores); a cancelled one is settled, its claim given back. On SQLite, taking waits for a
write lock another process holds and then holds exactly the claim of the run it took."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core import Journal, RunRecord, RunUpdate, StepRecord, TraceEvent
from core.model.records import RESUME_EVENT_KINDS
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
        assert again.journal == Journal()  # read with it: it had recorded nothing
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
        assert again.journal == Journal()
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


LONG = "a long text that the store keeps in its texts table, " * 8  # read back through the texts of the take


async def _taken_by_a_worker_that_died(uri: str) -> None:
    """Run "a", taken by a store that then closed (as a killed worker's claims go), having recorded: an answered
    question, an agent step, events of every kind a resume reads and one it does not (a prompt), and a child
    run (a sub-workflow's) with a step and an event of its own."""
    from core import AgentStarted, CallSent, ChildRunStarted, ProcessStarted, PromptSent, QuestionAnswered

    first = await _opened(uri)
    await _queue(first, "a")
    taken = await first.take_queued()
    assert taken is not None and taken.fresh and taken.journal is None  # nothing to read back

    def event(path: str, data: Any) -> TraceEvent:
        return TraceEvent(data.kind, path, data.to_payload(), 2.0)

    ask = StepRecord("a", "ask", "ask", "hitl", "completed", input="Which month?", output=LONG, started_at=1.0)
    act = StepRecord("a", "act", "act", "step", "completed", input=LONG, output="ok", started_at=3.0)
    await first.record_step(ask, [event("ask", QuestionAnswered("Which month?", LONG))])
    prompt = PromptSent("m", ({"role": "user", "content": LONG},), False)
    await first.record_events("a", [event("act", AgentStarted("m", 1)), event("act", prompt)])
    await first.record_events("a", [event("act", ProcessStarted("m", 4321, "boot", 99))])
    await first.record_step(act, [event("act", CallSent("m", "x", 3.0, 10))])
    await first.record_events("a", [event("sub", CallSent("m", "x", 4.0, 10))])  # its reply never recorded
    await first.create_run(RunRecord("a-child", "inner", "running", input=LONG, parent_run_id="a", created_at=5.0))
    await first.record_events("a", [event("sub", ChildRunStarted("a-child", "inner"))])
    inner = StepRecord("a-child", "q", "q", "hitl", "completed", input="Q?", output="yes", started_at=6.0)
    await first.record_step(inner, [event("q", QuestionAnswered("Q?", "yes", source="simulated"))])
    await first.close()


async def test_a_run_taken_again_comes_with_its_journal_as_the_taking_transaction_read_it(uri: str) -> None:
    """What resuming the run needs, read with it: its steps, its events of the kinds a resume reads (no
    prompt), and its child runs, each with its record and its own; equal to what the store's reads give."""
    await _taken_by_a_worker_that_died(uri)
    store = await _opened(uri)
    try:
        again = await store.take_queued()
        assert again is not None and not again.fresh and again.journal is not None
        journal = again.journal
        assert journal.steps == tuple(await store.steps("a"))
        assert [step.output for step in journal.steps] == [LONG, "ok"]
        events = await store.events("a")
        assert journal.events == tuple(e for e in events if e.kind in RESUME_EVENT_KINDS)
        assert [e.kind for e in journal.events] == [
            "hitl.answer", "agent.started", "agent.process", "agent.call", "agent.call", "workflow.child"
        ]  # fmt: skip
        assert journal.events[0].payload["answer"] == LONG
        [(child, inner)] = journal.children
        assert child == await store.get_run("a-child") and child.input == LONG
        assert inner == Journal(steps=tuple(await store.steps("a-child")), events=tuple(await store.events("a-child")))
    finally:
        await store.close()


async def test_taking_a_run_again_on_sqlite_is_one_transaction_and_nothing_else(tmp_path: Path) -> None:
    """Statements counted on both of the store's connections: the take of a run taken again is one ``BEGIN
    IMMEDIATE`` … ``COMMIT`` in which its journal is read, texts included; nothing is read beside it."""
    uri = str(tmp_path / "flujo.db")
    await _taken_by_a_worker_that_died(uri)
    store = await _opened(uri)
    assert isinstance(store, SqliteStore)
    try:
        writes, reads = await _traced(store)
        again = await store.take_queued()
        assert again is not None and again.journal is not None
        assert reads == []
        assert [s for s in writes if s.startswith(("BEGIN", "COMMIT", "ROLLBACK"))] == ["BEGIN IMMEDIATE", "COMMIT"]
        assert (writes[0], writes[-1]) == ("BEGIN IMMEDIATE", "COMMIT")
        for read in ("FROM steps", "FROM events", "FROM runs WHERE parent_run_id", "FROM texts"):
            assert any(read in statement for statement in writes), read
    finally:
        await store.close()


async def test_taking_a_run_again_on_postgresql_is_one_transaction_and_nothing_else(postgres_uri: str) -> None:
    """The statements sent to the server (tests/support/round_trips.py): the take of a run taken again is one
    ``BEGIN`` … ``COMMIT`` in which its journal is read, texts included; beside it only the claims' locks."""
    from tests.support.round_trips import RoundTripProxy

    await _taken_by_a_worker_that_died(postgres_uri)
    with RoundTripProxy(postgres_uri) as proxy:
        store = await _opened(proxy.proxied)
        try:
            before = len(proxy.statements)
            again = await store.take_queued()
            assert again is not None and again.journal is not None
            sent = proxy.statements[before:]
        finally:
            await store.close()
    locks = [s for s in sent if "advisory_lock" in s]
    inside = [s for s in sent if "advisory_lock" not in s]
    assert len(locks) == 1  # the run's claim (a session lock, on the claims connection)
    assert [s for s in inside if s in ("BEGIN", "COMMIT", "ROLLBACK")] == ["BEGIN", "COMMIT"]
    assert (inside[0], inside[-1]) == ("BEGIN", "COMMIT")
    for read in ("FROM steps", "FROM events", "FROM runs WHERE parent_run_id", "FROM texts"):
        assert any(read in statement for statement in inside), read


async def _traced(store: SqliteStore) -> tuple[list[str], list[str]]:
    """The statements ``store`` sends from now on: on its writer connection (transactions of writes and of
    the take) and on its reader connection (aiosqlite's, whose trace is set on its own thread)."""
    writes: list[str] = []
    reads: list[str] = []
    assert store._writer is not None and store._db is not None
    store._writer._conn.set_trace_callback(writes.append)
    reader = store._db
    await reader._execute(reader._conn.set_trace_callback, reads.append)  # type: ignore[no-untyped-call]
    return writes, reads
