"""``WriterConnection``: the connection ``PostgresStore`` sends its one-statement writes on, which waits for a
prompt reply on the event loop's own thread, as ``SqliteStore`` commits there (its ``Writer``).

psycopg's asynchronous wait hands each wait to the event loop: it registers the socket with the loop's
selector, makes a future and a timer, suspends the whole chain of coroutines up to the task, and resumes
them when the loop's next rounds find the socket readable and run the callback, then the task. For a step's
statement, whose reply a server on the same machine sends within a fraction of a millisecond, that
bookkeeping cost the client more CPU than the statement's own encoding (docs/performance.md, issue 36 item 2).
So this connection first waits on its socket itself, with ``poll`` and a short deadline (``PROMPT_WAIT_MS``),
the loop's thread blocked meanwhile as it is while SQLite commits; only a reply later than that is waited
for the asynchronous way, from where the wait stood.

Invariants:

* What is sent and read, and when a statement is committed, is psycopg's business and unchanged: only how
  this process sleeps until the socket is ready differs. The same generator is driven to its end either way.
* The event loop's thread is blocked at most ``PROMPT_WAIT_MS`` per wait. A reply that took longer (a server
  far away, or busy) sends the next ``SKIP_AFTER_LATE`` waits straight to the loop: a distant server costs
  the loop one such block in that many statements, and its writes the CPU they cost before.
* A wait with a timeout (psycopg's own, when it cancels a statement) is always the loop's.
"""

from __future__ import annotations

import select
from typing import Any

import psycopg
from psycopg.abc import PQGen
from psycopg.waiting import READY_R, READY_RW, READY_W, WAIT_R, WAIT_W, Ready, Wait

PROMPT_WAIT_MS = 2
"""How long the loop's thread waits on the socket itself, per wait, before handing the wait to the loop."""
SKIP_AFTER_LATE = 32
"""How many waits after a late reply go straight to the event loop."""

_IN = select.POLLIN | select.POLLERR | select.POLLHUP
_OUT = select.POLLOUT | select.POLLERR | select.POLLHUP
_READY = {(True, False): READY_R, (False, True): READY_W, (True, True): READY_RW, (False, False): Ready.NONE}


class WriterConnection(psycopg.AsyncConnection[tuple[Any, ...]]):
    """An ``AsyncConnection`` whose waits first poll its socket on the loop's thread (see the module)."""

    _poller: Any = None  # select.poll, registered for the socket _polled (made at the first wait)
    _polled = -1
    _skip = 0  # waits left to send straight to the loop after a late reply

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
            self._poller.register(fileno, (_IN if state & WAIT_R else 0) | (_OUT if state & WAIT_W else 0))
            events = self._poller.poll(PROMPT_WAIT_MS)
            if not events:
                break
            happened = events[0][1]
            try:
                state = gen.send(_READY[bool(happened & _IN), bool(happened & _OUT)])
            except StopIteration as done:
                return done.value
        self._skip = SKIP_AFTER_LATE
        return await super().wait(_resumed(state, gen), interval, timeout)


def _resumed(state: Wait, gen: PQGen[Any]) -> PQGen[Any]:
    """``gen``, already started and waiting for ``state``, as a generator that starts there."""
    while True:
        ready = yield state
        try:
            state = gen.send(ready)
        except StopIteration as done:
            return done.value
