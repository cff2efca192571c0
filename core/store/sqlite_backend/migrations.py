"""The schema of the run store as named, append-only migrations.

Invariants:

* ``MIGRATIONS`` only ever grows at the end. A released migration is never edited or renamed: a change
  to the schema is a new function ``mNNN_what_it_does`` registered with ``@migration``.
* Every applied migration is recorded in ``schema_migrations(name, applied_at)`` in the same
  transaction as its statements, so a database is never half-migrated.
* ``SCHEMA_VERSION`` is the number of migrations this flujo knows. A database that records a migration
  we do not know was written by a newer flujo and is refused rather than guessed at.
* Migrations run under ``BEGIN IMMEDIATE``, so processes that open a new database at the same moment
  apply them once; an up-to-date database is checked without taking the write lock.

sqlite3 exceptions raised here are translated by the caller (``core.store.sqlite_backend.store``), the one boundary.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import aiosqlite

from core.model.errors import StoreError
from core.store.sqlite_backend.transaction import immediate

Migration = Callable[[aiosqlite.Connection], Awaitable[None]]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration; its ``__name__`` is what ``schema_migrations`` records."""
    MIGRATIONS.append(fn)
    return fn


@migration
async def m001_runs_steps_events(db: aiosqlite.Connection) -> None:
    await db.execute(
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            pipeline_name TEXT NOT NULL,
            status TEXT NOT NULL,
            source TEXT,
            source_hash TEXT,
            input TEXT,
            output TEXT,
            error TEXT,
            created_at REAL NOT NULL,
            finished_at REAL,
            usage TEXT NOT NULL,
            parent_run_id TEXT,
            thread TEXT,
            pause_path TEXT,
            pause_message TEXT
        )
        """
    )
    # seq orders a run's steps by when they were (last) recorded; AUTOINCREMENT never reuses a number,
    # so a step re-recorded at the same path (the row is replaced) always sorts after the others.
    await db.execute(
        """
        CREATE TABLE steps (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            input TEXT,
            output TEXT,
            error TEXT,
            started_at REAL NOT NULL,
            duration_s REAL NOT NULL,
            usage TEXT NOT NULL,
            UNIQUE (run_id, path)
        )
        """
    )
    await db.execute(
        """
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            kind TEXT NOT NULL,
            ts REAL NOT NULL,
            payload TEXT NOT NULL
        )
        """
    )


@migration
async def m002_run_and_event_indexes(db: aiosqlite.Connection) -> None:
    # list_runs sorts by created_at, optionally filtered by status; events are read per run, in order.
    await db.execute("CREATE INDEX runs_by_created_at ON runs(created_at)")
    await db.execute("CREATE INDEX runs_by_status ON runs(status, created_at)")
    await db.execute("CREATE INDEX events_by_run ON events(run_id, seq)")


@migration
async def m003_shared_texts(db: aiosqlite.Connection) -> None:
    # Long texts stored once per run (core.store.rows.texts); the run's records refer to them as {"$text": id},
    # and they go when the run goes. The hash is not unique: texts are matched by body too.
    await db.execute(
        """
        CREATE TABLE texts (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            hash BLOB NOT NULL,
            body NOT NULL
        )
        """
    )
    await db.execute("CREATE INDEX texts_by_run_and_hash ON texts(run_id, hash)")


@migration
async def m004_run_owner(db: aiosqlite.Connection) -> None:
    # Who claimed the run last ("pid 1234 on host"), for the message that refuses a second executor
    # (core.store.rows.claims holds the claim itself).
    await db.execute("ALTER TABLE runs ADD COLUMN owner TEXT")


@migration
async def m005_threads(db: aiosqlite.Connection) -> None:
    # The turns each run added to its thread (the thread itself is runs.thread, a column since m001). A
    # run's turns are replaced as a whole and go when the run goes. ``content`` is the turn's text stored
    # as the run's other values are (JSON, a long text as a reference to the run's ``texts`` row holding
    # it, which the step that said it already uses), so a turn's text is not stored twice.
    await db.execute(
        """
        CREATE TABLE thread_turns (
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            role TEXT NOT NULL,
            content NOT NULL,
            tokens INTEGER,
            PRIMARY KEY (run_id, idx)
        )
        """
    )
    await db.execute("CREATE INDEX runs_by_thread ON runs(thread, created_at)")


@migration
async def m006_run_options(db: aiosqlite.Connection) -> None:
    # The command-line settings and limits a run was started (or last resumed) with, as JSON, so that
    # ``flujo resume`` continues under them (``RunRecord.options``).
    await db.execute("ALTER TABLE runs ADD COLUMN options TEXT")


@migration
async def m007_run_queue(db: aiosqlite.Connection) -> None:
    # Runs queued by ``flujo submit`` for ``flujo worker`` processes (core.store.rows.queue_rows): a row per run
    # a worker should drive, in submission order (seq), until the run ends, pauses or is cancelled. ``taken``
    # says a worker started it (whether that worker still lives is its claim's business); ``cancel`` that
    # ``flujo cancel`` asked the worker executing it to stop.
    await db.execute(
        """
        CREATE TABLE queue (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL UNIQUE REFERENCES runs(run_id) ON DELETE CASCADE,
            thread TEXT,
            taken INTEGER NOT NULL DEFAULT 0,
            cancel INTEGER NOT NULL DEFAULT 0
        )
        """
    )
    await db.execute("CREATE INDEX queue_by_thread ON queue(thread, seq)")


@migration
async def m008_shared_lists(db: aiosqlite.Connection) -> None:
    # No table changes: from here on an event payload may refer to a list stored once in ``texts``, as
    # ``{"$text": [id]}`` (core.store.rows.shared_lists). Recorded so that an older flujo, which would read
    # such a payload as it is, refuses this database ("written by a newer flujo") instead.
    del db


@migration
async def m009_thread_turn_text(db: aiosqlite.Connection) -> None:
    # What a person reads of a thread turn when it is not what was said (``ConversationTurn.shown``: the
    # text of a structured reply, or a step's ``turn_text``), stored as ``content`` is; NULL: the content.
    await db.execute("ALTER TABLE thread_turns ADD COLUMN shown")


@migration
async def m010_texts_by_hash(db: aiosqlite.Connection) -> None:
    # A text is found by an 8-byte digest of its run and its body (``texts.run_digest``) in an index of the
    # digests alone, which leaves out the lists' rows (their digest is empty): a third of the index of
    # m003, which held each row's run id and 16-byte digest. Rows stored before keep their digests, found
    # by them too. From here on a stored value may also be compressed against a preset dictionary
    # (``core.model.codec.pack``), which an older flujo could not read: recording this migration makes it
    # refuse the database ("written by a newer flujo") instead.
    await db.execute("DROP INDEX texts_by_run_and_hash")
    await db.execute("CREATE INDEX texts_by_hash ON texts(hash) WHERE hash != x''")


@migration
async def m011_event_kind_codes(db: aiosqlite.Connection) -> None:
    # No table changes: from here on an event's kind and a step's status are stored as one control character
    # each (``core.model.pack_tables.EVENT_KINDS``, ``STEP_STATUSES``), which an older flujo would show as they
    # are or refuse: recording this migration makes it refuse the database ("written by a newer flujo")
    # instead. Rows stored before keep their text, read as it is.
    del db


SCHEMA_VERSION = len(MIGRATIONS)
"""How many migrations this flujo knows; a database with more was written by a newer flujo."""


async def migrate(db: aiosqlite.Connection, *, label: str) -> list[str]:
    """Bring the database behind ``db`` (in autocommit mode) up to date; the names applied now.

    ``label`` names the database in error messages. Raises ``StoreError`` when the file holds someone
    else's tables or was written by a newer flujo.
    """
    applied = await _applied(db)
    if applied is not None and _pending(applied, label=label) == []:
        return []
    async with immediate(db):
        # Read again under the write lock: another process may have migrated in the meantime.
        applied = await _applied(db)
        if applied is None:
            await _refuse_foreign_tables(db, label=label)
            await db.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            applied = []
        pending = _pending(applied, label=label)
        for step in pending:
            await step(db)
            await db.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (step.__name__, time.time())
            )
    return [step.__name__ for step in pending]


async def refuse_foreign(db: aiosqlite.Connection, *, label: str) -> None:
    """StoreError when the database holds tables but no ``schema_migrations``: it is another program's, and
    nothing may change it (not even its journal mode). Read-only; called before anything is written."""
    if await _applied(db) is None:
        await _refuse_foreign_tables(db, label=label)


async def has_tables(db: aiosqlite.Connection) -> bool:
    """Whether the database holds any table (an empty file holds none)."""
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' LIMIT 1"
    return bool(list(await db.execute_fetchall(sql)))


async def _applied(db: aiosqlite.Connection) -> list[str] | None:
    """Names recorded in ``schema_migrations``, or None when the table does not exist."""
    rows = list(
        await db.execute_fetchall("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    )
    if not rows:
        return None
    return [str(row[0]) for row in await db.execute_fetchall("SELECT name FROM schema_migrations")]


def _pending(applied: list[str], *, label: str) -> list[Migration]:
    known = {step.__name__ for step in MIGRATIONS}
    if any(name not in known for name in applied):
        raise StoreError(
            f"{label} was written by a newer flujo (schema {len(applied)} > {SCHEMA_VERSION})",
            hint="upgrade flujo",
        )
    done = set(applied)
    return [step for step in MIGRATIONS if step.__name__ not in done]


async def _refuse_foreign_tables(db: aiosqlite.Connection, *, label: str) -> None:
    """A database with tables but no ``schema_migrations`` belongs to another program: leave it alone."""
    sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    names = [str(row[0]) for row in await db.execute_fetchall(sql)]
    # ``schema_migrations`` among them: another flujo process created the store between the two reads (it
    # migrates while this one opens the same new file); it is a flujo database, which ``migrate`` handles.
    if names and "schema_migrations" not in names:
        raise StoreError(
            f"{label} is not a flujo database (it holds other tables: {', '.join(names[:5])})",
            hint="point FLUJO_STATE_URI (or state_uri in flujo.toml) at another file",
        )
