"""Loop policy: iterations on isolated contexts, exit checks, the hooks of the loop blocks (docs/loops.md).

Invariants:
- Each iteration runs on ``ctx.isolate()``; the copy is adopted only when the whole body succeeded.
- ``init`` runs once, on iteration 1's isolated context, before the body.
- Control-flow signals (Pause, Abort, LimitReached) propagate untouched; the committed leaf steps of the
  paused iteration are replayed on resume, so nothing needs merging here.
- ``finish_early`` (``stop_when: agent_finished``): the body stops right after the step whose agent replied
  ``{"action": "finish"}``; the iteration then completes normally and the exit check ends the loop.
- Reaching ``max_loops`` is a normal end (exit reason ``max_loops``), not a failure.
- ``conversation: true``: the loop owns a fresh history for its body (seeded before iteration 1, after
  ``init``); when it ends, an enclosing conversation gets its own history back (nothing leaks outward),
  and at the top level the loop's turns stay in ``context.conversation_history`` for later steps
  (``core.conversation.enter_loop``).
- Threads (``core.conversation``): the first conversational loop the run starts continues the run's thread;
  its history opens with the thread's earlier turns. When an iteration stops part-way (a signal or an
  error), the thread turns it said are kept in the loop's context before the signal or error propagates.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from core.context import RunContext
from core.conversation import enter_loop
from core.model.errors import ControlSignal, FlujoError, RunError
from core.model.events import LoopExited
from core.policies.body import BodyRunner
from core.policies.context_writes import agent_finished, record_output
from core.policies.failure import record_failure
from core.policies.frame import Frame, child_path, scope
from core.steps.kinds import LoopStep


async def run_loop(step: LoopStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner) -> Any:
    frame.reporter.step_started(path, step.name, step.kind)
    started = time.time()
    iteration_input = data
    output: Any = data
    reason = "max_loops"
    iterations = 0
    held = enter_loop(step, ctx, frame.thread)  # a conversational loop's own history, from here to the end
    # An enclosing loop's stop_when reads its own iteration's command: this loop's must not replace it.
    enclosing_command = ctx.agent_command
    iteration_ctx = ctx
    try:
        for iteration in range(1, step.max_loops + 1):
            iterations = iteration
            iteration_ctx = ctx.isolate()
            # stop_when: agent_finished reads *this* iteration's last agent command, never a stale one.
            iteration_ctx.agent_command = None
            if iteration == 1 and step.init is not None:
                reason = "init"  # an init op failing is the loop's failure, with exit reason "init"
                try:
                    step.init(iteration_ctx, iteration_input)
                except (ControlSignal, FlujoError):
                    raise
                except Exception as exc:
                    raise RunError(f"loop {step.name!r} init failed: {exc}") from exc
                reason = "max_loops"
            if held is not None:
                held.begin(iteration_ctx, iteration, iteration_input)
            here = child_path(path, str(iteration))
            if step.finish_early:
                output = iteration_input
                for part in step.body:  # same paths as running the body at once
                    output = await body((part,), output, iteration_ctx, here, frame)
                    if agent_finished(iteration_ctx):
                        break
            else:
                output = await body(step.body, iteration_input, iteration_ctx, here, frame)
            ctx.adopt(iteration_ctx)
            if step.exit_when is not None and step.exit_when(scope(ctx, output, iteration=iteration)):
                reason = "condition"
                break
            if iteration < step.max_loops:  # no next iteration, no next input (its template may not apply)
                iteration_input = step.next_input(output, ctx, iteration) if step.next_input else output
        final = step.output(output, ctx, data) if step.output is not None else output
    except (ControlSignal, asyncio.CancelledError):  # a pause, a limit, Ctrl-C: what was said stays said
        ctx.keep_said([iteration_ctx])
        raise
    except Exception as exc:  # the body's errors are FlujoErrors already; a hook's may be anything
        ctx.keep_said([iteration_ctx])
        why = "init" if reason == "init" else "error"
        error = await record_failure(
            step, path, started, data, exc, frame, ended=lambda message: LoopExited(why, iterations, error=message)
        )
        if error is exc:
            raise
        raise error from exc
    finally:
        if held is not None:
            held.leave(ctx)
    ctx.agent_command = enclosing_command
    record_output(ctx, step.name, final)
    event = frame.event(path, LoopExited(reason, iterations, step.exit_description, step.max_loops))
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=data, output=final, events=[event],
    )  # fmt: skip
    return final
