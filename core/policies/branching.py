"""Conditional and map policies: choose one branch by a value; run a body once per item."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from core.context import RunContext
from core.errors import ControlSignal, FlujoError, StepFailed
from core.policies.body import BodyRunner
from core.policies.context_writes import record_output
from core.policies.frame import Frame, child_path, scope, step_error
from core.steps import ConditionalStep, MapStep


async def _record_failure(
    step: ConditionalStep | MapStep, path: str, started: float, data: Any, exc: Exception, frame: Frame
) -> FlujoError:
    """Commit ``step`` as failed; returns the FlujoError to raise (``exc`` itself when it is one)."""
    error = step_error(exc, f"{step.kind} {step.name!r}")
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="failed", started=started,
        input=data, error=error.message, failure=error,
    )  # fmt: skip
    return error


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
        error = await _record_failure(step, path, started, data, exc, frame)
        if error is exc:
            raise
        raise error from exc
    record_output(ctx, step.name, output)
    event = frame.event("conditional.branch", path, {"branch": key, "condition": step.condition_description})
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=data, output=output, events=[event],
    )  # fmt: skip
    return output


async def run_map(step: MapStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner) -> Any:
    """Run the body once per item, each on an isolated copy adopted when it succeeds (an item that stops
    part-way keeps only the thread turns it said: ``RunContext.keep_said``)."""
    frame.reporter.step_started(path, step.name, step.kind)
    started = time.time()
    item_ctx = ctx
    try:
        items = step.over.evaluate(scope(ctx, data))
        if isinstance(items, dict):
            items = list(items.values())
        if not isinstance(items, list | tuple):
            raise StepFailed(
                f"map {step.name!r}: {step.over.source!r} gave {type(items).__name__}, not a list",
                step=step.name,
                hint="map.over must evaluate to a list, e.g. previous_step or context.scratchpad.todo",
            )
        if step.init is not None:
            step.init(ctx, data)
        results = []
        for index, item in enumerate(items):
            item_ctx = ctx.isolate()
            results.append(await body(step.body, item, item_ctx, child_path(path, str(index)), frame))
            ctx.adopt(item_ctx)
        output: Any = step.finalize(results, ctx) if step.finalize is not None else results
    except (ControlSignal, asyncio.CancelledError):  # a pause, a limit, Ctrl-C: what was said stays said
        ctx.keep_said([item_ctx])
        raise
    except Exception as exc:  # the body's errors are FlujoErrors already; a hook's may be anything
        ctx.keep_said([item_ctx])
        error = await _record_failure(step, path, started, data, exc, frame)
        if error is exc:
            raise
        raise error from exc
    record_output(ctx, step.name, output)
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=data, output=output,
    )  # fmt: skip
    return output
