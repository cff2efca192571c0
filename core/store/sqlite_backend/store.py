"""``SqliteStore``: the durable ``RunStore``, one SQLite file in WAL mode reached through aiosqlite.

Invariants:

* An aiosqlite connection per store, opened with WAL, ``synchronous=NORMAL``, a busy timeout of at most 10 s
  and foreign keys on, for reads and the writes that store no values (claims, cancelling, pruning); and for a
  file, a second connection on the event loop's thread for the writes that store values (steps, events, runs,
  thread turns: ``core.store.sqlite_backend.writer``) and for a worker's taking and leaving of a queued run,
  which waits for another process's lock with the loop free.
  Calls on a store are serialised by an ``asyncio.Lock``, so concurrent tasks never interleave inside a
  transaction, and the two connections of a store never write at once.
* Every write is one ``BEGIN IMMEDIATE`` transaction committed before the method returns;
  ``record_step`` stores a step and its events together, so ``kill -9`` loses at most the step in flight.
  A write that stores values runs as one function (``core.store.sqlite_backend.batch``): on the writer connection,
  without an ``await`` inside, so nothing cancels it halfway (an in-memory store runs it as one call on
  aiosqlite's thread instead: a second connection to ``:memory:`` would be another database).
* A step recorded again at the same path replaces the earlier row and sorts after the others (a journal
  entry is overwritten); events are append-only, so the trace keeps every attempt.
* Each long text is stored once (``core.store.rows.texts``), and each long list of an event payload
  (``core.store.rows.shared_lists``): writes replace them by references inside the same transaction, reads
  substitute them back (``core.store.rows.row_reads``), so no caller ever sees a reference.
* A run's thread turns are replaced as a whole in one transaction (``core.store.rows.thread_rows``); their
  texts are the run's texts, so a turn said by a step refers to the text the step's record holds.
* Runs are deleted only by ``prune_runs``, each under its claim, with everything that refers to them
  (``ON DELETE CASCADE``) and their child runs (``core.store.rows.pruning`` chooses them).
* A write waits for another process's write lock for up to ``busy_timeout_s`` (``Settings.sqlite``, 5
  minutes by default): the writer connection tries again from the loop, the aiosqlite connection tries
  ``BEGIN IMMEDIATE`` again after each busy timeout. A lock still held then is ``StoreUnavailable``, and
  from then on the store refuses every write at once (``reconnect`` ends that): a run in hand stops as its
  last commit left it, nothing of it recorded as failed.
* sqlite3 errors become ``StoreError`` in one place, ``core.store.sqlite_backend.files.store_error``, with one
  line and a hint.

The module is longer than most (about 520 lines) because ``SqliteStore`` owns the connection, its lock and
the text cache, and every method is a transaction over them; the writes of values, the reading of records,
the SQL of threads and queues, the text sharing, the choice of runs to prune and the file handling live in
their own modules.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar, cast

import aiosqlite

from core.model import codec
from core.model.errors import StoreError, StoreGone, StoreUnavailable
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
from core.settings.file_kinds import not_a_file
from core.settings.location import ELSEWHERE_HINT, describe
from core.store.rows import claims, pruning, queue_rows, row_reads, thread_rows
from core.store.rows.lookup import MAX_CANDIDATES, NO_RUN_HINT, pick_run_id
from core.store.rows.shared_lists import Pending, ReadLists
from core.store.rows.text_cache import TextCache
from core.store.sqlite_backend import files
from core.store.sqlite_backend.batch import Batch
from core.store.sqlite_backend.migrations import has_tables, migrate, refuse_foreign
from core.store.sqlite_backend.transaction import immediate, in_one_call
from core.store.sqlite_backend.writer import Writer
from core.text.turns import ConversationTurn

T = TypeVar("T")

_CHUNK = 500  # ids per "IN (...)" query, well under SQLite's limit on parameters

CLAIMS_SUFFIX = ".claims"
"""The file beside the database whose byte-range locks say which process executes which run."""

BUSY_TIMEOUT_S = 300.0
"""How long a write waits for another process's write lock, by default (``Settings.sqlite.busy_timeout_s``),
before the store is ``StoreUnavailable``."""

ATTEMPT_S = 10.0
"""The aiosqlite connection's busy timeout: how long one statement waits inside SQLite (on aiosqlite's
thread) before the store tries again from the loop; it bounds how late a cancelled wait lets go."""


OpenMode = Literal["create", "existing", "read"]
"""How a store opens its file: ``create`` it (and its directory) when missing; use an ``existing`` file
only; or ``read`` an existing file without changing it (see ``SqliteStore``)."""


async def _connected(connection: aiosqlite.Connection) -> aiosqlite.Connection:
    """``connection``, connected. When connecting fails, aiosqlite stops its thread, which answers the event
    loop once more: after the failure has ended ``asyncio.run`` (one line, exit code 7), that answer found
    the loop closed and printed a traceback from the thread. So the failure waits for the thread to end."""
    try:
        return await connection
    except BaseException:
        thread = getattr(connection, "_thread", None)  # aiosqlite has no public way to wait for it
        if isinstance(thread, threading.Thread) and thread.is_alive():
            await asyncio.to_thread(thread.join, _STOP_WAIT_S)
        raise


_STOP_WAIT_S = 10.0  # at most: the thread has only to close a connection that never opened


class SqliteStore:
    """A ``RunStore`` in the SQLite file ``path`` (``":memory:"`` for a private in-memory database).

    Open it with ``await store.open()`` or ``async with SqliteStore(path) as store:``; ``open_store``
    does the former from a state URI. ``update_run`` changes what its ``RunUpdate`` says (None leaves a
    value as it is, but for the pause point). ``get_run`` takes a full id or a unique prefix; the other reads
    take a full id.

    ``mode`` (``OpenMode``): ``create`` (the default) creates the file, its directory and the schema as
    needed; ``existing`` and ``read`` never create the file (a missing one is a ``StoreError``), nor make a
    store of a file that holds no table (an empty file, as a first writer may have left it): that is a
    ``StoreError`` saying it is not a flujo store yet. ``read`` is for looking: it sets no persistent pragma;
    it still brings an existing flujo database of an older schema up to date, as any command would, since
    the reads need the current schema. Nothing else it does writes.
    """

    def __init__(self, path: str | Path, *, mode: OpenMode = "create", busy_timeout_s: float | None = None) -> None:
        self.path = str(path)
        self.mode: OpenMode = mode
        self.busy_timeout_s = BUSY_TIMEOUT_S if busy_timeout_s is None else busy_timeout_s
        self._unavailable: StoreUnavailable | None = None  # set when a wait ran out: writes refused
        self._file: tuple[int, int] | None = None  # the file opened (files.identity): a write checks it is still there
        self._db: aiosqlite.Connection | None = None
        self._writer: Writer | None = None  # writes of values, on the loop's thread (core.store.sqlite_backend.writer)
        self._lock = asyncio.Lock()
        self._cache = TextCache()  # the ids of texts and lists this store committed
        self._read_lists = ReadLists()  # the lists it read last (pages of a run: RunStore.event_page)
        self._claimed: set[str] = set()  # runs this store claimed (core.store.rows.claims)
        self._run_threads: dict[str, str] = {}  # taken run → the thread claimed with it (take_queued)

    async def open(self) -> SqliteStore:
        """Connect, set the pragmas, create the parent directory and apply pending migrations."""
        if self._db is not None:
            return self
        in_memory = self.path == ":memory:"
        found = None if in_memory else not_a_file(Path(self.path))
        if found not in (None, "nothing"):  # a folder, a symlink loop, a FIFO: SQLite would only say "unable to open"
            raise StoreError(
                f"{describe(self.path)} is {found}, not a run store file",
                hint=f"give the path of a database file (flujo run creates it); or {ELSEWHERE_HINT}",
            )
        if not in_memory and self.mode == "create":
            files.make_parent(Path(self.path))
        elif not in_memory and not Path(self.path).is_file():
            raise StoreError(
                f"there is no run store at {describe(self.path)}",
                hint=f"flujo run creates it; or {ELSEWHERE_HINT}",
            )
        with self._translated("open the run store"):
            target, uri = (
                (self.path, False) if in_memory or self.mode == "create" else (files.no_create_uri(self.path), True)
            )
            attempt_s = min(ATTEMPT_S, self.busy_timeout_s)
            db = await _connected(aiosqlite.connect(target, timeout=attempt_s, isolation_level=None, uri=uri))
            try:
                await db.execute(f"PRAGMA busy_timeout = {int(attempt_s * 1000)}")
                await db.execute("PRAGMA foreign_keys = ON")
                if not in_memory and self.mode != "create" and not await has_tables(db):
                    # An empty file (or a database with no table): nothing has been stored there yet. A reader
                    # says so rather than showing an empty store, and never writes a schema into it; the first
                    # writer (mode "create") makes it a store.
                    raise StoreError(
                        f"{describe(self.path)} is not a flujo store yet ({files.emptiness(self.path)})",
                        hint=f"flujo run makes it one; or {ELSEWHERE_HINT}",
                    )
                if self.mode != "read":
                    await refuse_foreign(db, label=self.path)  # before WAL mode, which would change its files
                    await db.execute("PRAGMA journal_mode = WAL")
                    await db.execute("PRAGMA synchronous = NORMAL")
                await migrate(db, label=self.path)
                if not in_memory and self.mode != "read":  # ":memory:" would be another database
                    self._writer = Writer(target, uri=uri)
                    self._file = files.identity(self.path)
            except BaseException:
                await db.close()
                raise
        self._db = db
        return self

    async def close(self) -> None:
        """Release this store's claims and close the connection; closing twice is harmless."""
        for run_id in list(self._claimed):
            await self.release_run(run_id)
        db, self._db = self._db, None
        if db is not None:
            async with self._lock:
                with self._translated("close the run store"):
                    writer, self._writer = self._writer, None
                    if writer is not None:
                        writer.close()
                    await db.close()

    @property
    def lock_waits(self) -> int:
        """How many writes of values found another process holding the write lock, and waited for it."""
        return self._writer.waited if self._writer is not None else 0

    async def reconnect(self) -> None:
        """Use the store again after ``StoreUnavailable``: once no other process holds the write lock (one try,
        no wait; ``StoreUnavailable`` again while one does). Its claims stay as they are (``release_run``)."""
        if self._unavailable is None:
            return
        if isinstance(self._unavailable, StoreGone):  # the file is not coming back: a new one is another store
            raise files.gone(describe(self.path), "use the run store again")
        if self._writer is not None:
            try:
                await self._writer.run(lambda conn: None, timeout_s=0)
            except sqlite3.Error as exc:
                raise self._failed("take the run store's write lock", exc) from exc
        self._unavailable = None

    async def __aenter__(self) -> SqliteStore:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def create_run(self, run: RunRecord) -> None:
        await self._in_one_call(f"create run {run.run_id}", lambda batch: batch.create_run(run))

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        """Store ``step`` (replacing any earlier step at its path) and its events in one transaction."""
        await self._in_one_call(
            f"record step {step.path!r} of run {step.run_id}", lambda batch: batch.record_step(step, events)
        )

    async def record_events(self, run_id: str, events: Sequence[TraceEvent]) -> None:
        await self._in_one_call(f"record events of run {run_id}", lambda batch: batch.record_events(run_id, events))

    async def update_run(self, run_id: str, update: RunUpdate) -> None:
        await self._in_one_call(f"update run {run_id}", lambda batch: batch.update_run(run_id, update))

    async def claim_run(self, run_id: str) -> bool:
        """Claim ``run_id`` for this process (``core.store.rows.claims``) and record it as the run's owner."""
        self._connection()
        if run_id in self._claimed:
            return False
        if self._claims_file:
            try:
                if not claims.claim(self.path + CLAIMS_SUFFIX, run_id):
                    return False
            except OSError as exc:
                raise StoreError(
                    f"cannot claim run {run_id}: {exc.strerror or exc} ({self.path}{CLAIMS_SUFFIX})",
                    hint=f"check permissions, or {files.MOVE_HINT}",
                ) from exc
        self._claimed.add(run_id)
        try:
            async with self._write(f"claim run {run_id}") as db:
                cursor = await db.execute(
                    "UPDATE runs SET owner = ? WHERE run_id = ?", (claims.process_label(), run_id)
                )
                if cursor.rowcount == 0:
                    raise StoreError(f"cannot claim run {run_id}: no such run", hint=NO_RUN_HINT)
        except BaseException:
            await self.release_run(run_id)
            raise
        return True

    async def release_run(self, run_id: str) -> None:
        if run_id in self._claimed:
            self._claimed.discard(run_id)
            if self.path != ":memory:":
                claims.release(self.path + CLAIMS_SUFFIX, run_id)
        thread = self._run_threads.pop(run_id, None)
        if thread is not None:
            await self.release_run(claims.thread_key(thread))

    async def claimed_runs(self, run_ids: Sequence[str]) -> set[str]:
        """The runs of ``run_ids`` this store claims, and those another process holds the lock of
        (``claims.held``, which asks without locking)."""
        self._connection()
        mine = {run_id for run_id in run_ids if run_id in self._claimed}
        if not self._claims_file:
            return mine
        try:
            return mine | claims.held(self.path + CLAIMS_SUFFIX, run_ids)
        except OSError as exc:
            raise StoreError(
                f"cannot check which runs are being executed: {exc.strerror or exc} ({self.path}{CLAIMS_SUFFIX})",
                hint="check permissions",
            ) from exc

    async def claim_thread(self, name: str) -> bool:
        """Claim thread ``name`` while a run of it executes in this process (``core.store.rows.claims``); False when
        a live process (this store included) holds it. ``release_thread`` or ``close`` gives it up."""
        self._connection()
        return self._take_claim(claims.thread_key(name))

    async def release_thread(self, name: str) -> None:
        await self.release_run(claims.thread_key(name))

    async def queue_runs(self, runs: Sequence[RunRecord]) -> None:
        """Store ``runs`` (status ``queued``) and put them in the queue, in this order, in one transaction
        (``core.store.rows.queue_rows``)."""
        await self._in_one_call(f"queue {len(runs)} run(s)", lambda batch: batch.queue_runs(runs))

    async def take_queued(self) -> queue_rows.Taken | None:
        """Claim the oldest queued run a worker may start now (or a started one whose worker died), mark it
        taken and running, and return it as the same transaction read it (``queue_rows.Taken``); None when
        there is none. The caller holds its claim.

        One transaction, done in one call like a step's write (``_transaction``), tried again whole while
        another process holds the write lock: the claims an attempt took are given back when it is rolled
        back, before the next attempt, and when the last one fails."""
        took: list[str] = []  # the claims the latest attempt took (runs; their threads go with them)
        label = claims.process_label()

        def attempt(conn: sqlite3.Connection) -> queue_rows.Taken | None:
            self._let_go(took)
            cursor = conn.cursor()
            for run_id, thread in cursor.execute(queue_rows.OFFERED, (queue_rows.BATCH,)).fetchall():
                if self._take_claim(str(run_id)):
                    took.append(str(run_id))
                    if self._take_thread(str(run_id), thread):
                        return self._taken_in(conn, _mark_taken(cursor, str(run_id), label), label)
            for run_id, cancel, thread in cursor.execute(queue_rows.TAKEN, (_CHUNK,)).fetchall():
                if not self._take_claim(str(run_id)):
                    continue  # a live worker executes it
                took.append(str(run_id))
                if not cancel:
                    if self._take_thread(str(run_id), thread):
                        return self._taken_in(conn, _mark_taken(cursor, str(run_id), label), label)
                    continue
                cursor.execute(queue_rows.MARK_CANCELLED, (time.time(), run_id))
                cursor.execute(queue_rows.REMOVE, (run_id,))
            return None

        try:
            async with self._lock:
                self._usable("take a queued run")
                found = await self._transaction("take a queued run", attempt)
        except BaseException:
            self._let_go(took)
            raise
        if found is None:
            self._let_go(took)  # the claims of the cancelled runs it removed
            return None
        self._let_go([other for other in took if other != found.record.run_id])  # the cancelled runs' claims
        return found

    def _taken_in(self, conn: sqlite3.Connection, found: tuple[str, tuple[Any, ...]], owner: str) -> queue_rows.Taken:
        """What taking the run of ``found`` (its id and row) gives the worker (``queue_rows.read_taken``), read
        in the taking transaction on ``conn``: its texts and, for a run taken again, its journal."""
        cursor = conn.cursor()

        async def queries(wanted: Sequence[tuple[str, tuple[Any, ...]]]) -> list[list[Any]]:
            return [cursor.execute(sql, params).fetchall() for sql, params in wanted]

        async def fetch(ids: Sequence[int]) -> dict[int, str]:
            return self._bodies(cursor, ids)

        return _at_once(queue_rows.read_taken(found[1], owner, queries, fetch))

    def _let_go(self, run_ids: list[str]) -> None:
        """Give back the claims of ``run_ids`` (and of their threads) that this store holds; empty the list."""
        for run_id in run_ids:
            thread = self._run_threads.pop(run_id, None)
            for key in (run_id, claims.thread_key(thread)) if thread is not None else (run_id,):
                if key in self._claimed:
                    self._claimed.discard(key)
                    self._release_lock(key)
        run_ids.clear()

    async def leave_queued(self, run_id: str, *, requeue: bool = False) -> None:
        """Take ``run_id`` out of the queue (it ended, paused or was cancelled), or with ``requeue`` give it
        back to be taken again (it was interrupted). ``update_run`` does the former with the status that
        settles it (``queue_rows.LEAVES``)."""
        sql = queue_rows.REQUEUE if requeue else queue_rows.REMOVE
        async with self._lock:
            action = f"update the queue entry of run {run_id}"
            self._usable(action)
            await self._transaction(action, lambda conn: conn.execute(sql, (run_id,)).close())

    async def cancel_queued(self, run_id: str) -> queue_rows.Cancelled:
        """Cancel queued run ``run_id`` when nobody executes it, else ask its worker to (see ``Cancelled``)."""
        held = False
        async with self._write(f"cancel run {run_id}") as db:
            if not list(await db.execute_fetchall(queue_rows.ONE, (run_id,))):
                return "not_queued"
            held = self._hold(run_id)
            if not held:
                await db.execute(queue_rows.ASK_CANCEL, (run_id,))
                return "requested"
            await db.execute(queue_rows.MARK_CANCELLED, (time.time(), run_id))
            await db.execute(queue_rows.REMOVE, (run_id,))
        if held:
            self._release_lock(run_id)
        return "cancelled"

    async def cancel_requests(self, run_ids: Sequence[str]) -> set[str]:
        """Those of ``run_ids`` that ``flujo cancel`` asked to stop."""
        wanted = list(run_ids)
        if not wanted:
            return set()
        sql = f"SELECT run_id FROM queue WHERE cancel = 1 AND run_id IN ({_marks_n(len(wanted))})"
        return {str(row[0]) for row in await self._read("read cancel requests", sql, tuple(wanted))}

    async def queue_waiting(self) -> int:
        """How many queued runs wait to be started."""
        return int((await self._read("count queued runs", queue_rows.WAITING, ()))[0][0])

    def _take_claim(self, run_id: str) -> bool:
        if self._hold(run_id):
            self._claimed.add(run_id)
            return True
        return False

    def _take_thread(self, run_id: str, thread: str | None) -> bool:
        """Claim the thread of ``run_id`` (just claimed) with it; when another process holds the thread,
        give the run's claim back and say False: the run waits in the queue."""
        if thread is None:
            return True
        if self._take_claim(claims.thread_key(thread)):
            self._run_threads[run_id] = thread
            return True
        self._claimed.discard(run_id)
        self._release_lock(run_id)
        return False

    def _release_lock(self, run_id: str) -> None:
        if self._claims_file:
            claims.release(self.path + CLAIMS_SUFFIX, run_id)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run ``run_id`` names or is a unique prefix of; StoreError when several runs match."""
        if not run_id:
            return None
        rows = await self._read(
            f"look up run {run_id}",
            "SELECT run_id FROM runs WHERE run_id >= ? AND run_id < ? ORDER BY run_id LIMIT ?",
            (run_id, run_id + "\U0010ffff", MAX_CANDIDATES + 1),
        )
        found = pick_run_id(run_id, [str(r[0]) for r in rows if str(r[0]).startswith(run_id)])
        if found is None:
            return None
        rows = await self._read(f"read run {found}", row_reads.RUN, (found,))
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
        """Up to ``limit`` runs, newest first, past the ``offset`` newest; only those with ``status`` / in
        ``thread`` / of ``parent_run_id`` / created at ``created_after`` or later when given; without their
        input and output unless ``values``."""
        filters = {"status": status, "thread": thread, "parent_run_id": parent_run_id}
        conditions = [f"{column} = ?" for column, value in filters.items() if value is not None]
        params: tuple[Any, ...] = tuple(value for value in filters.values() if value is not None)
        if created_after is not None:
            conditions.append("created_at >= ?")
            params = (*params, created_after)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        columns = codec.RUN_COLUMNS if values else codec.RUN_COLUMNS_WITHOUT_VALUES
        rows = await self._read(
            "list runs",
            f"SELECT {columns} FROM runs {where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (*params, max(limit, 0), max(offset, 0)),
        )
        return await row_reads.runs(rows, self._texts)

    async def latest_run(self, *, source: str) -> RunRecord | None:
        """The newest top-level run of the blueprint file ``source``; None when there is none."""
        rows = await self._read(f"look up the latest run of {source}", row_reads.LATEST_OF_SOURCE, (source,))
        return (await row_reads.runs(rows, self._texts))[0] if rows else None

    async def step_counts(self, run_ids: Sequence[str]) -> dict[str, int]:
        counts = dict.fromkeys(run_ids, 0)
        wanted = list(counts)
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            sql = f"SELECT run_id, COUNT(*) FROM steps WHERE run_id IN ({_marks_n(len(chunk))}) GROUP BY run_id"
            counts.update((str(row[0]), int(row[1])) for row in await self._read("count steps", sql, tuple(chunk)))
        return counts

    async def prune_runs(
        self, *, created_before: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> PruneResult:
        """Delete the runs ``core.store.rows.pruning`` chooses (with everything that belongs to them, by the
        schema's ``ON DELETE CASCADE``, and their child runs), then ``VACUUM`` to give the space back.

        Each chosen run is claimed first (``core.store.rows.claims``): a run whose claim a live process holds is
        kept, and the claims held here keep any other process from resuming a run while it is deleted."""
        sql = "SELECT run_id, parent_run_id, created_at FROM runs ORDER BY created_at DESC, rowid DESC"
        rows = await self._read("list runs", sql, ())
        stored = [pruning.StoredRun(str(r[0]), r[1], pruning.created_at(r[2])) for r in rows]
        doomed = pruning.choose(stored, created_before=created_before, keep=keep)
        size_before = files.size(self.path)
        held: list[pruning.Doomed] = []
        try:
            for run in doomed:
                if self._hold(run.run_id):
                    held.append(run)
            gone = [run_id for run in held for run_id in (run.run_id, *run.descendants)]
            if not dry_run and gone:
                async with self._write("prune runs") as db:
                    for start in range(0, len(gone), _CHUNK):
                        chunk = gone[start : start + _CHUNK]
                        await db.execute(f"DELETE FROM runs WHERE run_id IN ({_marks_n(len(chunk))})", chunk)
                self._cache.clear()  # the ids of deleted texts may be given to new ones
                self._read_lists.clear()
        finally:
            if self._claims_file:
                for run in held:
                    claims.release(self.path + CLAIMS_SUFFIX, run.run_id)
        vacuumed = not dry_run and bool(held) and await self._vacuum()
        deleted = {run.run_id for run in held}
        return PruneResult(
            deleted=tuple(run.run_id for run in held),
            children=tuple(run_id for run in held for run_id in run.descendants),
            live=tuple(run.run_id for run in doomed if run.run_id not in deleted),
            size_before=size_before,
            size_after=files.size(self.path),
            vacuumed=vacuumed,
        )

    def _hold(self, run_id: str) -> bool:
        """Claim ``run_id`` to delete it: False when a live process (this store included) executes it."""
        if run_id in self._claimed:
            return False
        if not self._claims_file:
            return True
        try:
            return claims.claim(self.path + CLAIMS_SUFFIX, run_id)
        except OSError as exc:
            raise StoreError(
                f"cannot check whether run {run_id} is being executed: {exc.strerror or exc}"
                f" ({self.path}{CLAIMS_SUFFIX})",
                hint="check permissions",
            ) from exc

    @property
    def _claims_file(self) -> bool:
        return self.path != ":memory:"  # a private in-memory database has no other process to exclude

    async def _vacuum(self) -> bool:
        """Give the space of deleted rows back to the file system; False when another process keeps the
        database busy (SQLite then reuses the free pages for new rows)."""
        db = self._connection()
        async with self._lock:
            try:
                await db.execute("VACUUM")
                # The rewritten file is in the write-ahead log until a checkpoint copies it back; a reader
                # in another process may keep the checkpoint from finishing (its first column is then 1).
                checkpoint = list(await db.execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)"))
                return bool(checkpoint) and checkpoint[0][0] == 0
            except sqlite3.OperationalError as exc:
                if files.primary_code(exc) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    return False
                raise files.store_error(self.path, "reclaim the space of the deleted runs", exc) from exc

    async def steps(self, run_id: str) -> list[StepRecord]:
        """The steps of run ``run_id`` in the order they were recorded."""
        rows = await self._read(f"read the steps of run {run_id}", row_reads.STEPS, (run_id,))
        return await row_reads.steps(rows, self._texts)

    async def events(self, run_id: str, *, kind: str | None = None) -> list[TraceEvent]:
        """The trace events of run ``run_id`` (of ``kind`` only, when given) in the order they were recorded."""
        if kind is None:
            rows = await self._read(f"read the events of run {run_id}", row_reads.EVENTS, (run_id,))
        else:
            coded = (run_id, codec.kind_code(kind), kind)
            rows = await self._read(f"read the events of run {run_id}", row_reads.EVENTS_OF_KIND, coded)
        return await row_reads.events(rows, self._texts)

    async def step_page(
        self, run_id: str, *, after: int = 0, until: int | None = None, under: str | None = None, limit: int = PAGE_SIZE
    ) -> list[tuple[int, StepRecord]]:
        """Up to ``limit`` steps of run ``run_id`` numbered after ``after`` (see ``RunStore.step_page``)."""
        sql, params = row_reads.page_query(row_reads.STEP_PAGE, run_id, after, until, under, limit)
        rows = await self._read(f"read the steps of run {run_id}", sql, params)
        return list(zip((int(row[-1]) for row in rows), await row_reads.steps(rows, self._texts), strict=True))

    async def event_page(
        self, run_id: str, *, after: int = 0, until: int | None = None, under: str | None = None, limit: int = PAGE_SIZE
    ) -> list[tuple[int, TraceEvent]]:
        """Up to ``limit`` events of run ``run_id`` numbered after ``after`` (see ``RunStore.event_page``)."""
        sql, params = row_reads.page_query(row_reads.EVENT_PAGE, run_id, after, until, under, limit)
        rows = await self._read(f"read the events of run {run_id}", sql, params)
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
        sql = row_reads.STEP_MARKS if of == "steps" else row_reads.EVENT_MARKS
        bounds = (run_id, after, row_reads.LAST_SEQ if until is None else until, limit)
        return row_reads.marks(await self._read(f"read the {of} of run {run_id}", sql, bounds))

    async def record_thread_turns(self, run_id: str, turns: Sequence[ConversationTurn]) -> None:
        """Replace the turns run ``run_id`` added to its thread; nothing for a run in no thread."""
        said = [(turn.role, turn.content, turn.tokens, turn.shown) for turn in turns]
        await self._in_one_call(
            f"record the thread turns of run {run_id}", lambda batch: batch.record_thread_turns(run_id, said)
        )

    async def thread_turns(self, thread: str, *, before_run: str | None = None) -> list[ThreadTurn]:
        """The turns of ``thread`` in order (with ``before_run``: of its runs created before that run)."""
        if before_run is None:
            rows = await self._read(f"read thread {thread!r}", thread_rows.TURNS, (thread,))
        else:
            rows = await self._read(f"read thread {thread!r}", thread_rows.TURNS_BEFORE, (thread, before_run))
        return await row_reads.turns(rows, self._texts)

    async def get_thread(self, thread: str) -> ThreadSummary | None:
        rows = await self._read(f"read thread {thread!r}", thread_rows.ONE_SUMMARY, (thread,))
        return thread_rows.summary_from_row(rows[0]) if rows else None

    async def list_threads(self) -> list[ThreadSummary]:
        """Every thread, the one with the latest run first."""
        rows = await self._read("list threads", thread_rows.ALL_SUMMARIES, ())
        return [thread_rows.summary_from_row(row) for row in rows]

    async def start_thread(self, run: RunRecord, turns: Sequence[ConversationTurn]) -> bool:
        """Create ``run`` with ``turns`` as its thread turns (one transaction) unless its thread has a run."""
        said = [(turn.role, turn.content, turn.tokens, turn.shown) for turn in turns]
        started: list[bool] = []  # what the attempt that committed found (an attempt may be made again)

        def write(batch: Batch) -> None:
            started[:] = [batch.start_thread(run, said)]

        await self._in_one_call(f"start thread {run.thread!r}", write)
        return started == [True]

    async def delete_thread(self, thread: str) -> ThreadSummary | None:
        """Delete the turns of ``thread`` and take its runs out of it; what was removed, or None."""
        async with self._write(f"delete thread {thread!r}") as db:
            rows = list(await db.execute_fetchall(thread_rows.ONE_SUMMARY, (thread,)))
            if not rows:
                return None
            await db.execute(thread_rows.DELETE_THREAD_TURNS, (thread,))
            await db.execute(thread_rows.LEAVE_THREAD, (thread,))
            return thread_rows.summary_from_row(rows[0])

    async def _texts(self, ids: Sequence[int]) -> dict[int, str]:
        """The bodies of the texts ``ids`` refer to; StoreError when one is missing."""
        wanted = sorted(set(ids))
        found: dict[int, str] = {}
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            rows = await self._read(
                "read stored texts", f"SELECT id, body FROM texts WHERE id IN ({_marks_n(len(chunk))})", tuple(chunk)
            )
            found.update((int(row[0]), codec.unpack(row[1])) for row in rows)
        return self._every_text(wanted, found)

    def _bodies(self, cursor: sqlite3.Cursor, ids: Sequence[int]) -> dict[int, str]:
        """As ``_texts``, through ``cursor`` of the transaction in progress (on the writer's thread)."""
        wanted = sorted(set(ids))
        found: dict[int, str] = {}
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            rows = cursor.execute(f"SELECT id, body FROM texts WHERE id IN ({_marks_n(len(chunk))})", chunk)
            found.update((int(row[0]), codec.unpack(row[1])) for row in rows)
        return self._every_text(wanted, found)

    def _every_text(self, wanted: list[int], found: dict[int, str]) -> dict[int, str]:
        if len(found) != len(wanted):
            raise StoreError(
                f"{len(wanted) - len(found)} stored text(s) are missing from {self.path}",
                hint="the database may be damaged; restore a backup",
            )
        return found

    def _connection(self) -> aiosqlite.Connection:
        if self._db is None:
            raise StoreError(f"the run store {self.path} is not open", hint="open it with open_store() first")
        return self._db

    @contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._failed(action, exc) from exc

    def _failed(self, action: str, exc: sqlite3.Error) -> StoreError:
        """``exc`` translated (``files.store_error``); a lock that outlasted the wait makes the store refuse
        writes from now on (``_usable``), until ``reconnect``."""
        error = files.store_error(self.path, action, exc)
        if isinstance(error, StoreUnavailable):
            self._unavailable = error
        return error

    def _usable(self, action: str) -> None:
        """StoreUnavailable at once while the store is unavailable: no write waits for the lock again (the
        engine's and the worker's writes after the first gave up would each wait the whole timeout)."""
        if self._unavailable is not None:
            if isinstance(self._unavailable, StoreGone):
                raise files.gone(describe(self.path), action)
            raise StoreUnavailable(
                f"cannot {action}: the run store is unavailable since an earlier write ({self._unavailable.message})",
                hint=self._unavailable.hint,
            )
        if self._file is not None and files.identity(self.path) != self._file:  # deleted or replaced under us
            self._unavailable = files.gone(describe(self.path), action)
            raise self._unavailable

    @asynccontextmanager
    async def _write(self, action: str) -> AsyncIterator[aiosqlite.Connection]:
        """A transaction of statements sent one by one (for writes that store no values: see ``Batch``)."""
        db = self._connection()
        async with self._lock:
            self._usable(action)
            with self._translated(action):
                async with immediate(db, wait_s=self.busy_timeout_s):
                    yield db

    async def _in_one_call(self, action: str, write: Callable[[Batch], None]) -> None:
        """``write`` a ``Batch`` in one transaction, done in one call (``_transaction``)."""

        def attempt(conn: sqlite3.Connection) -> Pending:
            pending = Pending()  # each attempt's own: one rolled back (or cancelled) leaves nothing behind
            write(Batch(conn, self._cache, pending))
            return pending

        async with self._lock:
            self._usable(action)
            pending = await self._transaction(action, attempt)
            # Committed: the texts and lists it stored can now be referred to without a look-up.
            self._cache.commit(pending)

    async def _transaction(self, action: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` in one ``BEGIN IMMEDIATE`` transaction done in one call: on the writer connection
        (on the loop's thread, tried again whole while another process holds the lock), or for an in-memory
        store on aiosqlite's thread. The caller holds ``_lock``; ``work`` must be safe to run again."""
        try:  # what _translated does, without a generator per step
            if self._writer is None:  # an in-memory store: its database is the one connection's own
                return await in_one_call(self._connection(), work)
            self._connection()
            return await self._writer.run(work, timeout_s=self.busy_timeout_s)
        except sqlite3.Error as exc:
            raise self._failed(action, exc) from exc

    async def _read(self, action: str, sql: str, params: tuple[Any, ...]) -> list[Any]:
        db = self._connection()
        async with self._lock:
            with self._translated(action):
                return list(await db.execute_fetchall(sql, params))


def _marks_n(count: int) -> str:
    return ", ".join("?" for _ in range(count))


def _at_once(work: Coroutine[Any, Any, T]) -> T:
    """The value of ``work``, a coroutine that never waits (its reads are synchronous: ``_taken_in``), run to
    its end in this call: it runs inside a transaction done in one call, on the writer's thread."""
    try:
        work.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    work.close()
    raise RuntimeError("a read inside a transaction waited")


def _mark_taken(cursor: sqlite3.Cursor, run_id: str, owner: str) -> tuple[str, tuple[Any, ...]]:
    """Mark ``run_id`` taken and running by ``owner``; its id and its row as it was before."""
    row: tuple[Any, ...] = cursor.execute(row_reads.RUN, (run_id,)).fetchone()
    cursor.execute(queue_rows.MARK_TAKEN, (run_id,))
    cursor.execute(queue_rows.MARK_RUNNING, (owner, run_id))
    return run_id, row
