"""A quick look at a run store, for shell completion: its newest runs, its threads, a run's steps and blueprint
file, read with one short-lived synchronous connection (``sqlite3``; ``psycopg`` for a PostgreSQL URI).

Invariants:

* **Only looks.** It never creates a store, never migrates one, never writes: a SQLite file is opened
  read-only (``mode=ro``); on PostgreSQL it sends only the ``SELECT`` s below. The columns it reads (``runs.run_id``,
  ``status``, ``pipeline_name``, ``created_at``, ``parent_run_id``, ``thread``, ``source``; ``steps.path``,
  ``name``, ``kind``, ``seq``) exist in every schema since ``m001``, so a store of an older flujo is read as it is.
* **Never fails.** A store that is missing, locked past a short wait, unreachable, damaged or not a flujo store
  gives nothing (``peek_store`` returns None; a query that fails returns no rows). A person pressing TAB must
  never see an error; the command itself, once run, says what is wrong.
* **Quick.** It imports nothing of the engine or of the async stores (``sqlite3`` is the one import for a
  SQLite file), and reads a bounded number of rows: completion costs milliseconds beyond Python's start.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from core.settings.location import describe, is_postgres

SQLITE_WAIT_S = 0.5
"""How long a look waits for a SQLite file another process holds in an exclusive lock (a WAL reader rarely
waits at all)."""
POSTGRES_CONNECT_S = 2
"""How long a look waits to connect to a PostgreSQL server (libpq's smallest useful timeout)."""

_RUNS = (
    "SELECT run_id, status, pipeline_name, created_at FROM runs WHERE parent_run_id IS NULL {where}"
    " ORDER BY created_at DESC, rowid DESC LIMIT ?"
)
_PREFIXED = "AND run_id >= ? AND run_id < ?"  # a prefix as a range: the primary key's index answers it
_THREADS = (
    "SELECT thread, COUNT(*), MAX(created_at) FROM runs WHERE thread IS NOT NULL"
    " GROUP BY thread ORDER BY MAX(created_at) DESC, thread LIMIT ?"
)
_RUN_IDS = "SELECT run_id FROM runs WHERE run_id >= ? AND run_id < ? ORDER BY run_id LIMIT 2"
_STEPS = "SELECT path, name, kind FROM steps WHERE run_id = ? ORDER BY seq LIMIT ?"
_SOURCE = "SELECT source FROM runs WHERE run_id = ?"
_LAST = "\U0010ffff"  # after every character: prefix .. prefix + _LAST holds the ids starting with prefix


@dataclass(frozen=True)
class PeekedRun:
    run_id: str
    status: str
    pipeline_name: str
    created_at: float


@dataclass(frozen=True)
class PeekedThread:
    name: str
    runs: int
    last_run_at: float


@dataclass(frozen=True)
class PeekedStep:
    path: str
    name: str
    kind: str


class _Reader(Protocol):
    def rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...

    def close(self) -> None: ...


class StorePeek:
    """An open look at one store (``peek_store``); close it (or use it as a context manager) when done."""

    def __init__(self, reader: _Reader) -> None:
        self._reader = reader

    def __enter__(self) -> StorePeek:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._reader.close()

    def runs(
        self,
        *,
        prefix: str = "",
        limit: int = 50,
        statuses: Sequence[str] | None = None,
        excluding: Sequence[str] = (),
    ) -> list[PeekedRun]:
        """The newest top-level runs (no sub-workflow's child run) whose id starts with ``prefix``, newest first;
        with ``statuses``, only runs in one of them; none in a status of ``excluding``."""
        where, params = "", []
        if prefix:
            where, params = _PREFIXED, [prefix, prefix + _LAST]
        if statuses is not None:
            where += f" AND status IN ({', '.join('?' for _ in statuses)})" if statuses else " AND 0 = 1"
            params += list(statuses)
        if excluding:
            where += f" AND status NOT IN ({', '.join('?' for _ in excluding)})"
            params += list(excluding)
        rows = self._rows(_RUNS.format(where=where), [*params, limit])
        return [PeekedRun(str(r[0]), str(r[1]), str(r[2]), float(r[3])) for r in rows]

    def threads(self, *, limit: int = 100) -> list[PeekedThread]:
        """The threads, the one with the latest run first."""
        return [PeekedThread(str(r[0]), int(r[1]), float(r[2])) for r in self._rows(_THREADS, [limit])]

    def run_id(self, prefix: str) -> str | None:
        """The run whose id is or starts with ``prefix``, when exactly one does."""
        if not prefix:
            return None
        rows = self._rows(_RUN_IDS, [prefix, prefix + _LAST])
        return str(rows[0][0]) if len(rows) == 1 else None

    def steps(self, run_id: str, *, limit: int = 10_000) -> list[PeekedStep]:
        """The steps run ``run_id`` recorded, in the order it recorded them."""
        return [PeekedStep(str(r[0]), str(r[1]), str(r[2])) for r in self._rows(_STEPS, [run_id, limit])]

    def source(self, run_id: str) -> str | None:
        """The blueprint file of run ``run_id``, as it recorded it."""
        rows = self._rows(_SOURCE, [run_id])
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

    def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._reader.rows(sql, params)


def peek_store(uri: str) -> StorePeek | None:
    """A look at the store ``uri`` names (a file path, ``sqlite:///...`` or ``postgresql://...``); None when
    there is none to look at (the module docstring: it never fails)."""
    reader = _postgres(uri) if is_postgres(uri) else _sqlite(uri)
    return None if reader is None else StorePeek(reader)


class _SqliteReader:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        try:
            return list(self._db.execute(sql, tuple(params)).fetchall())
        except sqlite3.Error:  # not a flujo store, damaged, or locked too long: nothing to show
            return []

    def close(self) -> None:
        self._db.close()


def _sqlite(uri: str) -> _SqliteReader | None:
    path = describe(uri)
    if path == ":memory:" or "://" in path or not Path(path).is_file():
        return None
    try:
        db = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=SQLITE_WAIT_S)
    except sqlite3.Error:
        return None
    return _SqliteReader(db)


class _PostgresReader:
    def __init__(self, db: Any, errors: type[Exception]) -> None:
        self._db = db
        self._errors = errors

    def rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        # The queries above for PostgreSQL: %s parameters, and its ``seq`` for SQLite's ``rowid``.
        query = sql.replace("?", "%s").replace("rowid", "seq")
        try:
            return list(self._db.execute(query, tuple(params)).fetchall())
        except self._errors:
            return []

    def close(self) -> None:
        with contextlib.suppress(self._errors):  # a session the server already ended has nothing to close
            self._db.close()


def _postgres(uri: str) -> _PostgresReader | None:
    try:
        import psycopg
    except ImportError:  # the postgres extra is not installed: the command itself will say so
        return None
    try:
        db = psycopg.connect(uri, connect_timeout=POSTGRES_CONNECT_S, autocommit=True)
    except (psycopg.Error, ValueError):  # unreachable, refused, or not a URI psycopg reads
        return None
    return _PostgresReader(db, psycopg.Error)
