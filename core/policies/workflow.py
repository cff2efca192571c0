"""Workflow policy: a sub-workflow (``uses: imports.X``) runs as a child run of its own.

Invariants:
- The child run's id is derived from the parent run's id and the step's path (``child_run_id``), so a
  resumed parent finds the same child. Its RunRecord (``parent_run_id`` = the caller) is created the
  first time the step runs; every later entry (resume, crash recovery) reuses it. Its ``input`` is the
  value the parent passed (the step's input, before ``input_to`` places it).
- The child runs on a fresh context (``core.policies.child_context``) with a frame of its own: its leaf
  steps commit to the child run's journal, and re-entering the child replays them from that journal;
  only the rest executes. A child that already completed is replayed without touching its record.
- The child run's status follows what happened inside it (``paused``, ``limit_reached``, ``aborted``,
  ``failed``, ``completed``). Control-flow signals propagate to the parent as they are (a Pause's path
  gains this step's path as prefix), so a HITL question in the child pauses the parent, and resuming the
  parent continues inside the child. A child run is never resumed on its own: ``Engine.resume`` refuses
  it, since only its parent holds the context its input came from.
- Usage: the child's calls count in its own record and in every ancestor's total; the usage limits are
  the top-level run's (``Frame.parent``). The parent's record of this step holds no usage (the child's
  leaves hold it, and replaying them counts it again in the totals).
- The parent commits this step (output = the child's output) once the child completed and what it gives
  back is applied; the step's result then lands in the parent's context like an agent step's
  (``steps.<name>.output``, ``sink_to``, a conversation turn by the loop's ``ai_turn_source`` rules).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from core.context import RunContext
from core.conversation import capture, message_for
from core.model.calls import Activity
from core.model.errors import Abort, FlujoError, LimitReached, Pause, ReplayStop, RunError, StoreUnavailable
from core.model.events import ChildRunStarted, StepErrored
from core.model.records import RunUpdate, StepRecord, TraceEvent
from core.policies.body import BodyRunner
from core.policies.child_context import child_start, give_back
from core.policies.context_writes import note_agent_command, record_output, sink
from core.policies.frame import Frame, joined_path, scope, with_turn
from core.policies.turn_text import shown_turn
from core.ports import Reporter
from core.steps.kinds import WorkflowStep


def child_run_id(parent_run_id: str, path: str) -> str:
    """The id of the child run that the step at ``path`` of run ``parent_run_id`` starts (16 hex digits,
    like any run id, so a prefix typed for one run does not also match its children)."""
    return hashlib.sha256(f"{parent_run_id}/{path}".encode()).hexdigest()[:16]


class ChildReporter:
    """The parent's reporter, shown the child's steps at their place in the parent (``review/critic``)."""

    def __init__(self, reporter: Reporter, prefix: str) -> None:
        self.reporter = reporter
        self.prefix = prefix

    def step_started(self, path: str, name: str, kind: str) -> None:
        self.reporter.step_started(joined_path(self.prefix, path), name, kind)

    def step_finished(self, record: StepRecord) -> None:
        self.reporter.step_finished(replace(record, path=joined_path(self.prefix, record.path)))

    def text_delta(self, path: str, text: str) -> None:
        self.reporter.text_delta(joined_path(self.prefix, path), text)

    def agent_replied(self, path: str, name: str, output: Any) -> None:
        self.reporter.agent_replied(joined_path(self.prefix, path), name, output)

    def note(self, message: str) -> None:
        self.reporter.note(message)

    def activity(self, path: str, activity: Activity) -> None:
        self.reporter.activity(joined_path(self.prefix, path), activity)

    def events_committed(self, events: Sequence[TraceEvent]) -> None:
        self.reporter.events_committed([replace(event, path=joined_path(self.prefix, event.path)) for event in events])


async def run_workflow(
    step: WorkflowStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner
) -> Any:
    absorbed = frame.absorbed_failure(path)
    if absorbed is not None:  # failed earlier inside a parallel that completed without it
        raise RunError(absorbed)
    frame.reporter.step_started(path, step.name, step.kind)
    started = time.time()
    child_id = child_run_id(frame.run_id, path)
    event = frame.event(path, ChildRunStarted(child_id, step.pipeline.name))
    value = data
    try:
        if step.input is not None:
            value = step.input.render(scope(ctx, data))
        # In a conversational loop that propagates the context, the child is given what was said last
        # there, as an agent standing here would be: never the parent's context (its history, its steps).
        value = message_for(ctx, value)
        start = child_start(step, value, ctx)
    except FlujoError as exc:
        await _fail(step, path, started, value, exc, frame, event)
        raise
    child, completed = await _enter(step, value, child_id, path, frame)
    child_ctx = RunContext(initial_prompt=start.prompt, scratchpad=start.scratchpad)
    store = frame.store
    try:
        output = await body(step.pipeline.steps, start.prompt, child_ctx, "", child)
        if not completed:
            await store.update_run(
                child_id, RunUpdate(status="completed", output=output, usage=child.usage, finished_at=time.time())
            )
    except Pause as pause:
        await store.update_run(
            child_id, RunUpdate(status="paused", usage=child.usage, pause_path=pause.path, pause_message=pause.message)
        )
        raise Pause(step=pause.step, path=joined_path(path, pause.path), message=pause.message) from None
    except LimitReached as limit:
        await store.update_run(
            child_id, RunUpdate(status="limit_reached", error=limit.detail, usage=child.usage, finished_at=time.time())
        )
        raise
    except Abort as abort:
        await store.update_run(
            child_id, RunUpdate(status="aborted", error=abort.reason, usage=child.usage, finished_at=time.time())
        )
        raise
    except StoreUnavailable:  # no step's failure, and nothing can be written: the child stays resumable
        raise
    except ReplayStop as stop:  # a replay diverged inside the child: it fails there, as its parent does
        await store.update_run(
            child_id, RunUpdate(status="failed", error=stop.error.message, usage=child.usage, finished_at=time.time())
        )
        raise
    except FlujoError as error:
        await store.update_run(
            child_id, RunUpdate(status="failed", error=error.message, usage=child.usage, finished_at=time.time())
        )
        inner = child.failed_step(error)  # where the run failed, seen from the parent: review/critic
        frame.failures.setdefault(error, joined_path(path, inner) if inner else path)
        await _fail(step, path, started, value, error, frame, event)
        raise
    except Exception as exc:  # a port broke inside the child: never leave the child "running"
        await store.update_run(
            child_id,
            RunUpdate(
                status="failed", error=f"{type(exc).__name__}: {exc}", usage=child.usage, finished_at=time.time()
            ),
        )
        raise
    finally:
        frame.replays += child.replays
    try:
        give_back(step, child_ctx, output, ctx)
    except FlujoError as exc:
        await _fail(step, path, started, value, exc, frame, event)
        raise
    told = _apply_output(step, ctx, data, output, path)
    if told:  # the conversation's turn the child's output made, numbered by the step's one event
        event = with_turn(event, told)
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=value, output=output, events=[event],
    )  # fmt: skip
    return output


async def _enter(step: WorkflowStep, value: Any, child_id: str, path: str, frame: Frame) -> tuple[Frame, bool]:
    """The child run's frame (creating its record on first entry, with its journal on a later one), and
    whether the child had already completed."""
    store = frame.store
    taken = frame.taken_children.pop(child_id, None)  # a run a worker took again: read with it, used once
    record = taken[0] if taken is not None else await store.get_run(child_id)
    journal = {}
    completed = False
    started: dict[str, int] | None = None  # an existing child run's attempts are counted from its events
    if record is None or record.run_id != child_id:
        await store.create_run(step.pipeline.new_run(child_id, value, parent_run_id=frame.run_id))
        started = {}
    else:
        if taken is None:
            journal = {entry.path: entry for entry in await store.steps(child_id)}
        completed = record.status == "completed"
        if not completed:
            await store.update_run(child_id, RunUpdate(status="running"))
    child = Frame(
        run_id=child_id,
        store=store,
        human=frame.human,
        reporter=ChildReporter(frame.reporter, path),
        redactor=frame.redactor,
        limits=frame.limits,
        journal=journal,
        parent=frame,
        started=started,
        answering=frame.answering.within(path),
        tool_sessions=frame.tool_sessions,
        replay=frame.replay.within(path) if frame.replay is not None else None,
    )
    if taken is not None:  # entered again from what the worker's take read
        child.go_on_from(taken[1])
        if child.replay is not None:
            child.replay.resumed(child.journal)
    elif record is not None and record.run_id == child_id:  # entered again: an earlier process ran it
        await child.count_interrupted()
        if child.replay is not None:
            child.replay.resumed(journal)
    return child, completed


def _apply_output(step: WorkflowStep, ctx: RunContext, data: Any, output: Any, path: str) -> dict[str, int]:
    """The child's output lands in the parent as an agent step's output does; what the step's event says of
    the turn it made (``provenance.told``)."""
    shown = shown_turn(step, ctx, data, output)
    record_output(ctx, step.name, output)
    told = capture(ctx, step.name, output, hitl=False, shown=shown, path=path)
    note_agent_command(ctx, output)
    if step.sink_to:
        sink(ctx, step.sink_to, output)
    return told


async def _fail(
    step: WorkflowStep, path: str, started: float, value: Any, error: FlujoError, frame: Frame, event: TraceEvent
) -> None:
    events = [event, frame.event(path, StepErrored(error.message, error.hint))]
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="failed", started=started,
        input=value, error=error.message, events=events, failure=error,
    )  # fmt: skip
