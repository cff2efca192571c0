"""Run stores: where runs, their steps and their trace events are kept.

``SqliteStore`` is the durable store (one SQLite file, WAL mode); ``MemoryStore`` keeps everything in
memory with the same behaviour, for tests and Python users. ``open_store(uri)`` is an async factory:
``store = await open_store(".flujo/flujo.db")`` returns an open, migrated ``SqliteStore`` that the caller
closes (``await store.close()``, or ``async with await open_store(uri) as store``).
"""

from typing import TYPE_CHECKING

from core.store.memory import MemoryStore
from core.store.migrations import SCHEMA_VERSION
from core.store.sqlite import SqliteStore, open_store

__all__ = ["SCHEMA_VERSION", "MemoryStore", "SqliteStore", "open_store"]

if TYPE_CHECKING:  # mypy checks both stores against the protocol they implement
    from core.ports import RunStore

    _sqlite: RunStore = SqliteStore(":memory:")
    _memory: RunStore = MemoryStore()
