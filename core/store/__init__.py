"""Run stores: where runs, their steps and their trace events are kept.

``SqliteStore`` is the durable store (one SQLite file, WAL mode); ``PostgresStore`` (in
``core.store.postgres_backend.store``, imported only when used: it needs the ``postgres`` extra) keeps the same on a
PostgreSQL database shared by many processes and machines; ``MemoryStore`` keeps everything in
memory with the same behaviour, for tests and Python users. ``open_store(uri)`` is an async factory:
``store = await open_store(".flujo/flujo.db")`` returns an open, migrated store that the caller
closes (``await store.close()``, or ``async with await open_store(uri) as store``).
"""

from typing import TYPE_CHECKING

from core.store.memory import MemoryStore
from core.store.opening import open_store
from core.store.sqlite_backend.migrations import SCHEMA_VERSION
from core.store.sqlite_backend.store import SqliteStore

__all__ = ["SCHEMA_VERSION", "MemoryStore", "SqliteStore", "open_store"]

if TYPE_CHECKING:  # mypy checks the stores against the protocol they implement
    from core.ports import RunStore
    from core.store.postgres_backend.store import PostgresStore

    _sqlite: RunStore = SqliteStore(":memory:")
    _memory: RunStore = MemoryStore()
    _postgres: RunStore = PostgresStore("postgresql://")
