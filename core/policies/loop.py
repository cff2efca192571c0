"""Loop policy: iterations on isolated contexts, exit checks, FSD-028 hooks.

Invariants:
- Each iteration runs on ``ctx.isolate()``; the copy is adopted only when the whole body succeeded.
- ``init`` runs once, on iteration 1's isolated context, before the body.
- Control-flow signals (Pause, Abort, LimitReached) propagate untouched; the committed leaf steps of the
  paused iteration are replayed on resume, so nothing needs merging here.
- Reaching ``max_loops`` is a normal end (exit reason ``max_loops``), not a failure.
"""

from __future__ import annotations

import time
from typing import Any

from core.context import RunContext
from core.errors import ControlSignal, FlujoError, RunError
from core.policies.body import BodyRunner
from core.policies.context_writes import record_output
from core.policies.frame import Frame, child_path, scope, step_error
from core.steps import LoopStep


async def run_loop(step: LoopStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner) -> Any:
    frame.reporter.step_started(path, step.name, step.kind)
    started = time.time()
    iteration_input = data
    output: Any = data
    reason = "max_loops"
    iterations = 0
    try:
        for iteration in range(1, step.max_loops + 1):
            iterations = iteration
            iteration_ctx = ctx.isolate()
            # stop_when: agent_finished reads *this* iteration's last agent command, never a stale one.
            iteration_ctx.scratchpad.pop("last_agent_command", None)
            if iteration == 1 and step.init is not None:
                try:
                    step.init(iteration_ctx, iteration_input)
                except (ControlSignal, FlujoError):
                    raise
                except Exception as exc:  # an init op failing is the loop's failure, reason "init"
                    raise RunError(f"loop {step.name!r} init failed: {exc}") from exc
            output = await body(step.body, iteration_input, iteration_ctx, child_path(path, str(iteration)), frame)
            ctx.adopt(iteration_ctx)
            if step.exit_when is not None and step.exit_when(scope(ctx, output, iteration=iteration)):
                reason = "condition"
                break
            iteration_input = step.next_input(output, ctx, iteration) if step.next_input else output
        final = step.output(output, ctx) if step.output is not None else output
    except ControlSignal:
        raise
    except Exception as exc:  # the body's errors are FlujoErrors already; a hook's may be anything
        error = step_error(exc, f"loop {step.name!r}")
        event = frame.event("loop.exit", path, {"reason": "error", "iterations": iterations, "error": error.message})
        await frame.commit(
            path=path, name=step.name, kind=step.kind, status="failed", started=started,
            input=data, error=error.message, events=[event], failure=error,
        )  # fmt: skip
        if error is exc:
            raise
        raise error from exc
    record_output(ctx, step.name, final)
    event = frame.event(
        "loop.exit",
        path,
        {"reason": reason, "iterations": iterations, "condition": step.exit_description, "max_loops": step.max_loops},
    )
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=data, output=final, events=[event],
    )  # fmt: skip
    return final
