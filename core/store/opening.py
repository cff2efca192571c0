"""``open_store``: the run store a state URI names, opened. A file path or ``sqlite:///`` URI is a
``SqliteStore``; a ``postgresql://`` (or ``postgres://``) URI a ``PostgresStore``, whose driver (psycopg,
the ``postgres`` extra) is imported only then, so the SQLite store never needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from core.model.errors import StoreError
from core.settings.location import is_postgres
from core.store.sqlite_backend import files
from core.store.sqlite_backend.store import OpenMode, SqliteStore

if TYPE_CHECKING:
    from core.settings.config import PostgresSettings, SqliteSettings
    from core.store.postgres_backend.store import PostgresStore


async def open_store(
    uri: str,
    *,
    mode: OpenMode = "create",
    postgres: PostgresSettings | None = None,
    sqlite: SqliteSettings | None = None,
) -> SqliteStore | PostgresStore:
    """Open (creating and migrating as needed) the store at ``uri`` and return it; close it when done.
    ``mode="existing"`` or ``"read"`` never creates it (see ``SqliteStore``; on PostgreSQL both refuse a
    database without flujo's tables). ``postgres`` holds the pool and connection settings of a PostgreSQL
    store (``Settings.postgres``), ``sqlite`` how long a SQLite store waits for another process's write lock
    (``Settings.sqlite``).

    ``uri`` is a file path (``.flujo/flujo.db``, ``~`` expanded), ``sqlite:///relative/path.db``,
    ``sqlite:////absolute/path.db``, ``:memory:``, or ``postgresql://user:password@host:port/database``.
    Usage::

        store = await open_store(settings.state_uri, postgres=settings.postgres)
        try: ...
        finally: await store.close()

    or ``async with await open_store(uri) as store: ...``.

    Cancelled while opening (Ctrl-C as a command starts), it lets the opening finish, closes the store, then
    raises: no connection (nor its thread, which would call into a closed event loop) outlives the loop.
    """
    opening = asyncio.ensure_future(_open(uri, mode=mode, postgres=postgres, sqlite=sqlite))
    try:
        return await asyncio.shield(opening)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # an opening that failed closed what it had opened
            await (await opening).close()
        raise


async def _open(
    uri: str, *, mode: OpenMode, postgres: PostgresSettings | None, sqlite: SqliteSettings | None
) -> SqliteStore | PostgresStore:
    if is_postgres(uri):
        try:
            from core.store.postgres_backend.store import PostgresStore
        except ImportError as exc:
            raise StoreError(
                "the run store is on PostgreSQL, but PostgreSQL support is not installed",
                hint="install it with: pip install 'flujo-runner[postgres]'",
            ) from exc
        return await PostgresStore(uri, create=mode == "create", settings=postgres).open()
    busy_timeout_s = sqlite.busy_timeout_s if sqlite is not None else None
    return await SqliteStore(files.path_from_uri(uri), mode=mode, busy_timeout_s=busy_timeout_s).open()
