"""``OpenSessions``: what the tools of one run share (``core.ports.ToolSessions``), closed when the run ends."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


class OpenSessions:
    """Held values by key (an MCP server's session, ...), each with how to close it. The engine closes them
    when the run ends, in every case (finished, paused, failed, interrupted): ``aclose``."""

    def __init__(self) -> None:
        self._held: dict[str, Any] = {}
        self._closers: list[Callable[[], Any]] = []

    def get(self, key: str) -> Any:
        return self._held.get(key)

    def put(self, key: str, value: Any, close: Callable[[], Any]) -> None:
        self._held[key] = value
        self._closers.append(close)

    async def aclose(self) -> list[str]:
        """Close what was opened, newest first; each is closed even when another fails. What failed to close,
        one line each (the run's outcome stands: it is told, not raised)."""
        closers, self._closers = self._closers, []
        self._held.clear()
        problems: list[str] = []
        for close in reversed(closers):
            try:
                result = close()
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                problems.append(f"{type(exc).__name__}: {exc}")
        return problems
