"""How a composite step that fails commits itself: one failed record with the error, then the error to raise."""

from __future__ import annotations

from typing import Any

from core.errors import FlujoError
from core.policies.frame import Frame, step_error
from core.steps import ConditionalStep, MapStep


async def record_failure(
    step: ConditionalStep | MapStep, path: str, started: float, data: Any, exc: Exception, frame: Frame
) -> FlujoError:
    """Commit ``step`` as failed; returns the FlujoError to raise (``exc`` itself when it is one)."""
    error = step_error(exc, f"{step.kind} {step.name!r}")
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="failed", started=started,
        input=data, error=error.message, failure=error,
    )  # fmt: skip
    return error
