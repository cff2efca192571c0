"""One write transaction on an aiosqlite connection: ``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK``.

``BEGIN IMMEDIATE`` takes the write lock up front, so a transaction that reads and then writes waits
for another process (up to the busy timeout) instead of failing at once with "database is locked" when
it upgrades from reading to writing, as a deferred ``BEGIN`` does in WAL mode. The connection must be
in autocommit mode (``isolation_level=None``) so that sqlite3 opens no transaction of its own. Once it
holds the lock, nothing else in the transaction waits for one (WAL), so waiting longer than the
connection's busy timeout is trying ``BEGIN IMMEDIATE`` again (``immediate``'s ``wait_s``).

``in_one_call`` runs a whole transaction as one call on the connection's thread (one round trip from the
event loop instead of one per statement). It uses aiosqlite's ``Connection._execute``, the one private
name we rely on: aiosqlite has no public way to run a function on its thread, and the version is pinned
(pyproject.toml) so a change of it shows in the store's tests.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import aiosqlite

T = TypeVar("T")

_RETRY_S = 0.05  # between two tries of BEGIN IMMEDIATE, each of which waited the busy timeout already


def locked(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED, extended codes included: another connection holds the lock."""
    return exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


@asynccontextmanager
async def immediate(db: aiosqlite.Connection, *, wait_s: float = 0.0) -> AsyncIterator[aiosqlite.Connection]:
    """Run the block in one transaction: committed when it ends, rolled back on any exception. While another
    connection holds the write lock, ``BEGIN IMMEDIATE`` is tried again until ``wait_s`` seconds have passed
    (each try waits the connection's busy timeout on its thread, the loop stays free); then the last
    "locked" error is raised.

    Cancellation included: aiosqlite runs statements in order on one thread, so a ``ROLLBACK`` sent
    after a cancelled statement still runs after it.
    """
    deadline = time.monotonic() + wait_s
    try:
        # BEGIN inside the try: when a cancellation interrupts the wait for it, it still runs later on
        # the connection's thread, and the ROLLBACK queued behind it must close that transaction.
        while True:
            try:
                await db.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as exc:
                left = deadline - time.monotonic()
                if not locked(exc) or left <= 0:
                    raise
                await asyncio.sleep(min(_RETRY_S, left))
        yield db
        await db.execute("COMMIT")
    except BaseException:
        await _rollback(db)
        raise


async def _rollback(db: aiosqlite.Connection) -> None:
    try:
        await db.execute("ROLLBACK")
    except sqlite3.OperationalError:
        # "no transaction is active": BEGIN itself failed (locked), SQLite already rolled back after
        # the error, or a COMMIT sent before a cancellation went through. Nothing is left to undo.
        if db.in_transaction:
            raise


def run_transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """``work(conn)`` inside ``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception, on the
    calling thread (the connection's own)."""
    cursor = conn.cursor()  # one for both statements (Connection.execute makes a cursor per statement)
    cursor.execute("BEGIN IMMEDIATE")
    try:
        result = work(conn)
        cursor.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


async def in_one_call(db: aiosqlite.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """``work(connection)`` inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any exception), as one
    call on the connection's thread.

    Cancelling the caller does not interrupt it: the transaction still commits or rolls back as a whole,
    and statements sent afterwards run after it (the thread runs calls in order).
    """

    def transaction() -> T:
        return run_transaction(db._conn, work)  # the sqlite3 connection, on its own thread (module docstring)

    result: T = await db._execute(transaction)  # type: ignore[no-untyped-call]  # private, see the module docstring
    return result
