"""One write transaction on an aiosqlite connection: ``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK``.

``BEGIN IMMEDIATE`` takes the write lock up front, so a transaction that reads and then writes waits
for another process (up to the busy timeout) instead of failing at once with "database is locked" when
it upgrades from reading to writing, as a deferred ``BEGIN`` does in WAL mode. The connection must be
in autocommit mode (``isolation_level=None``) so that sqlite3 opens no transaction of its own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite


@asynccontextmanager
async def immediate(db: aiosqlite.Connection) -> AsyncIterator[aiosqlite.Connection]:
    """Run the block in one transaction: committed when it ends, rolled back on any exception.

    Cancellation included: aiosqlite runs statements in order on one thread, so a ``ROLLBACK`` sent
    after a cancelled statement still runs after it.
    """
    try:
        # BEGIN inside the try: when a cancellation interrupts the wait for it, it still runs later on
        # the connection's thread, and the ROLLBACK queued behind it must close that transaction.
        await db.execute("BEGIN IMMEDIATE")
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
