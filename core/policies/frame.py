"""The execution frame: what every step policy shares during one run.

It holds the injected ports (store, human, reporter), the journal of steps already committed by an
earlier attempt of this run (resume replays them instead of executing them again), the usage meter and
the redactor. Policies receive it explicitly; there is no global state.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.context import RunContext
from core.errors import LimitReached
from core.ports import HumanInput, Reporter, RunStore, StepRecord, StepStatus, TraceEvent
from core.redaction import Redactor
from core.steps import Limits
from core.usage import ZERO_USAGE, Usage


@dataclass
class Frame:
    run_id: str
    store: RunStore
    human: HumanInput
    reporter: Reporter
    redactor: Redactor
    limits: Limits = field(default_factory=Limits)
    journal: Mapping[str, StepRecord] = field(default_factory=dict)
    usage: Usage = ZERO_USAGE
    failed_path: str | None = None
    replays: int = 0  # leaf steps replayed from the journal instead of executed

    def event(self, kind: str, path: str, payload: Mapping[str, Any]) -> TraceEvent:
        """A trace event with secrets masked, ready to store."""
        return TraceEvent(kind=kind, path=path, payload=self.redactor.value(dict(payload)), ts=time.time())

    def replayed(self, path: str) -> StepRecord | None:
        """The committed result of ``path`` from an earlier attempt of this run, if any."""
        record = self.journal.get(path)
        return record if record is not None and record.status == "completed" else None

    async def commit(
        self,
        *,
        path: str,
        name: str,
        kind: str,
        status: StepStatus,
        started: float,
        input: Any = None,
        output: Any = None,
        error: str | None = None,
        usage: Usage = ZERO_USAGE,
        events: Sequence[TraceEvent] = (),
    ) -> StepRecord:
        """Store one step result with its events (one transaction) and tell the reporter."""
        record = StepRecord(
            run_id=self.run_id,
            path=path,
            name=name,
            kind=kind,
            status=status,
            input=input,
            output=output,
            error=error,
            started_at=started,
            duration_s=max(0.0, time.time() - started),
            usage=usage,
        )
        await self.store.record_step(record, events)
        if status == "failed" and self.failed_path is None:
            self.failed_path = path
        self.reporter.step_finished(record)
        return record

    def charge(self, usage: Usage) -> None:
        """Add a call's usage to the run total; LimitReached when a run-wide limit is now exceeded."""
        self.usage = self.usage + usage
        limits = self.limits
        if limits.max_tokens is not None and self.usage.total_tokens > limits.max_tokens:
            raise LimitReached(
                f"token limit reached: {self.usage.total_tokens} tokens used, limit is {limits.max_tokens}"
            )
        if (
            limits.max_cost_usd is not None
            and self.usage.cost_usd is not None
            and self.usage.cost_usd > limits.max_cost_usd
        ):
            raise LimitReached(
                f"cost limit reached: ${self.usage.cost_usd:.4f} spent, limit is ${limits.max_cost_usd:.4f}"
            )


def scope(ctx: RunContext, previous: Any, *, iteration: int | None = None) -> dict[str, Any]:
    """Variables for templates and expressions at this point of the run."""
    variables: dict[str, Any] = {
        "context": ctx.view(),
        "previous_step": previous,
        "steps": ctx.steps,
        "initial_prompt": ctx.initial_prompt,
    }
    if iteration is not None:
        variables["iteration"] = iteration
    return variables


def child_path(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name
