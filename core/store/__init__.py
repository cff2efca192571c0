"""Run stores: where runs, their steps and their trace events are kept.

``SqliteStore`` is the durable store (one SQLite file, WAL mode); ``PostgresStore`` (in
``core.store.postgres_backend.store``, imported only when used: it needs the ``postgres`` extra) keeps the same on a
PostgreSQL database shared by many processes and machines; ``MemoryStore`` keeps everything in
memory with the same behaviour, for tests and Python users. ``open_store(uri)`` is an async factory:
``store = await open_store(".flujo/flujo.db")`` returns an open, migrated store that the caller
closes (``await store.close()``, or ``async with await open_store(uri) as store``).

``peek_store(uri)`` is a quick look at a store, read-only and synchronous, for shell completion
(``core.store.peek``): it loads neither the stores above nor anything of the engine.

Every name is imported when first asked for, so that ``core.store.peek`` (or a row module) costs only itself.
"""

from typing import TYPE_CHECKING

from core.front_door import lazy_exports

if TYPE_CHECKING:
    from core.store.memory import MemoryStore
    from core.store.opening import open_store
    from core.store.peek import StorePeek, peek_store
    from core.store.sqlite_backend.migrations import SCHEMA_VERSION
    from core.store.sqlite_backend.store import SqliteStore

__all__ = ["SCHEMA_VERSION", "MemoryStore", "SqliteStore", "open_store"]

if TYPE_CHECKING:  # mypy checks the stores against the protocol they implement
    from core.ports import RunStore
    from core.store.postgres_backend.store import PostgresStore

    _sqlite: RunStore = SqliteStore(":memory:")
    _memory: RunStore = MemoryStore()
    _postgres: RunStore = PostgresStore("postgresql://")

if TYPE_CHECKING:  # what flujo_cli takes from the store (the block of _WHERE below)
    from core.settings.location import ELSEWHERE_HINT, describe, is_postgres, project_state_uri
    from core.store.rows.claims import process_label
    from core.store.rows.queue_rows import RUNNABLE, Taken
    from core.store.rows.transfer import copy_runs
    from core.store.sqlite_backend.store import OpenMode

# Imported when first asked for, so that opening a store costs no more than before.
_WHERE = {
    "MemoryStore": "core.store.memory",
    "SCHEMA_VERSION": "core.store.sqlite_backend.migrations",
    "SqliteStore": "core.store.sqlite_backend.store",
    "open_store": "core.store.opening",
    # A quick, read-only look for shell completion (flujo_cli.completion).
    "StorePeek": "core.store.peek",
    "peek_store": "core.store.peek",
    # What flujo_cli takes from the store (it imports core only through its front doors): the PostgreSQL
    # store (it needs the ``postgres`` extra), how a store is opened and named to a person, the copy between
    # stores (``flujo store copy``), and three deliberate exports of the queue and the claims that ``flujo
    # worker`` shows or checks: ``RUNNABLE``, the statuses of a run a worker executes when it takes it from
    # the queue, ``Taken``, what taking one gives it, and ``process_label()``, how this process is named as
    # a run's owner.
    "ELSEWHERE_HINT": "core.settings.location",
    "OpenMode": "core.store.sqlite_backend.store",
    "PostgresStore": "core.store.postgres_backend.store",
    "RUNNABLE": "core.store.rows.queue_rows",
    "Taken": "core.store.rows.queue_rows",
    "copy_runs": "core.store.rows.transfer",
    "describe": "core.settings.location",
    "is_postgres": "core.settings.location",
    "project_state_uri": "core.settings.location",
    "process_label": "core.store.rows.claims",
}
__all__ += [  # flujo_cli (the block of _WHERE)
    "ELSEWHERE_HINT",
    "RUNNABLE",
    "OpenMode",
    "PostgresStore",
    "StorePeek",
    "Taken",
    "copy_runs",
    "describe",
    "is_postgres",
    "peek_store",
    "process_label",
    "project_state_uri",
]

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())
