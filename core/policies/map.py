"""The map policy: run a body once per item of a list, each item on its own copy of the context."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from core.context import RunContext
from core.model.errors import ControlSignal, StepFailed
from core.policies.body import BodyRunner
from core.policies.context_writes import record_output
from core.policies.failure import record_failure
from core.policies.frame import Frame, child_path, scope
from core.steps.kinds import MapStep


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
        # ``initial_prompt`` in ``finalize`` is the run's input (a map's input is not what it maps over)
        output: Any = step.finalize(results, ctx, None) if step.finalize is not None else results
    except (ControlSignal, asyncio.CancelledError):  # a pause, a limit, Ctrl-C: what was said stays said
        ctx.keep_said([item_ctx])
        raise
    except Exception as exc:  # the body's errors are FlujoErrors already; a hook's may be anything
        ctx.keep_said([item_ctx])
        error = await record_failure(step, path, started, data, exc, frame)
        if error is exc:
            raise
        raise error from exc
    record_output(ctx, step.name, output)
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=data, output=output,
    )  # fmt: skip
    return output
