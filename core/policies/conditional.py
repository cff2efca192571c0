"""The conditional policy: choose one branch by the value of the condition, run it, record which."""

from __future__ import annotations

import time
from typing import Any

from core.context import RunContext
from core.model.errors import ControlSignal, StepFailed
from core.model.events import BranchTaken
from core.policies.body import BodyRunner
from core.policies.context_writes import record_output
from core.policies.failure import record_failure
from core.policies.frame import Frame, child_path, scope
from core.steps.kinds import ConditionalStep


def branch_key(value: Any) -> str:
    """Branch keys are strings; a boolean condition matches 'true'/'false'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def run_conditional(
    step: ConditionalStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner
) -> Any:
    frame.reporter.step_started(path, step.name, step.kind)
    started = time.time()
    try:
        key = branch_key(step.condition(scope(ctx, data)))
        branches = dict(step.branches)
        chosen = branches.get(key)
        if chosen is None and step.default_branch is not None:
            chosen, key = step.default_branch, "default"
        if chosen is None:
            raise StepFailed(
                f"conditional {step.name!r}: the condition gave {key!r}, which matches no branch "
                f"({', '.join(branches) or 'none'})",
                step=step.name,
                hint="add a branch for that value or a default_branch",
            )
        output = await body(chosen, data, ctx, child_path(path, key), frame)
    except ControlSignal:
        raise
    except Exception as exc:  # the body's errors are FlujoErrors already; a hook's may be anything
        error = await record_failure(step, path, started, data, exc, frame)
        if error is exc:
            raise
        raise error from exc
    record_output(ctx, step.name, output)
    event = frame.event(path, BranchTaken(key, step.condition_description))
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=data, output=output, events=[event],
    )  # fmt: skip
    return output
