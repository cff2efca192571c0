"""Calling a user's blocking function from the event loop without tying the process to it.

``asyncio.to_thread`` runs it in the loop's default executor, whose threads ``asyncio.run`` joins on the way
out: a Ctrl-C during a ten-minute ``python:`` agent would then wait those ten minutes before the run is
reported interrupted and the process exits. ``call_detached`` runs it in a daemon thread instead: when the
awaiting task is cancelled the call is abandoned (its result, if it ever comes, is dropped) and the process
can end at once. The function cannot be stopped from outside; it only stops mattering.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable
from typing import Any


async def call_detached(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a daemon thread (with this task's context variables); its result or exception."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():  # cancelled meanwhile: nobody waits for this result
            outcome()

    def target() -> None:
        report: Callable[[], None]
        try:
            report = functools.partial(future.set_result, context.run(function, *args))
        except BaseException as exc:  # handed to the awaiting task, which decides what it means
            report = functools.partial(future.set_exception, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run ended without this result
            loop.call_soon_threadsafe(settle, report)

    threading.Thread(target=target, name=f"flujo:{getattr(function, '__name__', 'call')}", daemon=True).start()
    return await future
