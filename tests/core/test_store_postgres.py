"""What only the PostgreSQL store does, on a real server (tests/support/postgres_server.py): its migrations from
an empty database, refusing a newer schema or another program's tables, looking without creating,
claims that are session advisory locks (a SIGKILLed holder's claim is gone at once), and the password of
its URI kept out of every message. The behaviour it shares with SQLite is in tests/core/test_store.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core import RunRecord, StoreError
from core.settings.location import describe, password, secrets
from core.store import SCHEMA_VERSION, open_store
from core.store.postgres_backend.schema import PG_MIGRATIONS
from core.store.sqlite_backend.migrations import MIGRATIONS

REPO = Path(__file__).resolve().parents[2]


def _sql(uri: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri, autocommit=True) as db:
        cursor = db.execute(sql, params)  # type: ignore[arg-type]  # the tests' own queries
        return cursor.fetchall() if cursor.description else []


def test_the_postgresql_migrations_are_sqlites_one_for_one() -> None:
    assert [name for name, _ in PG_MIGRATIONS] == [m.__name__ for m in MIGRATIONS]


async def test_an_empty_database_is_set_up_on_first_use_and_once(postgres_uri: str) -> None:
    assert _sql(postgres_uri, "SELECT to_regclass('runs')") == [(None,)]
    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0))
    names = [row[0] for row in _sql(postgres_uri, "SELECT name FROM schema_migrations ORDER BY name")]
    assert names == [m.__name__ for m in MIGRATIONS] and len(names) == SCHEMA_VERSION
    tables = {
        row[0] for row in _sql(postgres_uri, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    }
    assert tables == {"schema_migrations", "runs", "steps", "events", "texts", "thread_turns", "queue"}
    async with await open_store(postgres_uri) as store:  # opened again: nothing applied twice, nothing lost
        assert [r.run_id for r in await store.list_runs()] == ["r1"]
    assert len(_sql(postgres_uri, "SELECT name FROM schema_migrations")) == SCHEMA_VERSION


async def test_stores_opened_at_once_on_an_empty_database_migrate_it_once(postgres_uri: str) -> None:
    import asyncio

    stores = await asyncio.gather(*(open_store(postgres_uri) for _ in range(8)))
    try:
        assert len(_sql(postgres_uri, "SELECT name FROM schema_migrations")) == SCHEMA_VERSION
    finally:
        for store in stores:
            await store.close()


async def test_looking_never_creates_a_store(postgres_uri: str) -> None:
    for mode in ("read", "existing"):
        with pytest.raises(StoreError, match="there is no run store in postgresql://postgres:\\*\\*\\*@"):
            await open_store(postgres_uri, mode=mode)  # type: ignore[arg-type]
    assert _sql(postgres_uri, "SELECT to_regclass('schema_migrations')") == [(None,)]


async def test_a_newer_schema_is_refused_and_left_alone(postgres_uri: str) -> None:
    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("kept", "demo", "completed", created_at=1.0))
    _sql(postgres_uri, "INSERT INTO schema_migrations (name, applied_at) VALUES ('m999_from_the_future', 0)")
    with pytest.raises(StoreError, match=f"was written by a newer flujo \\(schema {SCHEMA_VERSION + 1} > "):
        await open_store(postgres_uri)
    assert _sql(postgres_uri, "SELECT run_id FROM runs") == [("kept",)]


async def test_another_programs_runs_table_is_refused(postgres_uri: str) -> None:
    _sql(postgres_uri, "CREATE TABLE runs (id INTEGER)")
    with pytest.raises(StoreError, match="is not a flujo run store"):
        await open_store(postgres_uri)
    assert _sql(postgres_uri, "SELECT to_regclass('schema_migrations')") == [(None,)]


def test_a_uri_is_named_without_its_password() -> None:
    uri = "postgresql://flujo:pa%3Ass@db.example:5433/runs?sslmode=require&password=other"
    assert describe(uri) == "postgresql://flujo:***@db.example:5433/runs?sslmode=require&password=***"
    assert password(uri) == "pa:ss" and secrets(uri) == ["pa:ss", "pa%3Ass"]
    assert password("postgresql://u@h/db?password=q") == "q"
    assert password(".flujo/flujo.db") is None and describe("postgres://h/db") == "postgres://h/db"


async def test_wrong_credentials_are_one_line_without_the_password(postgres_server: str) -> None:
    wrong = postgres_server.replace("postgres:pg-test-s3cret@", "postgres:not-the-s3cret@")
    with pytest.raises(StoreError) as raised:
        await open_store(wrong)
    message = f"{raised.value.message} {raised.value.hint}"
    assert raised.value.message.startswith("PostgreSQL refused the credentials for postgresql://postgres:***@")
    assert "not-the-s3cret" not in message and "\n" not in message


# --- claims: session advisory locks -----------------------------------------------------------------

_HOLDER = """
import asyncio, sys
from core.store import open_store

async def main():
    store = await open_store(sys.argv[1])
    print("claimed" if await store.claim_run("r1") else "refused", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.fixture
def holder(postgres_uri: str) -> Iterator[subprocess.Popen[str]]:
    """Another process that claimed run ``r1`` and holds it until killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, postgres_uri],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


async def test_a_claimed_run_is_refused_elsewhere_until_its_holder_is_killed(
    postgres_uri: str, holder: subprocess.Popen[str]
) -> None:
    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0))
        assert holder.stdout is not None and holder.stdout.readline().strip() == "claimed"
        assert not await store.claim_run("r1")  # a live process executes it
        assert (await store.prune_runs(keep=0)).live == ("r1",)  # and prune keeps it
        record = await store.get_run("r1")
        assert record is not None and record.owner == f"pid {holder.pid} on {os.uname().nodename}"

        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        # The server ends the dead client's session, and its locks with it, as soon as the socket closes.
        deadline = time.monotonic() + 10
        while not (claimed := await store.claim_run("r1")) and time.monotonic() < deadline:
            await _pause()
        assert claimed
        assert not await store.claim_run("r1")  # one claim per run, this store's included
        await store.release_run("r1")
        assert await store.claim_run("r1")


async def test_claims_live_on_one_connection_outside_the_pool(postgres_uri: str) -> None:
    async with await open_store(postgres_uri) as store:
        for run_id in ("a", "b"):
            await store.create_run(RunRecord(run_id, "demo", "running", created_at=1.0))
        before = _connections()
        assert await store.claim_run("a") and await store.claim_run("b")
        assert _connections() == before + 1  # one more connection, holding both claims
        locks = _sql(postgres_uri, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")
        assert locks == [(2,)]
        await store.release_run("a")
        await store.release_run("b")
        assert _connections() == before + 1  # kept for the next run's claim (opening one costs 5-7 ms of CPU)
        assert _sql(postgres_uri, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == [(0,)]
        held = _flujo_backends()
        assert await store.claim_run("a")
        assert _flujo_backends() == held  # the same connection claims again
    assert _sql(postgres_uri, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == [(0,)]
    assert _settled_connections(0) == 0  # closed with the store


async def test_a_claims_connection_lost_while_it_held_no_claim_is_replaced(postgres_uri: str) -> None:
    """The server ends the idle claims connection (a restart, a network device dropping idle connections):
    nothing was held on it, so the next claim opens another and succeeds."""
    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("a", "demo", "running", created_at=1.0))
        assert await store.claim_run("a")
        await store.release_run("a")
        uri = os.environ["FLUJO_TEST_POSTGRES_URI"]
        last = "SELECT pid FROM pg_stat_activity WHERE application_name = 'flujo' AND query LIKE %s"
        claims = [pid for (pid,) in _sql(uri, last, ("%pg_advisory_unlock%",))]
        assert len(claims) == 1  # the claims connection: its last statement gave the claim back
        _sql(uri, "SELECT pg_terminate_backend(%s)", (claims[0],))
        assert await store.claim_run("a")
        assert [r.run_id for r in await store.list_runs()] == ["a"]


def _settled_connections(expected: int) -> int:
    """flujo's connections once the server has seen the closed ones go (a backend leaves pg_stat_activity
    shortly after its client closes): the count as soon as it is ``expected``, else after 30 s."""
    deadline = time.monotonic() + 30
    while (found := _connections()) != expected and time.monotonic() < deadline:
        continue  # each count is a new session's query: the server's view of the moment
    return found


def _connections() -> int:
    uri = os.environ["FLUJO_TEST_POSTGRES_URI"]
    return int(_sql(uri, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'flujo'")[0][0])


async def _pause() -> None:
    import asyncio

    await asyncio.sleep(0.05)


def test_redaction_masks_the_password_of_a_postgresql_state_uri() -> None:
    from core import Settings, secret_values

    settings = Settings(state_uri="postgresql://flujo:s%40fe-pw@db:5432/runs")
    assert {"s@fe-pw", "s%40fe-pw"} <= set(secret_values(settings, env={}))
    assert secret_values(Settings(), env={}) == []


async def test_a_long_text_is_stored_once_per_run(postgres_uri: str) -> None:
    from core import StepRecord, TraceEvent

    said = "a long answer that the next prompt injects again, " * 4
    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0, input=said))
        for n in range(3):
            event = TraceEvent("agent.prompt", f"s{n}", {"messages": [{"role": "user", "content": said}]}, 1.0)
            await store.record_step(StepRecord("r1", f"s{n}", "s", "step", "completed", output=said), [event])
        assert [s.output for s in await store.steps("r1")] == [said] * 3
    assert _sql(postgres_uri, "SELECT count(*) FROM texts") == [(1,)]
    assert all(said not in str(row) for row in _sql(postgres_uri, "SELECT output FROM steps"))


async def test_a_committed_step_is_one_round_trip(postgres_uri: str) -> None:
    """A step, its events and its new texts go to the server as one statement (issue 36): one round trip for a
    run this store created (its texts are all known here); one more for a run another store created, whose
    texts are looked up first. Counted on the wire (tests/support/round_trips.py)."""
    from core import StepRecord, TraceEvent
    from tests.support.round_trips import RoundTripProxy

    said = "a long answer that the next prompt injects again, " * 4
    with RoundTripProxy(postgres_uri) as proxy:
        async with await open_store(proxy.proxied) as store:
            before = proxy.count
            await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0, input=said))
            assert proxy.count - before == 2  # a first block of text ids, then the statement
            trips = []
            for n in range(5):
                messages = [{"role": "user", "content": f"{said} {m}"} for m in range(n + 8)]
                events = [TraceEvent("agent.prompt", f"s{n}", {"messages": messages}, 1.0)]
                before = proxy.count
                await store.record_step(StepRecord("r1", f"s{n}", "s", "step", "completed", said, f"{said}{n}"), events)
                trips.append(proxy.count - before)
            assert trips == [1] * 5
        async with await open_store(proxy.proxied) as resumed:
            before = proxy.count
            await resumed.record_step(StepRecord("r1", "s9", "s", "step", "completed", said, f"{said}9"), [])
            assert proxy.count - before <= 3  # the look-up, a block of ids, the statement
    async with await open_store(postgres_uri) as store:
        steps = await store.steps("r1")
        assert [s.output for s in steps] == [f"{said}{n}" for n in (0, 1, 2, 3, 4, 9)]
        prompts = await store.events("r1", kind="agent.prompt")
        assert [len(e.payload["messages"]) for e in prompts] == [8, 9, 10, 11, 12]
    assert _sql(postgres_uri, "SELECT count(*) FROM texts WHERE body = %s", (said.encode(),)) == [(1,)]


async def test_text_ids_are_unique_across_stores_writing_at_once(postgres_uri: str) -> None:
    """Ids of new texts are taken from the server's sequence a block at a time: two stores writing the same
    database at once never give one id twice, and each reads back what it wrote."""
    import asyncio

    from core import StepRecord

    async def write(store: Any, run_id: str) -> None:
        await store.create_run(RunRecord(run_id, "demo", "running", created_at=1.0))
        for n in range(150):
            text = f"{run_id} says {n}, long enough to be stored once and referred to by its id"
            await store.record_step(StepRecord(run_id, f"s{n}", "s", "step", "completed", output=text), [])

    async with await open_store(postgres_uri) as first, await open_store(postgres_uri) as second:
        await asyncio.gather(write(first, "a"), write(second, "b"))
        for store, run_id in ((first, "a"), (second, "b")):
            outputs = [s.output for s in await store.steps(run_id)]
            assert outputs == [
                f"{run_id} says {n}, long enough to be stored once and referred to by its id" for n in range(150)
            ]
    assert _sql(postgres_uri, "SELECT count(*), count(DISTINCT id) FROM texts") == [(300, 300)]


async def test_a_write_with_more_new_texts_than_ids_in_hand_stores_each_once(postgres_uri: str) -> None:
    """A step of a run this store created is encoded in one walk, each new text and list given an id in hand
    as it is met (core/store/postgres_backend/encoding.py); when the ids in hand run out halfway, that walk is
    forgotten (the ids it gave too) and the write made the other way, which takes a block. Here the second
    step's 40 new texts and its list outnumber the 23 ids left from the first block."""
    from core import StepRecord, TraceEvent

    said = [f"turn {n}: long enough to be stored once and referred to by its id" for n in range(200)]
    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0))
        for n in range(1, 6):
            turns = said[: n * 40]
            events = [
                TraceEvent("agent.prompt", f"s{n}", {"messages": [{"role": "user", "content": t} for t in turns]}, 1.0)
            ]
            await store.record_step(StepRecord("r1", f"s{n}", "s", "step", "completed", turns[0], turns[-1]), events)
    async with await open_store(postgres_uri) as store:
        assert [(s.input, s.output) for s in await store.steps("r1")] == [
            (said[0], said[n * 40 - 1]) for n in range(1, 6)
        ]
        prompts = await store.events("r1", kind="agent.prompt")
        assert [[m["content"] for m in e.payload["messages"]] for e in prompts] == [said[: n * 40] for n in range(1, 6)]
    assert _sql(postgres_uri, "SELECT count(*), count(DISTINCT body) FROM texts WHERE length(hash) > 0") == [(200, 200)]


async def test_a_text_holding_nul_is_stored_once_and_read_back(postgres_uri: str) -> None:
    from core import StepRecord, TraceEvent

    text = "before \x00 after, and long enough to be stored once for the run: " + "é" * 40
    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0, input=text))
        event = TraceEvent("agent.reply", "s", {"text": text}, 2.5)
        await store.record_step(StepRecord("r1", "s", "s", "step", "completed", output=text), [event])
        await store.record_events("r1", [TraceEvent("note", "s", {"again": [text] * 9}, 3.0)])
        [step] = await store.steps("r1")
        assert step.output == text
        events = await store.events("r1")
        assert [e.payload for e in events] == [{"text": text}, {"again": [text] * 9}]
        assert [e.ts for e in events] == [2.5, 3.0]
        record = await store.get_run("r1")
        assert record is not None and record.input == text
    assert _sql(postgres_uri, "SELECT count(*) FROM texts WHERE body = %s", (text.encode(),)) == [(1,)]


def _flujo_backends() -> set[tuple[int, Any]]:
    """The server processes of flujo's connections: pid and start time (a reconnection is a new pair)."""
    uri = os.environ["FLUJO_TEST_POSTGRES_URI"]
    return set(_sql(uri, "SELECT pid, backend_start FROM pg_stat_activity WHERE application_name = 'flujo'"))


async def test_writes_hold_one_connection_within_the_pool_size(postgres_uri: str) -> None:
    """One-statement writes go through one held connection (issue 36: a check-out of the pool per write cost
    30-60 µs of CPU), counted within ``pool_max_size``: reads and writes at once never open more."""
    import asyncio

    from core import StepRecord
    from core.settings.config import PostgresSettings
    from core.store import PostgresStore

    async with PostgresStore(postgres_uri, settings=PostgresSettings(pool_max_size=2)) as store:
        await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0))
        opened = _flujo_backends()
        assert len(opened) == 2  # the writer's and the pool's one

        async def write(n: int) -> None:
            await store.record_step(StepRecord("r1", f"s{n}", "s", "step", "completed", output=f"out {n}"), [])

        await asyncio.gather(*(write(n) for n in range(20)), *(store.steps("r1") for _ in range(20)))
        assert _flujo_backends() == opened  # the same two: none opened again, none added
        assert [s.output for s in await store.steps("r1")] == [f"out {n}" for n in range(20)]
    async with PostgresStore(postgres_uri, settings=PostgresSettings(pool_max_size=1)) as store:
        await store.create_run(RunRecord("r2", "demo", "running", created_at=1.0))
        assert _settled_connections(1) == 1  # a size of one: the writes share the pool's only connection


async def test_a_writer_connection_lost_between_writes_is_refused_then_replaced(postgres_uri: str) -> None:
    """The server ends the writer's session between two writes: the next write is refused as unavailable
    (never lost silently), and after ``reconnect`` writes go on over a new connection."""
    from core import StepRecord, StoreUnavailable

    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0))
        uri = os.environ["FLUJO_TEST_POSTGRES_URI"]
        _sql(uri, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'flujo'")
        with pytest.raises(StoreUnavailable):
            await store.record_step(StepRecord("r1", "s1", "s", "step", "completed", output="lost?"), [])
        with pytest.raises(StoreUnavailable):  # refused at once until the store reconnects
            await store.record_step(StepRecord("r1", "s1", "s", "step", "completed", output="lost?"), [])
        await store.reconnect()
        await store.record_step(StepRecord("r1", "s1", "s", "step", "completed", output="kept"), [])
        assert [s.output for s in await store.steps("r1")] == ["kept"]


@pytest.mark.parametrize("holding_another", [False, True])
async def test_a_claim_cancelled_after_the_server_took_its_lock_leaves_no_lock_behind(
    postgres_uri: str, monkeypatch: pytest.MonkeyPatch, holding_another: bool
) -> None:
    """A worker's run task cancelled while its claim's statement is in flight: the server may have taken the
    lock, and nothing records it. It is given back (the claims connection closed, or the lock released),
    so another process can claim the run; a claim held beside it stays held."""
    import asyncio

    from core.store.postgres_backend import store as pg_store

    taken_then_cancelled = pg_store._try_lock_on

    async def cancelled_after(db: Any, key: int) -> bool:
        await taken_then_cancelled(db, key)  # the server takes the lock ...
        raise asyncio.CancelledError  # ... and the task is cancelled before it hears so

    async with await open_store(postgres_uri) as store, await open_store(postgres_uri) as other:
        for run_id in ("r1", "r2"):
            await store.create_run(RunRecord(run_id, "demo", "running", created_at=1.0))
        if holding_another:
            assert await store.claim_run("r2")
        with monkeypatch.context() as patch:
            patch.setattr(pg_store, "_try_lock_on", cancelled_after)
            with pytest.raises(asyncio.CancelledError):
                await store.claim_run("r1")
        assert await other.claim_run("r1")  # no lock left behind
        await other.release_run("r1")
        assert await store.claim_run("r1")  # and the store that was cancelled can claim it again
        if holding_another:
            assert not await other.claim_run("r2")  # the claim held beside it was kept


# --- the writer's wait: prompt replies on the loop's thread, late ones through the loop ---------------


async def _writer_waiting_on_a_lock(uri: str, write: Any) -> None:
    """Returns once a backend of flujo's waits for a lock, or the task ``write`` is done; each look lets the
    event loop run."""
    import asyncio

    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as looker:
        sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'flujo' AND wait_event_type = 'Lock'"
        while not write.done() and (await (await looker.execute(sql)).fetchone()) != (1,):
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("cancelled", [False, True])
async def test_a_write_the_server_holds_back_leaves_the_event_loop_free(postgres_uri: str, cancelled: bool) -> None:
    """The writer's connection waits for a prompt reply on the loop's thread (core/store/postgres_backend/
    writer.py), only briefly: a step whose statement waits for a row lock another session holds lets the
    loop run meanwhile (here, the task that sees it waiting and then ends that session's transaction; a
    wait that never let go would leave it to the holder's idle timeout, and the step done before it is
    seen waiting). Cancelled while it waits, the step is not stored and the next write goes through."""
    import asyncio

    from core import StepRecord

    async with await open_store(postgres_uri) as store:
        await store.create_run(RunRecord("r1", "demo", "running", created_at=1.0))
        with psycopg.connect(postgres_uri) as holder:
            holder.execute("SET idle_in_transaction_session_timeout = '10s'")
            holder.execute("SELECT FROM runs WHERE run_id = 'r1' FOR UPDATE")  # the step's foreign key waits
            step = asyncio.create_task(store.record_step(StepRecord("r1", "held", "s", "step", "completed"), []))
            await _writer_waiting_on_a_lock(postgres_uri, step)
            assert not step.done()
            if cancelled:
                step.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await step
            holder.commit()
        if not cancelled:
            await step
        await store.record_step(StepRecord("r1", "after", "s", "step", "completed"), [])
        expected = ["after"] if cancelled else ["held", "after"]
        assert [s.path for s in await store.steps("r1")] == expected
