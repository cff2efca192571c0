"""Threads: one conversation continued across runs (``flujo run FILE --thread NAME``).

A thread is the runs created with the same ``RunRecord.thread``. Each run owns the turns it added to the
thread (``RunStore.record_thread_turns``); the thread's conversation is those turns, oldest run first.

Invariants:

* **Which loop.** The thread continues in the first ``conversation: true`` loop (or ensemble) the run starts (in a
  blueprint with one conversational loop, that loop); the other conversational loops keep histories of
  their own. A run of a blueprint without a conversational loop cannot join a thread (``check_thread``):
  it would add nothing to it.
* **What that loop starts from.** Its history begins with the turns of the thread's runs created before
  this run, then the run's own seed turn. They are ordinary history turns: the loop's strategy bounds what
  each agent is sent, as for turns said in this run. If the loop starts again in the same run (inside
  another loop, say), it also starts from the turns this run has added so far.
* **What a run adds.** The user and assistant turns of that loop said in this run (the seed, HITL
  answers, agent replies, as ``ai_turn_source``/``user_turn_sources`` pick them), with their token counts,
  never bounded or summarised. They are written whenever the run stops — completed, failed, stopped by a
  limit, aborted or paused — and replace what the run wrote before, so a resumed run that ends later writes
  its full set and nothing is doubled. Turns said in an iteration that stopped part-way (a pause, a limit, a
  failure) are kept too: nothing a user typed is lost. A run interrupted by Ctrl-C outside a prompt writes
  them as it stops, too.
* **Resume sees what it saw.** A run loads only the turns of *other, earlier* runs of its thread (created
  before it), so resuming run 2 after run 3 exists rebuilds the history run 2 had. (If an earlier run was
  itself paused and completed in between, its added turns are seen.) ``flujo resume`` keeps the thread the
  run record names.
* **Deleting a thread** deletes its turns and takes its runs out of it; the runs stay in the store (and a
  run resumed after that belongs to no thread).
* **Forking a thread** (``fork_thread``) starts a new thread from the first turns of another: a run of the
  new thread that ran no step, recorded as completed when the fork is made (``FORK_OPTION`` in its options
  names the thread and how many turns), holds a copy of those turns as the turns it added. The next run of
  the new thread continues from them as from any earlier run's; the forked thread is left as it is. That
  run counts as a run of the blueprint of the last turn it copies (its ``source``), so ``flujo run FILE
  --continue`` continues the fork.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from core.context import RunContext
from core.model.errors import RunError
from core.model.provenance import thread_origin
from core.model.records import FORK_OPTION, RunRecord, ThreadSummary
from core.ports import RunStore
from core.steps.kinds import ConditionalStep, EnsembleStep, LoopStep, MapStep, ParallelStep, Pipeline, Step
from core.text.turns import ConversationTurn

MAX_NAME_LENGTH = 100
_NAME = r"[A-Za-z0-9][A-Za-z0-9._:@/-]*"  # compiled at the first name checked (re's cache keeps it)
NAME_RULE = f"letters, digits and . _ - : @ / (at most {MAX_NAME_LENGTH} characters), starting with a letter or digit"


def check_thread_name(name: str) -> None:
    """RunError unless ``name`` is a usable thread name."""
    if not name:
        raise RunError("the thread name is empty", hint=f"name the thread with {NAME_RULE}")
    if len(name) > MAX_NAME_LENGTH or re.fullmatch(_NAME, name) is None:
        raise RunError(f"thread name {name!r} is not valid", hint=f"use {NAME_RULE}")


def conversation_loops(steps: Sequence[Step]) -> Iterator[LoopStep]:
    """The ``conversation: true`` loops among ``steps`` and inside them, in blueprint order."""
    for step in steps:
        if isinstance(step, LoopStep):
            if step.conversation is not None:
                yield step
            yield from conversation_loops(step.body)
        elif isinstance(step, MapStep):
            yield from conversation_loops(step.body)
        elif isinstance(step, ParallelStep | ConditionalStep):
            for _, branch in step.branches:
                yield from conversation_loops(branch)
            if isinstance(step, ConditionalStep) and step.default_branch:
                yield from conversation_loops(step.default_branch)


def _has_ensemble(steps: Sequence[Step]) -> bool:
    """Whether an ensemble step (a conversation of its own, which can continue a thread) is among ``steps``."""
    for step in steps:
        if isinstance(step, EnsembleStep):
            return True
        if isinstance(step, LoopStep | MapStep) and _has_ensemble(step.body):
            return True
        if isinstance(step, ParallelStep | ConditionalStep) and any(_has_ensemble(b) for _, b in step.branches):
            return True
    return False


def check_thread(pipeline: Pipeline, name: str) -> None:
    """RunError unless a run of ``pipeline`` can join thread ``name``: a valid name, a conversational loop
    (or an ensemble)."""
    check_thread_name(name)
    if next(conversation_loops(pipeline.steps), None) is None and not _has_ensemble(pipeline.steps):
        raise RunError(
            f"--thread {name} needs a conversation: true loop, and {pipeline.name!r} has none",
            hint="add conversation: true to the loop that talks with the user, or run without --thread",
        )


@dataclass
class ThreadBinding:
    """The thread a run continues: its name, the turns of its earlier runs, and the loop continuing it."""

    name: str
    earlier: tuple[ConversationTurn, ...]
    runs: int  # how many earlier runs said those turns
    loop: LoopStep | EnsembleStep | None = None

    def claim(self, loop: LoopStep | EnsembleStep) -> bool:
        """True when ``loop`` continues the thread: the first conversational loop to start claims it."""
        if self.loop is None:
            self.loop = loop
        return self.loop is loop

    def opening(self, ctx: RunContext) -> list[ConversationTurn]:
        """The history the claiming loop starts from: the earlier runs' turns, then this run's so far."""
        return [*self.earlier, *ctx.thread_turns]

    @property
    def note(self) -> str:
        if not self.earlier:
            return f"thread {self.name}: a new conversation"
        return f"thread {self.name}: continuing with {len(self.earlier)} turn(s) from {self.runs} earlier run(s)"


async def bind(store: RunStore, record: RunRecord) -> ThreadBinding | None:
    """The thread run ``record`` continues (None when it has none), with the turns of its earlier runs."""
    if record.thread is None:
        return None
    turns = await store.thread_turns(record.thread, before_run=record.run_id)
    return ThreadBinding(
        name=record.thread,
        earlier=tuple(ConversationTurn(t.role, t.content, t.tokens, t.shown, thread_origin(t.run_id)) for t in turns),
        runs=len({t.run_id for t in turns}),
    )


async def fork_thread(
    store: RunStore, thread: str, new: str, *, run_id: str, at_turn: int | None = None
) -> ThreadSummary | None:
    """Start thread ``new`` from the first ``at_turn`` turns of ``thread`` (all of them when None), held by a
    new run ``run_id`` of ``new`` (the module docstring says what it records); ``new``'s summary, or None
    when ``thread`` has no run. RunError when ``new`` is not a usable name or already has a run, or when
    ``at_turn`` is not between 1 and the number of turns ``thread`` has. A caller that may race another
    process starting runs of ``new`` holds ``new``'s claim (as a run of it does)."""
    check_thread_name(new)
    turns = await store.thread_turns(thread)
    newest = await store.list_runs(limit=1, thread=thread)
    if not newest:
        return None
    if at_turn is not None and not 1 <= at_turn <= len(turns):
        raise RunError(
            f"--at-turn {at_turn}: thread {thread} has {len(turns)} turn(s)",
            hint=f"give a number from 1 to {len(turns)}" if turns else "fork it without --at-turn",
        )
    kept = turns[:at_turn]
    said_last = await store.get_run(kept[-1].run_id) if kept else None
    model = said_last or newest[0]
    now = time.time()
    fork = RunRecord(
        run_id=run_id,
        pipeline_name=model.pipeline_name,
        status="completed",
        source=model.source,
        source_hash=model.source_hash,
        created_at=now,
        finished_at=now,
        thread=new,
        options={FORK_OPTION: {"thread": thread, "turns": len(kept)}},
    )
    copied = [ConversationTurn(t.role, t.content, t.tokens, t.shown) for t in kept]
    if not await store.start_thread(fork, copied):
        raise RunError(
            f"thread {new} already exists", hint=f"fork into a new name, or delete it first: flujo threads delete {new}"
        )
    return await store.get_thread(new)
