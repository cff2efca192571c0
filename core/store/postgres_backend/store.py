"""``PostgresStore``: the ``RunStore`` on a PostgreSQL database, for runs shared between processes and
machines (docs/scale.md). psycopg 3, async, with its connection pool; installed by the ``postgres`` extra.

Invariants:

* The same behaviour as ``SqliteStore`` (one conformance suite runs against both): every write is one
  transaction committed before the method returns; ``record_step`` stores a step and its events together;
  a step recorded again at its path replaces the earlier row and sorts after the others; each long text is
  stored once per run (``core.store.rows.texts``), and each long list of an event payload
  (``core.store.rows.shared_lists``); runs are deleted only by ``prune_runs``, with everything
  that refers to them (``ON DELETE CASCADE``) and their child runs.
* Writes are serialised inside a store by an ``asyncio.Lock`` (the ids a transaction stores, its
  ``Pending``, join the text cache when it commits); reads take a pooled connection each and run side by
  side. The writes of a run's life (``create_run``, ``record_step``, ``record_events``, ``update_run``) are
  each one statement in autocommit mode, its own transaction (``_statement``): the new texts and lists it
  refers to travel in it as one JSON parameter, with ids taken from the server a block at a time, so a
  committed step is one round trip (plus a look-up of texts for a run this store did not create, and one
  per block of ids: ``core.store.postgres_backend.encoding``). The other writes are transactions of several
  statements sent in pipeline mode (``_write``).
* Claims are session advisory locks (``pg_try_advisory_lock``) on one connection outside the pool, opened
  at the first claim and closed when the store holds none: a pooled connection goes back to the pool and
  would carry the lock to whoever takes it next. The server drops the locks when that session ends, so a
  crashed process's runs can be resumed anywhere at once; TCP keepalives end the session of a client that
  vanished. The key is a 64-bit digest of the schema and the run id. ``prune_runs`` takes the same locks
  for its transaction only (``pg_try_advisory_xact_lock``): a run someone executes is never deleted.
* A lost connection, a server down or restarting is ``StoreUnavailable`` (``core.store.postgres_backend.errors``), and
  so is finding the claims connection broken while it held claims: the server dropped them with its
  session, and another process may take those runs. From then on the store refuses every write and claim
  at once, until ``reconnect``, which gives up whatever claims are left: a run in hand records nothing
  more (never a failure for the outage) and is resumed from its journal, by whoever claims it next. While
  runs are in hand, ``cancel_requests`` (a worker asks it several times a second) is read on the claims
  connection, so a lost claims session is noticed at once.
* psycopg errors become ``StoreError`` in one place, ``core.store.postgres_backend.errors``; the URI's password never
  appears in a message (``core.settings.location``).

The module is longer than most (about 800 lines) for the reason ``core.store.sqlite_backend.store`` is: the store owns
its pool, its claims connection, its locks and the text cache, and every method is a transaction over
them; the schema, the error translation, the encoding of values, the reading of records, the queries of
threads and the choice of runs to prune live in their own modules.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from types import TracebackType
from typing import Any, Literal, LiteralString

import psycopg
from psycopg_pool import AsyncConnectionPool

from core.model import codec
from core.model.errors import StoreError, StoreUnavailable
from core.model.records import (
    PAGE_SIZE,
    PruneResult,
    RowMark,
    RunRecord,
    RunStatus,
    RunUpdate,
    StepRecord,
    ThreadSummary,
    ThreadTurn,
    TraceEvent,
)
from core.settings.config import PostgresSettings
from core.settings.location import describe, secrets
from core.store.postgres_backend import encoding as pg_encoding
from core.store.postgres_backend.errors import store_error
from core.store.postgres_backend.schema import migrate
from core.store.postgres_backend.writer import WriterConnection
from core.store.rows import pruning, queue_rows, row_reads, thread_rows
from core.store.rows.claims import process_label, thread_key
from core.store.rows.lookup import MAX_CANDIDATES, NO_RUN_HINT, pick_run_id
from core.store.rows.shared_lists import Pending, ReadLists
from core.store.rows.text_cache import TextCache
from core.text.turns import ConversationTurn

Connection = psycopg.AsyncConnection[tuple[Any, ...]]


def _pg(sql: str) -> LiteralString:
    """A query of ``core.store.rows.thread_rows``, ``queue_rows`` or ``row_reads`` (SQLite's) for PostgreSQL:
    ``%s`` parameters, and ``seq`` for SQLite's ``rowid`` (the order of creation among runs created in the
    same instant). Those queries hold no ``?`` or ``rowid`` other than these."""
    return sql.replace("?", "%s").replace("rowid", "seq").replace(", r.thread\n", ', r.thread COLLATE "C"\n')


_RUN = _pg(row_reads.RUN)
_STEPS = _pg(row_reads.STEPS)
_EVENTS = _pg(row_reads.EVENTS)
_EVENTS_OF_KIND = _pg(row_reads.EVENTS_OF_KIND)
# SQLite's ``+run_id`` (which index to use) is not PostgreSQL's: it reads a page by the primary key anyway.
_WHERE_STEPS_ARE = _pg(row_reads.STEP_MARKS).replace("+run_id", "run_id")
_WHERE_EVENTS_ARE = _pg(row_reads.EVENT_MARKS)
_TURNS = _pg(thread_rows.TURNS)
_TURNS_BEFORE = _pg(thread_rows.TURNS_BEFORE)
_ONE_SUMMARY = _pg(thread_rows.ONE_SUMMARY)
_ALL_SUMMARIES = _pg(thread_rows.ALL_SUMMARIES)
_RUN_THREAD = _pg(thread_rows.RUN_THREAD)
_THREAD_TAKEN = _pg(thread_rows.THREAD_TAKEN)
_LATEST_OF_SOURCE = _pg(row_reads.LATEST_OF_SOURCE)
_DELETE_RUN_TURNS = _pg(thread_rows.DELETE_RUN_TURNS)
_INSERT_TURN = _pg(thread_rows.INSERT_TURN)
_DELETE_THREAD_TURNS = _pg(thread_rows.DELETE_THREAD_TURNS)
_LEAVE_THREAD = _pg(thread_rows.LEAVE_THREAD)
_Q_OFFERED = _pg(queue_rows.OFFERED) + " FOR UPDATE OF q SKIP LOCKED"
_Q_TAKEN = _pg(queue_rows.TAKEN) + " FOR UPDATE OF q SKIP LOCKED"
_Q_WAITING = _pg(queue_rows.WAITING)
_Q_INSERT = _pg(queue_rows.INSERT)
_Q_MARK_TAKEN = _pg(queue_rows.MARK_TAKEN)
# The session advisory locks held on bigint keys in this database (objsubid 1: a one-bigint key).
_ADVISORY_LOCKS: LiteralString = (
    "SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1"
    " AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
_Q_MARK_RUNNING = _pg(queue_rows.MARK_RUNNING)
_Q_REQUEUE = _pg(queue_rows.REQUEUE)
_Q_REMOVE = _pg(queue_rows.REMOVE)
_Q_ONE = _pg(queue_rows.ONE) + " FOR UPDATE"
_Q_ASK_CANCEL = _pg(queue_rows.ASK_CANCEL)
_Q_MARK_CANCELLED = _pg(queue_rows.MARK_CANCELLED)
_RUN_MARKS = ", ".join("%s" for _ in codec.RUN_COLUMNS.split(","))
_STEP_MARKS = ", ".join("%s" for _ in codec.STEP_COLUMNS.split(","))
# The writes of a run's life, each one statement (``_statement``): its first parameter a JSON document
# (``pg_encoding.document``) of the run id, the rows of the new texts it refers to (``pg_encoding.WITH_TEXTS``
# stores them) and its events, then the columns of its row. (A row read from the document by
# ``json_populate_record`` made the statement slower on the server, and so the wait for it.)
_WITH_TEXTS = pg_encoding.WITH_TEXTS
_INSERT_EVENTS = (
    "INSERT INTO events (run_id, path, kind, ts, payload) SELECT w.d->>'run', e->>0, e->>1, (e->>2)::float8, e->>3"
    " FROM w, json_array_elements(w.d->'events') WITH ORDINALITY AS x(e, n) ORDER BY n"
)
_INSERT_RUN = f"{_WITH_TEXTS} INSERT INTO runs ({codec.RUN_COLUMNS}) VALUES ({_RUN_MARKS}) RETURNING run_id"
# A step recorded again at its path replaces the row, with a new seq: it sorts after the others.
_STEP_SET = ", ".join(f"{c} = EXCLUDED.{c}" for c in codec.STEP_COLUMNS.split(", ") if c not in ("run_id", "path"))
_RECORD_STEP = (
    f"{_WITH_TEXTS}, step AS (INSERT INTO steps ({codec.STEP_COLUMNS}) VALUES ({_STEP_MARKS})"
    f" ON CONFLICT (run_id, path) DO UPDATE SET {_STEP_SET}, seq = DEFAULT) {_INSERT_EVENTS}"
)
_RECORD_EVENTS = f"{_WITH_TEXTS} {_INSERT_EVENTS}"
_SET_RUN = _pg(f"UPDATE runs SET {codec.UPDATE_RUN_SET.format('?')} WHERE run_id = ?")
# The texts of an unknown run are not inserted (nor anything else): "no run to update", not a foreign key's error.
_UPDATE_RUN = (
    f"WITH w AS (SELECT %s::json AS d), new_texts AS ({pg_encoding.INSERT_TEXTS}"
    " WHERE EXISTS (SELECT FROM runs WHERE run_id = w.d->>'run')),"
    f" updated AS ({_SET_RUN} RETURNING run_id),"
    " left_queue AS (DELETE FROM queue WHERE %s AND run_id IN (SELECT run_id FROM updated))"
    " SELECT run_id FROM updated"
)


class PostgresStore:
    """A ``RunStore`` in the PostgreSQL database ``uri`` names (``postgresql://user:pass@host:port/db``).

    Open it with ``await store.open()`` or ``async with PostgresStore(uri) as store:``; ``open_store``
    does the former from a state URI. ``create`` False never creates the schema: a database without
    flujo's tables is a ``StoreError`` (looking never creates a store). The methods behave as
    ``SqliteStore``'s (see there); ``prune_runs`` reports no sizes (the server manages its files).
    """

    def __init__(self, uri: str, *, create: bool = True, settings: PostgresSettings | None = None) -> None:
        self.uri = uri
        self.label = describe(uri)
        self.create = create
        self.settings = settings or PostgresSettings()
        self._secrets = secrets(uri)  # the password in each form a driver's message may quote it
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._schema = ""
        self._write_lock = asyncio.Lock()
        self._claim_lock = asyncio.Lock()
        self._claims: Connection | None = None  # the connection holding this store's claims
        self._claimed: set[str] = set()
        self._run_threads: dict[str, str] = {}  # taken run → the thread claimed with it (take_queued)
        self._cache = TextCache()  # the ids of texts and lists this store committed
        self._read_lists = ReadLists()  # the lists it read last (pages of a run: RunStore.event_page)
        self._pending = Pending()  # what the write transaction in progress stored
        self._ids = pg_encoding.Ids()  # ids for new texts rows, taken from the server a block at a time
        self._unavailable: StoreUnavailable | None = None  # set when the server was lost: writes refused
        # The connection of one-statement writes (``_statement``), held between them: checking a connection
        # out of the pool and back cost a write 30-60 µs of CPU. One of ``pool_max_size``'s connections (the
        # pool holds one fewer); None until the store opens, after it broke, and when that size is 1.
        self._writer: Connection | None = None

    def _connect_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "autocommit": True,
            "application_name": "flujo",
            "connect_timeout": self.settings.connect_timeout_s,
            "keepalives": 1,
            "keepalives_idle": self.settings.keepalive_idle_s,
            "keepalives_interval": 10,
            "keepalives_count": 3,
        }
        if self.settings.sslmode is not None:
            options["sslmode"] = self.settings.sslmode
        return options

    async def _connect(self) -> Connection:
        return await psycopg.AsyncConnection.connect(self.uri, **self._connect_options())

    async def _connect_writer(self) -> Connection:
        """The writer's connection, which waits for a prompt reply on the loop's thread (``WriterConnection``)."""
        return await WriterConnection.connect(self.uri, **self._connect_options())

    async def open(self) -> PostgresStore:
        """Connect, apply pending migrations (or refuse, see ``create``) and open the pool."""
        if self._pool is not None:
            return self
        with self._translated("open the run store"):
            first = await self._connect()
            try:
                await migrate(first, label=self.label, create=self.create)
                row = await (await first.execute("SELECT current_schema()")).fetchone()
                self._schema = str(row[0]) if row else ""
            finally:
                await first.close()
            pooled = max(1, self.settings.pool_max_size - self._holds_writer)
            pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
                self.uri,
                min_size=min(self.settings.pool_min_size, pooled),
                max_size=pooled,
                kwargs=self._connect_options(),
                open=False,
                timeout=float(self.settings.connect_timeout_s),
                name="flujo",
            )
            await pool.open(wait=True, timeout=float(self.settings.connect_timeout_s))
            if self._holds_writer:
                try:
                    self._writer = await self._connect_writer()
                except BaseException:
                    await pool.close()
                    raise
        self._pool = pool
        return self

    @property
    def _holds_writer(self) -> bool:
        return self.settings.pool_max_size > 1

    async def close(self) -> None:
        """Release this store's claims and close its connections; closing twice is harmless."""
        for run_id in list(self._claimed):
            await self.release_run(run_id)
        async with self._claim_lock:
            await self._close_claims()
        pool, self._pool = self._pool, None
        if pool is not None:
            async with self._write_lock:
                await pool.close()
                await self._drop_writer()

    async def reconnect(self) -> None:
        """Use the store again after ``StoreUnavailable``: give up every claim this store held (closing their
        connection; the server may have dropped them already), reach the server (``StoreUnavailable`` while it
        cannot be reached), and let the pool replace the connections that broke."""
        if self._unavailable is None:
            return
        async with self._claim_lock:
            claims, self._claims = self._claims, None
            self._claimed.clear()
            self._run_threads.clear()
            if claims is not None:
                await claims.close()
        async with self._write_lock:
            await self._drop_writer()  # it may have broken unnoticed: the next write connects anew
        with self._translated("reach the run store"):
            probe = await self._connect()
            await probe.close()
            await self._pool_or_error().check()
        self._unavailable = None

    async def __aenter__(self) -> PostgresStore:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def create_run(self, run: RunRecord) -> None:
        async with self._statement(f"create run {run.run_id}") as db:
            await self._insert_run(db, run)

    async def _insert_run(self, db: Connection, run: RunRecord) -> None:
        """Insert ``run`` with its texts, one statement (alone, or in the caller's transaction)."""
        encoded = await self._encode(db, run.run_id, [run.input, run.output], new_run=True)
        input, output = encoded.values
        try:
            row = codec.run_row(run, input, output)
            await (await db.execute(_INSERT_RUN, (pg_encoding.document(run.run_id, encoded), *row))).fetchone()
        except psycopg.errors.UniqueViolation as exc:
            if exc.diag.constraint_name != "runs_pkey":
                raise
            raise StoreError(f"run {run.run_id} already exists", hint="every run needs a new id") from None
        self._pending.created_runs.append(run.run_id)  # every text of it is this store's (TextCache.complete)

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        """Store ``step`` (replacing any earlier step at its path) and its events: one statement."""
        async with self._statement(f"record step {step.path!r} of run {step.run_id}") as db:
            values = [step.input, step.output, *_payloads(events)]
            encoded = await self._encode(db, step.run_id, values, payloads_from=2)
            input, output, *payloads = encoded.values
            document = pg_encoding.document(step.run_id, encoded, events=_event_rows(events, payloads))
            await db.execute(_RECORD_STEP, (document, *codec.step_row(step, input, output)))

    async def record_events(self, run_id: str, events: Sequence[TraceEvent]) -> None:
        if not events:
            return
        async with self._statement(f"record events of run {run_id}") as db:
            encoded = await self._encode(db, run_id, _payloads(events), payloads_from=0)
            rows = _event_rows(events, encoded.values)
            await db.execute(_RECORD_EVENTS, (pg_encoding.document(run_id, encoded, events=rows),))

    async def update_run(self, run_id: str, update: RunUpdate) -> None:
        async with self._statement(f"update run {run_id}") as db:
            encoded = await self._encode(db, run_id, [update.output])
            values = codec.update_row(update, encoded.values[0])
            # Settled: out of the queue in the same statement (core.store.rows.queue_rows).
            leaves = update.status in queue_rows.LEAVES
            cursor = await db.execute(_UPDATE_RUN, (pg_encoding.document(run_id, encoded), *values, run_id, leaves))
            if await cursor.fetchone() is None:
                raise StoreError(f"no run {run_id} to update", hint="create the run first")

    async def claim_run(self, run_id: str) -> bool:
        """Claim ``run_id`` with a session advisory lock on this store's claims connection and record this
        process as the run's owner; False when a live session (this store's included) holds it."""
        self._pool_or_error()
        if not await self._lock_run(run_id):
            return False
        try:
            async with self._write(f"claim run {run_id}") as db:
                cursor = await db.execute(
                    "UPDATE runs SET owner = %s WHERE run_id = %s RETURNING run_id", (process_label(), run_id)
                )
                if await cursor.fetchone() is None:
                    raise StoreError(f"cannot claim run {run_id}: no such run", hint=NO_RUN_HINT)
        except BaseException:
            await self.release_run(run_id)
            raise
        return True

    async def _lock_run(self, run_id: str) -> bool:
        """Take the session advisory lock of ``run_id`` on the claims connection (the claim itself)."""
        async with self._claim_lock:
            self._usable(f"claim run {run_id}")
            if run_id in self._claimed:
                return False
            with self._translated(f"claim run {run_id}"):
                if self._claims is not None and self._claims.closed and self._claimed:
                    raise self._claims_lost(f"claim run {run_id}")
                taken = await self._try_lock(self._key(run_id))
            if not taken:
                return False
            self._claimed.add(run_id)
            return True

    async def _try_lock(self, key: int) -> bool:
        """``pg_try_advisory_lock(key)`` on the claims connection, which stays open between runs (opening it
        cost each run 5-7 ms of CPU, most of it the password's SCRAM exchange). One that broke while it held
        no claim (the server restarted, a network device dropped it while idle) is replaced, once: nothing
        was lost with it."""
        if self._claims is not None and not self._claims.closed and not self._claimed:
            try:
                return await self._lock_on_claims(key)
            except psycopg.OperationalError:
                await self._close_claims()
        if self._claims is None or self._claims.closed:
            self._claims = await self._connect()
        return await self._lock_on_claims(key)

    async def _lock_on_claims(self, key: int) -> bool:
        """The lock statement itself. Interrupted (cancelled mid-statement, or failed), the server may have
        taken the lock all the same, and no claim records it: while this store holds no other claim its
        connection is closed, which surely gives that lock back; otherwise it is given back by hand."""
        assert self._claims is not None
        try:
            return await _try_lock_on(self._claims, key)
        except BaseException:
            await asyncio.shield(self._give_back_stray(key))
            raise

    async def _give_back_stray(self, key: int) -> None:
        if not self._claimed:
            await self._close_claims()
        elif self._claims is not None and _idle(self._claims):
            with suppress(psycopg.Error, OSError):
                await self._claims.execute("SELECT pg_advisory_unlock(%s)", (key,))

    async def queue_runs(self, runs: Sequence[RunRecord]) -> None:
        """Store ``runs`` (status ``queued``) and queue them, in this order, in one transaction."""
        async with self._write(f"queue {len(runs)} run(s)") as db:
            for run in runs:
                await self._insert_run(db, run)
                await db.execute(_Q_INSERT, (run.run_id, run.thread))

    async def take_queued(self) -> queue_rows.Taken | None:
        """As ``SqliteStore.take_queued``: the candidates are locked ``FOR UPDATE SKIP LOCKED``, so workers
        on any machine pass over each other's, and each taken run is claimed by its advisory lock. The claims
        of the runs it found cancelled, and of the one it took when the transaction fails, are given back."""
        took: list[str] = []  # the runs whose claim it took, in order: the last is the one taken, if any
        found: queue_rows.Taken | None = None
        try:
            found = await self._take(took)
        except BaseException:
            for run_id in took:
                await self.release_run(run_id)
            raise
        for run_id in took:
            if found is None or run_id != found.record.run_id:
                await self.release_run(run_id)
        return found

    async def _take(self, took: list[str]) -> queue_rows.Taken | None:
        """The transaction of ``take_queued``: what taking the run it took gives the worker. Each run whose
        claim it takes goes to ``took``: the one taken, and those it found cancelled and removed."""
        async with self._write("take a queued run") as db:
            offered = await (await db.execute(_Q_OFFERED, (queue_rows.BATCH,))).fetchall()
            for row in offered:
                run_id = str(row[0])
                if await self._lock_run(run_id):
                    took.append(run_id)
                    if await self._lock_thread(run_id, row[1]):
                        return await self._taken_in(db, await _mark_taken(db, run_id))
            for row in await (await db.execute(_Q_TAKEN, (500,))).fetchall():
                run_id = str(row[0])
                if not await self._lock_run(run_id):
                    continue  # a live worker executes it
                took.append(run_id)
                if not row[1]:
                    if await self._lock_thread(run_id, row[2]):
                        return await self._taken_in(db, await _mark_taken(db, run_id))
                    continue
                await db.execute(_Q_MARK_CANCELLED, (time.time(), run_id))
                await db.execute(_Q_REMOVE, (run_id,))
        return None

    async def _taken_in(self, db: Connection, row: tuple[Any, ...]) -> queue_rows.Taken:
        """What taking the run of ``row`` gives the worker (``queue_rows.read_taken``), read in the taking
        transaction on ``db`` under the run's claim (no other process writes the run meanwhile): its texts and,
        for a run taken again, its journal, whose queries go out together (one round trip, and one for their
        texts)."""

        async def queries(wanted: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Any]]:
            cursors = [await db.execute(_pg(sql), params) for sql, params in wanted]
            return [list(await cursor.fetchall()) for cursor in cursors]

        async def fetch(ids: Sequence[int]) -> dict[int, str]:
            return await self._texts(ids, db)

        return await queue_rows.read_taken(row, process_label(), queries, fetch)

    async def _lock_thread(self, run_id: str, thread: str | None) -> bool:
        """As ``SqliteStore._take_thread``: the thread's lock with the run's, or the run's given back."""
        if thread is None:
            return True
        if await self._lock_run(thread_key(thread)):
            self._run_threads[run_id] = thread
            return True
        await self.release_run(run_id)
        return False

    async def claim_thread(self, name: str) -> bool:
        """As ``SqliteStore.claim_thread``: a session advisory lock on the claims connection."""
        self._pool_or_error()
        return await self._lock_run(thread_key(name))

    async def release_thread(self, name: str) -> None:
        await self.release_run(thread_key(name))

    async def leave_queued(self, run_id: str, *, requeue: bool = False) -> None:
        async with self._write(f"update the queue entry of run {run_id}") as db:
            await db.execute(_Q_REQUEUE if requeue else _Q_REMOVE, (run_id,))

    async def cancel_queued(self, run_id: str) -> queue_rows.Cancelled:
        held = False
        try:
            async with self._write(f"cancel run {run_id}") as db:
                if not await (await db.execute(_Q_ONE, (run_id,))).fetchall():
                    return "not_queued"
                held = await self._lock_run(run_id)
                if not held:
                    await db.execute(_Q_ASK_CANCEL, (run_id,))
                    return "requested"
                await db.execute(_Q_MARK_CANCELLED, (time.time(), run_id))
                await db.execute(_Q_REMOVE, (run_id,))
        finally:
            if held:
                await self.release_run(run_id)
        return "cancelled"

    async def cancel_requests(self, run_ids: Sequence[str]) -> set[str]:
        """Those of ``run_ids`` that ``flujo cancel`` asked to stop; read on the claims connection while this
        store holds claims, so that its loss is noticed (``StoreUnavailable``) as soon as it happens."""
        if not run_ids:
            return set()
        sql = "SELECT run_id FROM queue WHERE cancel = 1 AND run_id = ANY(%s)"
        async with self._claim_lock:
            claims = self._claims
            if claims is not None and self._claimed:
                self._usable("read cancel requests")
                if claims.closed:
                    raise self._claims_lost("read cancel requests")
                try:
                    rows = await (await claims.execute(sql, (list(run_ids),))).fetchall()
                except psycopg.Error:
                    raise self._claims_lost("read cancel requests") from None
                return {str(row[0]) for row in rows}
        return {str(row[0]) for row in await self._read("read cancel requests", sql, (list(run_ids),))}

    async def queue_waiting(self) -> int:
        return int((await self._read("count queued runs", _Q_WAITING, ()))[0][0])

    async def release_run(self, run_id: str) -> None:
        thread = self._run_threads.pop(run_id, None)
        if thread is not None:
            await self.release_run(thread_key(thread))
        async with self._claim_lock:
            if run_id not in self._claimed:
                return
            self._claimed.discard(run_id)
            claims = self._claims
            # Unavailable: the claims may be gone already, and any left go when their connection closes (now,
            # if this was the last, or at ``reconnect``); nothing is sent to a server that may not answer.
            if claims is not None and not claims.closed and self._unavailable is None:
                try:
                    await claims.execute("SELECT pg_advisory_unlock(%s)", (self._key(run_id),))
                except psycopg.Error:
                    await claims.close()  # the session is gone, and with it the server dropped the lock
                    if self._claimed:  # and every other claim it held: those runs are no longer this store's
                        self._claims_lost(f"release run {run_id}")
                except BaseException:  # cancelled mid-statement: the lock may still be held, and is not recorded
                    if not self._claimed:
                        await asyncio.shield(self._close_claims())
                    raise

    async def claimed_runs(self, run_ids: Sequence[str]) -> set[str]:
        """The runs of ``run_ids`` this store claims, and those whose advisory lock another session holds
        (``pg_locks``, read without locking: a session that ended, its process killed, holds none)."""
        mine = {run_id for run_id in run_ids if run_id in self._claimed}
        halves = {_halves(self._key(run_id)): run_id for run_id in run_ids if run_id not in mine}
        if not halves:
            return mine
        rows = await self._read("read which runs are being executed", _ADVISORY_LOCKS, ())
        return mine | {halves[key] for key in ((int(row[0]), int(row[1])) for row in rows) if key in halves}

    async def _close_claims(self) -> None:
        claims, self._claims = self._claims, None
        if claims is not None:
            with suppress(psycopg.Error, OSError):
                await claims.close()

    def _key(self, run_id: str) -> int:
        """The advisory lock key of ``run_id`` in this store's schema: 64 bits of a BLAKE2b digest (two ids
        share one only if the digests collide; the worst outcome is a refused resume)."""
        digest = hashlib.blake2b(f"{self._schema}\0{run_id}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big", signed=True)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run ``run_id`` names or is a unique prefix of; StoreError when several runs match."""
        if not run_id:
            return None
        pattern = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = await self._read(
            f"look up run {run_id}",
            'SELECT run_id FROM runs WHERE run_id LIKE %s ORDER BY run_id COLLATE "C" LIMIT %s',
            (pattern, MAX_CANDIDATES + 1),
        )
        found = pick_run_id(run_id, [str(r[0]) for r in rows])
        if found is None:
            return None
        rows = await self._read(f"read run {found}", _RUN, (found,))
        return (await row_reads.runs(rows, self._texts))[0] if rows else None

    async def list_runs(
        self,
        *,
        limit: int = 20,
        status: RunStatus | None = None,
        thread: str | None = None,
        parent_run_id: str | None = None,
        created_after: float | None = None,
        offset: int = 0,
        values: bool = True,
    ) -> list[RunRecord]:
        filters = {"status": status, "thread": thread, "parent_run_id": parent_run_id}
        conditions = [f"{column} = %s" for column, value in filters.items() if value is not None]
        params: tuple[Any, ...] = tuple(value for value in filters.values() if value is not None)
        if created_after is not None:
            conditions.append("created_at >= %s")
            params = (*params, created_after)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        columns = codec.RUN_COLUMNS if values else codec.RUN_COLUMNS_WITHOUT_VALUES
        rows = await self._read(
            "list runs",
            f"SELECT {columns} FROM runs {where} ORDER BY created_at DESC, seq DESC LIMIT %s OFFSET %s",
            (*params, max(limit, 0), max(offset, 0)),
        )
        return await row_reads.runs(rows, self._texts)

    async def latest_run(self, *, source: str) -> RunRecord | None:
        rows = await self._read(f"look up the latest run of {source}", _LATEST_OF_SOURCE, (source,))
        return (await row_reads.runs(rows, self._texts))[0] if rows else None

    async def step_counts(self, run_ids: Sequence[str]) -> dict[str, int]:
        counts = dict.fromkeys(run_ids, 0)
        if counts:
            rows = await self._read(
                "count steps",
                "SELECT run_id, COUNT(*) FROM steps WHERE run_id = ANY(%s) GROUP BY run_id",
                (list(counts),),
            )
            counts.update((str(row[0]), int(row[1])) for row in rows)
        return counts

    async def prune_runs(
        self, *, created_before: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> PruneResult:
        """Delete the runs ``core.store.rows.pruning`` chooses, each under its claim for this transaction only:
        a run a live session executes is kept (``live``). No sizes: the server manages its files."""
        sql = "SELECT run_id, parent_run_id, created_at FROM runs ORDER BY created_at DESC, seq DESC"
        stored = [pruning.StoredRun(str(r[0]), r[1], float(r[2])) for r in await self._read("list runs", sql, ())]
        doomed = pruning.choose(stored, created_before=created_before, keep=keep)
        held: list[pruning.Doomed] = []
        if doomed:
            async with self._write("prune runs") as db:
                for run in doomed:
                    if run.run_id in self._claimed:
                        continue
                    row = await (
                        await db.execute("SELECT pg_try_advisory_xact_lock(%s)", (self._key(run.run_id),))
                    ).fetchone()
                    if row and row[0]:
                        held.append(run)
                gone = [run_id for run in held for run_id in (run.run_id, *run.descendants)]
                if not dry_run and gone:
                    await db.execute("DELETE FROM runs WHERE run_id = ANY(%s)", (gone,))
                    self._cache.clear()
                    self._read_lists.clear()
        deleted = {run.run_id for run in held}
        return PruneResult(
            deleted=tuple(run.run_id for run in held),
            children=tuple(run_id for run in held for run_id in run.descendants),
            live=tuple(run.run_id for run in doomed if run.run_id not in deleted),
        )

    async def steps(self, run_id: str) -> list[StepRecord]:
        """The steps of run ``run_id`` in the order they were recorded."""
        rows = await self._read(f"read the steps of run {run_id}", _STEPS, (run_id,))
        return await row_reads.steps(rows, self._texts)

    async def events(self, run_id: str, *, kind: str | None = None) -> list[TraceEvent]:
        """The trace events of run ``run_id`` (of ``kind`` only, when given) in the order they were recorded."""
        if kind is None:
            rows = await self._read(f"read the events of run {run_id}", _EVENTS, (run_id,))
        else:
            coded = (run_id, codec.kind_code(kind), kind)
            rows = await self._read(f"read the events of run {run_id}", _EVENTS_OF_KIND, coded)
        return await row_reads.events(rows, self._texts)

    async def step_page(
        self, run_id: str, *, after: int = 0, until: int | None = None, under: str | None = None, limit: int = PAGE_SIZE
    ) -> list[tuple[int, StepRecord]]:
        """Up to ``limit`` steps of run ``run_id`` numbered after ``after`` (see ``RunStore.step_page``)."""
        sql, params = row_reads.page_query(row_reads.STEP_PAGE, run_id, after, until, under, limit)
        rows = await self._read(f"read the steps of run {run_id}", _pg(sql).replace("+run_id", "run_id"), params)
        return list(zip((int(row[-1]) for row in rows), await row_reads.steps(rows, self._texts), strict=True))

    async def event_page(
        self, run_id: str, *, after: int = 0, until: int | None = None, under: str | None = None, limit: int = PAGE_SIZE
    ) -> list[tuple[int, TraceEvent]]:
        """Up to ``limit`` events of run ``run_id`` numbered after ``after`` (see ``RunStore.event_page``)."""
        sql, params = row_reads.page_query(row_reads.EVENT_PAGE, run_id, after, until, under, limit)
        rows = await self._read(f"read the events of run {run_id}", _pg(sql), params)
        found = await row_reads.events(rows, self._texts, recent=self._read_lists)
        return list(zip((int(row[-1]) for row in rows), found, strict=True))

    async def marks(
        self,
        run_id: str,
        of: Literal["steps", "events"],
        *,
        after: int = 0,
        until: int | None = None,
        limit: int = PAGE_SIZE,
    ) -> list[RowMark]:
        """Where ``limit`` steps (or events) of run ``run_id`` numbered after ``after`` are."""
        sql = _WHERE_STEPS_ARE if of == "steps" else _WHERE_EVENTS_ARE
        bounds = (run_id, after, row_reads.LAST_SEQ if until is None else until, limit)
        return row_reads.marks(await self._read(f"read the {of} of run {run_id}", sql, bounds))

    async def record_thread_turns(self, run_id: str, turns: Sequence[ConversationTurn]) -> None:
        """Replace the turns run ``run_id`` added to its thread; nothing for a run in no thread."""
        async with self._write(f"record the thread turns of run {run_id}") as db:
            found = await (await db.execute(_RUN_THREAD, (run_id,))).fetchall()
            if not found:
                raise StoreError(f"cannot record the thread turns of run {run_id}: no such run", hint=NO_RUN_HINT)
            if found[0][0] is None:
                return
            await db.execute(_DELETE_RUN_TURNS, (run_id,))
            await self._insert_turns(db, run_id, turns)

    async def _insert_turns(self, db: Connection, run_id: str, turns: Sequence[ConversationTurn]) -> None:
        encoded = await self._encode(db, run_id, [turn.content for turn in turns] + [turn.shown for turn in turns])
        if encoded.texts:
            await db.execute(f"{_WITH_TEXTS} SELECT", (pg_encoding.document(run_id, encoded),))
        contents, shown = encoded.values[: len(turns)], encoded.values[len(turns) :]
        if turns:
            async with db.cursor() as cursor:
                await cursor.executemany(
                    _INSERT_TURN,
                    [
                        (run_id, index, turn.role, content, turn.tokens, text)
                        for index, (turn, content, text) in enumerate(zip(turns, contents, shown, strict=True))
                    ],
                )

    async def start_thread(self, run: RunRecord, turns: Sequence[ConversationTurn]) -> bool:
        """As ``SqliteStore.start_thread``. Two transactions starting one thread at once take turns on a
        transaction advisory lock of its name (not the thread's claim, which the caller may hold)."""
        assert run.thread is not None
        async with self._write(f"start thread {run.thread!r}") as db:
            await db.execute("SELECT pg_advisory_xact_lock(%s)", (self._key(f"start {thread_key(run.thread)}"),))
            if await (await db.execute(_THREAD_TAKEN, (run.thread,))).fetchall():
                return False
            await self._insert_run(db, run)
            await self._insert_turns(db, run.run_id, turns)
            return True

    async def thread_turns(self, thread: str, *, before_run: str | None = None) -> list[ThreadTurn]:
        if before_run is None:
            rows = await self._read(f"read thread {thread!r}", _TURNS, (thread,))
        else:
            rows = await self._read(f"read thread {thread!r}", _TURNS_BEFORE, (thread, before_run))
        return await row_reads.turns(rows, self._texts)

    async def get_thread(self, thread: str) -> ThreadSummary | None:
        rows = await self._read(f"read thread {thread!r}", _ONE_SUMMARY, (thread,))
        return thread_rows.summary_from_row(rows[0]) if rows else None

    async def list_threads(self) -> list[ThreadSummary]:
        rows = await self._read("list threads", _ALL_SUMMARIES, ())
        return [thread_rows.summary_from_row(row) for row in rows]

    async def delete_thread(self, thread: str) -> ThreadSummary | None:
        async with self._write(f"delete thread {thread!r}") as db:
            rows = await (await db.execute(_ONE_SUMMARY, (thread,))).fetchall()
            if not rows:
                return None
            await db.execute(_DELETE_THREAD_TURNS, (thread,))
            await db.execute(_LEAVE_THREAD, (thread,))
            return thread_rows.summary_from_row(rows[0])

    async def _texts(self, ids: Sequence[int], db: Connection | None = None) -> dict[int, str]:
        """The bodies of the texts ``ids`` refer to (read on ``db``, in its transaction, when given); StoreError
        when one is missing."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        sql: LiteralString = "SELECT id, body FROM texts WHERE id = ANY(%s)"
        if db is None:
            rows = await self._read("read stored texts", sql, (wanted,))
        else:
            rows = await (await db.execute(sql, (wanted,))).fetchall()
        found = {int(row[0]): bytes(row[1]).decode("utf-8") for row in rows}
        if len(found) != len(wanted):
            raise StoreError(
                f"{len(wanted) - len(found)} stored text(s) are missing from {self.label}",
                hint="the database may be damaged; restore a backup",
            )
        return found

    async def _encode(
        self,
        db: Connection,
        run_id: str,
        values: Sequence[Any],
        *,
        payloads_from: int | None = None,
        new_run: bool = False,
    ) -> pg_encoding.Encoded:
        """``values`` as stored, and their new texts (``core.store.postgres_backend.encoding``), for the write
        in progress; ``new_run``: of a run this write creates (it has no texts to look up)."""
        return await pg_encoding.encode(
            db, self._cache, self._pending, self._ids, run_id, values, payloads_from=payloads_from, new_run=new_run
        )

    def _pool_or_error(self) -> AsyncConnectionPool[Connection]:
        if self._pool is None:
            raise StoreError(f"the run store {self.label} is not open", hint="open it with open_store() first")
        return self._pool

    @contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            error = store_error(self.label, action, exc, secrets=self._secrets)
            if isinstance(error, StoreUnavailable):
                self._unavailable = error
            raise error from None

    def _claims_lost(self, action: str) -> StoreUnavailable:
        """The claims connection broke while it held claims: the server ended its session and dropped them."""
        self._unavailable = StoreUnavailable(
            f"cannot {action}: the connection holding this process's claims to {self.label} was lost",
            hint="its runs are resumed from their last finished step by whoever claims them next",
        )
        return self._unavailable

    def _usable(self, action: str) -> None:
        """StoreUnavailable at once while the store is unavailable (until ``reconnect``)."""
        if self._unavailable is not None:
            raise StoreUnavailable(
                f"cannot {action}: the run store is unavailable since an earlier call ({self._unavailable.message})",
                hint=self._unavailable.hint,
            )

    @asynccontextmanager
    async def _write(self, action: str) -> AsyncIterator[Connection]:
        pool = self._pool_or_error()
        async with self._write_lock:
            self._usable(action)
            self._pending = Pending()
            with self._translated(action):
                async with pool.connection() as db, db.pipeline(), db.transaction():
                    yield db
            # Committed: the texts this transaction stored can now be referred to without a look-up.
            self._cache.commit(self._pending)
            self._pending = Pending()

    @asynccontextmanager
    async def _statement(self, action: str) -> AsyncIterator[Connection]:
        """A write that is one statement in autocommit mode, its own transaction, on the writer's connection
        (a pooled one when the store holds none): the body may read first (``_encode``: texts looked up, a
        block of ids) and ends with that statement. No pipeline: a statement that waits for its reply costs a
        round trip either way, and psycopg's pipeline spends CPU polling while it waits. The writer's
        connection is a ``WriterConnection``: a prompt reply is waited for on the loop's thread."""
        pool = self._pool_or_error()
        async with self._write_lock:
            self._usable(action)
            self._pending = Pending()
            with self._translated(action):
                if not self._holds_writer:
                    async with pool.connection() as db:
                        yield db
                else:
                    if self._writer is None:
                        self._writer = await self._connect_writer()
                    try:
                        yield self._writer
                    finally:
                        if not _idle(self._writer):  # broken, or left mid-statement (cancelled): as the pool would
                            await self._drop_writer()
            # Committed: the texts this statement stored can now be referred to without a look-up.
            self._cache.commit(self._pending)
            self._pending = Pending()

    async def _drop_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            with suppress(psycopg.Error, OSError):
                await writer.close()

    async def _read(self, action: str, sql: LiteralString, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        pool = self._pool_or_error()
        with self._translated(action):
            async with pool.connection() as db:
                return await (await db.execute(sql, params)).fetchall()


async def _try_lock_on(db: Connection, key: int) -> bool:
    row = await (await db.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone()
    return bool(row and row[0])


def _idle(db: Connection | None) -> bool:
    """Whether ``db`` can take the next statement: open, not broken, outside any transaction or statement."""
    return db is not None and not db.broken and db.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def _payloads(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    return [dict(event.payload) for event in events]


def _event_rows(
    events: Sequence[TraceEvent], payloads: Sequence[str | None]
) -> list[tuple[str, str, float, str | None]]:
    """The rows of ``_INSERT_EVENTS``: path, kind, time and payload (stored) of each event, in order."""
    return [(e.path, e.kind, e.ts, p) for e, p in zip(events, payloads, strict=True)]


def _halves(key: int) -> tuple[int, int]:
    """How ``pg_locks`` shows the advisory lock of a bigint ``key``: its high half as ``classid``, its low
    half as ``objid`` (both unsigned)."""
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


async def _mark_taken(db: Connection, run_id: str) -> tuple[Any, ...]:
    """Mark ``run_id`` taken and running by this process; its row as it was before."""
    row = await (await db.execute(_RUN, (run_id,))).fetchone()
    assert row is not None  # its queue row refers to it (ON DELETE CASCADE)
    await db.execute(_Q_MARK_TAKEN, (run_id,))
    await db.execute(_Q_MARK_RUNNING, (process_label(), run_id))
    return tuple(row)
