"""How a composite step that fails commits itself: one failed record with the error (and the event saying how
it ended, when it has one), then the error to raise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from core.model.errors import FlujoError
from core.model.events import KnownEvent
from core.policies.frame import Frame, step_error


class _Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...


async def record_failure(
    step: _Named,
    path: str,
    started: float,
    data: Any,
    exc: Exception,
    frame: Frame,
    *,
    ended: Callable[[str], KnownEvent] | None = None,
) -> FlujoError:
    """Commit ``step`` as failed, with the event ``ended(message)`` makes of the error's message when given;
    returns the FlujoError to raise (``exc`` itself when it is one)."""
    error = step_error(exc, f"{step.kind} {step.name!r}")
    events = [] if ended is None else [frame.event(path, ended(error.message))]
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="failed", started=started,
        input=data, error=error.message, events=events, failure=error,
    )  # fmt: skip
    return error
