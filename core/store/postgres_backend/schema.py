"""The schema of the run store on PostgreSQL: the same named, append-only migrations as SQLite's
(``core.store.sqlite_backend.migrations``), one for one, written in PostgreSQL's SQL.

Invariants:

* ``PG_MIGRATIONS`` has the names of ``MIGRATIONS`` in the same order (a test checks it): a database of
  either kind records the same names in ``schema_migrations``, so ``SCHEMA_VERSION`` means the same on
  both, and a database that records a name this flujo does not know was written by a newer flujo and is
  refused.
* The tables live in the connection's current schema (``public`` unless the URI's ``options`` sets
  ``search_path``), so several stores can share one database in separate schemas.
* Migrations run in one transaction under an advisory lock (``MIGRATION_LOCK``) taken before that
  transaction starts, so it sees what another process committed meanwhile: processes that open an empty
  database at the same moment apply them once; an up-to-date database is checked with one query, no lock.
* Differences from SQLite, by design: ``runs.seq`` (an identity) stands for SQLite's ``rowid`` (the order
  of creation among runs created in the same instant); text bodies are ``BYTEA`` (UTF-8; a text may hold
  NUL, which PostgreSQL's ``TEXT`` refuses), and values are not zlib-packed: PostgreSQL compresses long
  values itself (TOAST).

psycopg exceptions raised here are translated by the caller (``core.store.postgres_backend.store``), the one boundary.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, LiteralString

import psycopg

from core.model.errors import StoreError
from core.settings.location import ELSEWHERE_HINT
from core.store.sqlite_backend.migrations import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    from psycopg import AsyncConnection

MIGRATION_LOCK = 0x666C756A6F  # "flujo": the advisory lock key under which migrations run

PG_MIGRATIONS: tuple[tuple[str, Sequence[LiteralString]], ...] = (
    (
        "m001_runs_steps_events",
        (
            """CREATE TABLE runs (
                run_id TEXT PRIMARY KEY,
                seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
                pipeline_name TEXT NOT NULL,
                status TEXT NOT NULL,
                source TEXT,
                source_hash TEXT,
                input TEXT,
                output TEXT,
                error TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                finished_at DOUBLE PRECISION,
                usage TEXT NOT NULL,
                parent_run_id TEXT,
                thread TEXT,
                pause_path TEXT,
                pause_message TEXT
            )""",
            """CREATE TABLE steps (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
                path TEXT NOT NULL,
                name TEXT NOT NULL,
                kind TEXT NOT NULL,
                status TEXT NOT NULL,
                input TEXT,
                output TEXT,
                error TEXT,
                started_at DOUBLE PRECISION NOT NULL,
                duration_s DOUBLE PRECISION NOT NULL,
                usage TEXT NOT NULL,
                UNIQUE (run_id, path)
            )""",
            """CREATE TABLE events (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
                path TEXT NOT NULL,
                kind TEXT NOT NULL,
                ts DOUBLE PRECISION NOT NULL,
                payload TEXT NOT NULL
            )""",
        ),
    ),
    (
        "m002_run_and_event_indexes",
        (
            "CREATE INDEX runs_by_created_at ON runs(created_at, seq)",
            "CREATE INDEX runs_by_status ON runs(status, created_at)",
            "CREATE INDEX events_by_run ON events(run_id, seq)",
            "CREATE INDEX runs_by_parent ON runs(parent_run_id)",  # child runs are looked up by parent
            # A run id prefix (LIKE 'abc%') can use it whatever the database's collation.
            "CREATE INDEX runs_by_id_prefix ON runs(run_id text_pattern_ops)",
        ),
    ),
    (
        "m003_shared_texts",
        (
            """CREATE TABLE texts (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
                hash BYTEA NOT NULL,
                body BYTEA NOT NULL
            )""",
            "CREATE INDEX texts_by_run_and_hash ON texts(run_id, hash)",
        ),
    ),
    ("m004_run_owner", ("ALTER TABLE runs ADD COLUMN owner TEXT",)),
    (
        "m005_threads",
        (
            """CREATE TABLE thread_turns (
                run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
                idx INTEGER NOT NULL,
                role TEXT NOT NULL,
                content TEXT NOT NULL,
                tokens INTEGER,
                PRIMARY KEY (run_id, idx)
            )""",
            "CREATE INDEX runs_by_thread ON runs(thread, created_at)",
        ),
    ),
    ("m006_run_options", ("ALTER TABLE runs ADD COLUMN options TEXT",)),
    (
        "m007_run_queue",
        (
            """CREATE TABLE queue (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                run_id TEXT NOT NULL UNIQUE REFERENCES runs(run_id) ON DELETE CASCADE,
                thread TEXT,
                taken INTEGER NOT NULL DEFAULT 0,
                cancel INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE INDEX queue_by_thread ON queue(thread, seq)",
        ),
    ),
    # No table changes: event payloads may refer to lists stored once (see m008 in
    # core.store.sqlite_backend.migrations).
    ("m008_shared_lists", ()),
    ("m009_thread_turn_text", ("ALTER TABLE thread_turns ADD COLUMN shown TEXT",)),
    # No table changes: SQLite's texts index and its compressed values (see m010 in
    # core.store.sqlite_backend.migrations); PostgreSQL keeps its index and compresses values itself.
    ("m010_texts_by_hash", ()),
    # No table changes: SQLite's event kinds stored as codes (see m011 in core/store/sqlite_backend/migrations.py);
    # PostgreSQL stores them as they are, and reads either.
    ("m011_event_kind_codes", ()),
)


async def migrate(db: AsyncConnection[tuple[object, ...]], *, label: str, create: bool) -> list[str]:
    """Bring the schema behind ``db`` (in autocommit mode) up to date; the names applied now.

    With ``create`` False a database without flujo's tables is a ``StoreError`` (looking never creates a
    store). Raises ``StoreError`` when the schema holds someone else's ``runs`` table or was written by a
    newer flujo."""
    applied = await _applied(db)
    if applied is None and not create:
        raise StoreError(f"there is no run store in {label}", hint=f"flujo run creates it; or {ELSEWHERE_HINT}")
    if applied is not None and not _pending(applied, label=label):
        return []
    # The lock is taken before the transaction starts, not inside it: a transaction that started earlier
    # could still see the catalog as it was (a table another process created meanwhile would look absent).
    await db.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        return await _apply(db, label=label)
    finally:
        with contextlib.suppress(psycopg.Error):  # a lost connection: the server released the lock with it
            await db.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


async def _apply(db: AsyncConnection[tuple[object, ...]], *, label: str) -> list[str]:
    async with db.transaction():
        applied = await _applied(db)  # again, under the lock: another process may have migrated meanwhile
        if applied is None:
            if (await (await db.execute("SELECT to_regclass('runs')")).fetchone() or (None,))[0] is not None:
                raise StoreError(
                    f"{label} is not a flujo run store (it holds another program's runs table)",
                    hint="give flujo its own database, or a schema of its own (options=-csearch_path=...)",
                )
            await db.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION)")
            applied = []
        pending = _pending(applied, label=label)
        for name, statements in pending:
            for statement in statements:
                await db.execute(statement)
            await db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)", (name, time.time()))
    return [name for name, _ in pending]


async def _applied(db: AsyncConnection[tuple[object, ...]]) -> list[str] | None:
    """Names recorded in ``schema_migrations``, or None when the table does not exist."""
    found = await (await db.execute("SELECT to_regclass('schema_migrations')")).fetchone()
    if found is None or found[0] is None:
        return None
    return [str(row[0]) for row in await (await db.execute("SELECT name FROM schema_migrations")).fetchall()]


def _pending(applied: list[str], *, label: str) -> list[tuple[str, Sequence[LiteralString]]]:
    known = {name for name, _ in PG_MIGRATIONS}
    if any(name not in known for name in applied):
        raise StoreError(
            f"{label} was written by a newer flujo (schema {len(applied)} > {SCHEMA_VERSION})", hint="upgrade flujo"
        )
    done = set(applied)
    return [(name, statements) for name, statements in PG_MIGRATIONS if name not in done]


assert [name for name, _ in PG_MIGRATIONS] == [step.__name__ for step in MIGRATIONS], "one PostgreSQL DDL per migration"
