"""The connection ``SqliteStore`` writes values through: on the event loop's own thread, waiting for another
process's write lock without blocking the loop.

A step's write (``core.store.sqlite_backend.batch``) is a few statements and a ``COMMIT``, a fraction of a
millisecond; sent to aiosqlite's thread and back it cost two thread hand-overs and their wake-ups besides
(docs/performance.md). So the writes that store values run here, synchronously, on a second connection of
the store to its file; the store's other statements (reads, claims, queue, pruning) stay on aiosqlite's.

Invariants:

* Only the event loop's thread uses the connection (sqlite3 checks it), and only while holding the store's
  lock: a transaction is never interleaved with another of the same store.
* The connection never waits inside SQLite (its busy timeout is 0). When another writer holds the lock,
  ``BEGIN IMMEDIATE`` fails at once with "locked"; the transaction is rolled back (nothing was written) and
  tried again after an ``asyncio.sleep`` growing from 1 to 50 ms, until ``timeout_s`` has passed — then the
  last "locked" error is raised, as aiosqlite's connection raises it after its busy timeout. The loop runs
  other tasks meanwhile; cancelling the wait leaves nothing half done. ``waited`` counts the transactions
  that had to wait (what ``flujo worker`` reports as the file's contention).
* Each attempt is the whole transaction: ``work`` must be safe to run again after a rollback (a ``Batch``
  with a new ``Pending`` each time is).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from core.store.sqlite_backend.transaction import locked, run_transaction

T = TypeVar("T")

_FIRST_WAIT_S = 0.001
_LONGEST_WAIT_S = 0.05


class Writer:
    """A connection to the store's file for writes done on the event loop's thread."""

    def __init__(self, target: str, *, uri: bool) -> None:
        self._conn = sqlite3.connect(target, isolation_level=None, timeout=0, uri=uri)
        self.waited = 0  # transactions that found another process holding the lock and waited for it
        try:
            self._conn.execute("PRAGMA busy_timeout = 0")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute("PRAGMA synchronous = NORMAL")  # per connection; WAL is the file's already
        except BaseException:
            self._conn.close()
            raise

    async def run(self, work: Callable[[sqlite3.Connection], T], *, timeout_s: float) -> T:
        """``work(connection)`` in one ``BEGIN IMMEDIATE`` … ``COMMIT``, tried again while another process holds
        the write lock, for at most ``timeout_s`` seconds."""
        deadline: float | None = None
        wait = _FIRST_WAIT_S
        while True:
            try:
                return run_transaction(self._conn, work)
            except sqlite3.OperationalError as exc:
                if not locked(exc):
                    raise
                now = time.monotonic()
                deadline = now + timeout_s if deadline is None else deadline
                if now >= deadline:
                    raise
                if wait == _FIRST_WAIT_S:
                    self.waited += 1
                await asyncio.sleep(min(wait, deadline - now))
                wait = min(wait * 2, _LONGEST_WAIT_S)

    def close(self) -> None:
        self._conn.close()
