"""``WriterConnection``: the connection ``PostgresStore`` sends its one-statement writes on, which waits for a
prompt reply on the event loop's own thread, as ``SqliteStore`` commits there (its ``Writer``).

psycopg's asynchronous wait hands each wait to the event loop: it registers the socket with the loop's
selector, makes a future and a timer, suspends the whole chain of coroutines up to the task, and resumes
them when the loop's next rounds find the socket readable and run the callback, then the task. For a step's
statement, whose reply a server on the same machine sends within a fraction of a millisecond, that
bookkeeping cost the client about 120,000 instructions a statement, a tenth of a conversational iteration
(callgrind; docs/performance.md, issue 36 item 2).
So this connection first waits on its socket itself, with ``poll`` and a short deadline (``PROMPT_WAIT_MS``),
the loop's thread blocked meanwhile as it is while SQLite commits; only a reply later than that is waited
for the asynchronous way, from where the wait stood.

Invariants:

* What is sent and read, and when a statement is committed, is psycopg's business and unchanged: only how
  this process sleeps until the socket is ready differs. The same generator is driven to its end either way.
* The event loop's thread is blocked at most ``PROMPT_WAIT_MS`` per wait. ``LATE_IN_A_ROW`` late replies in a
  row (a server far away) send the next ``SKIP_AFTER_LATE`` waits straight to the loop: a distant server
  costs the loop one such block in that many statements, and its writes the CPU they cost before. A late
  reply now and then (a busy machine) costs only its own wait.
* A wait with a timeout (psycopg's own, when it cancels a statement) is always the loop's.
* ``execute`` reuses one cursor: the store reads a statement's rows before it sends the next.
"""

from __future__ import annotations

import select
from selectors import EVENT_READ, EVENT_WRITE
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import AsyncCursor
from psycopg.pq import Format

if TYPE_CHECKING:  # psycopg.abc's names of psycopg 3.3 (the extra allows 3.2)
    from psycopg.abc import Params, PQGen, QueryNoTemplate
    from psycopg.waiting import Wait

PROMPT_WAIT_MS = 2
"""How long the loop's thread waits on the socket itself, per wait, before handing the wait to the loop."""
LATE_IN_A_ROW = 3
"""After this many late replies in a row, the next ``SKIP_AFTER_LATE`` waits go straight to the event loop."""
SKIP_AFTER_LATE = 32

BINARY, TEXT = Format.BINARY, Format.TEXT
_IN = select.POLLIN | select.POLLERR | select.POLLHUP
_OUT = select.POLLOUT | select.POLLERR | select.POLLHUP
# psycopg's wait states and ready states are the selectors' events (its ``Wait`` and ``Ready``): read, write, both.
_WAIT_R, _WAIT_W = EVENT_READ, EVENT_WRITE
_READY = {
    (True, False): EVENT_READ,
    (False, True): EVENT_WRITE,
    (True, True): EVENT_READ | EVENT_WRITE,
    (False, False): 0,
}


class WriterConnection(psycopg.AsyncConnection[tuple[Any, ...]]):
    """An ``AsyncConnection`` whose waits first poll its socket on the loop's thread (see the module)."""

    _poller: Any = None  # select.poll, registered for the socket _polled (made at the first wait)
    _polled = -1
    _late = 0  # late replies in a row
    _skip = 0  # waits left to send straight to the loop after LATE_IN_A_ROW late replies
    _cursor: AsyncCursor[tuple[Any, ...]] | None = None  # the one ``execute`` gives (see there)

    async def execute(  # type: ignore[override]  # one signature: the store sends no templates
        self, query: QueryNoTemplate, params: Params | None = None, *, prepare: bool | None = None, binary: bool = False
    ) -> AsyncCursor[tuple[Any, ...]]:
        """As ``AsyncConnection.execute``, on one cursor each time: a new one cost each statement its adapters'
        map and transformer, and the transformer its dumpers. The store reads a statement's rows before it
        sends the next (each write holds the store's lock), so no cursor is read after the next ``execute``."""
        self._check_connection_ok()
        cursor = self._cursor
        if cursor is None or cursor.closed:
            cursor = self._cursor = self.cursor()
        cursor.format = BINARY if binary else TEXT
        return await cursor.execute(query, params, prepare=prepare)

    async def wait(self, gen: PQGen[Any], interval: float = 0.1, timeout: float | None = None) -> Any:
        if timeout is not None or self._skip:
            if self._skip:
                self._skip -= 1
            return await super().wait(gen, interval, timeout)
        try:
            state = next(gen)
        except StopIteration as done:
            return done.value
        fileno = self.pgconn.socket
        if self._polled != fileno:
            self._poller, self._polled = select.poll(), fileno
        while True:
            self._poller.register(fileno, (_IN if state & _WAIT_R else 0) | (_OUT if state & _WAIT_W else 0))
            events = self._poller.poll(PROMPT_WAIT_MS)
            if not events:
                self._late += 1
                if self._late >= LATE_IN_A_ROW:
                    self._skip = SKIP_AFTER_LATE
                return await super().wait(_resumed(state, gen), interval, timeout)
            self._late = 0
            happened = events[0][1]
            try:
                state = gen.send(_READY[bool(happened & _IN), bool(happened & _OUT)])
            except StopIteration as done:
                return done.value


def _resumed(state: Wait, gen: PQGen[Any]) -> PQGen[Any]:
    """``gen``, already started and waiting for ``state``, as a generator that starts there."""
    while True:
        ready = yield state
        try:
            state = gen.send(ready)
        except StopIteration as done:
            return done.value
