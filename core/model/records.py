"""The records the run store keeps and gives back: runs (and what an update of one changes), steps, trace
events, thread turns, and what a prune removed.

They are plain frozen values: the engine writes them through ``core.ports.RunStore``, the stores in
``core.store`` persist them, and lens reads them back; none of them does I/O.

A call to a model that a provider serves is journaled before it is sent (a ``CallSent`` event, holding
when its step's attempt started). The step's record, committed when that attempt ends (completed or
failed), starts at the same moment, stored as the same number. So a ``CallSent`` whose step has no record,
or the record of another attempt (an earlier failure, or the later attempt that ran the step again), was
sent by a process that stopped before it recorded the reply (killed, or cancelled mid-call): the call is
interrupted (``call_interrupted``): the provider served it, or may have, and what it used is unknown. The
engine counts such calls when it runs the run again, and lens shows them (docs/durability.md).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from core.model.calls import Role
from core.model.events import (
    AgentStarted,
    CallSent,
    ChildRunStarted,
    Event,
    ProcessStarted,
    QuestionAnswered,
    from_payload,
)
from core.model.usage import ZERO_USAGE, Usage

StepStatus = Literal["completed", "failed", "skipped", "paused"]

RunStatus = Literal[
    "running", "completed", "failed", "paused", "limit_reached", "aborted", "interrupted", "queued", "cancelled"
]

# The records an agent step's tool loop (``core.policies.tool_loop``) commits below the step at ``P``: model
# turn K at ``P/model/K`` and tool call N at ``P/tool/N``, each of the kind its path's segment names. The
# step's own record holds the loop's usage and its answer; readers (lens, the CLI's progress lines) show
# these as the step's children.
MODEL_TURN_KIND = "model"
TOOL_CALL_KIND = "tool"
TOOL_LOOP_KINDS = frozenset({MODEL_TURN_KIND, TOOL_CALL_KIND})


@dataclass(frozen=True)
class TraceEvent:
    """A trace event of the step at ``path``, as the store keeps it: its ``kind`` (``agent.prompt``,
    ``hitl.answer``, ``loop.exit`` ...) and its ``payload``, JSON data. ``data`` is the event as its
    dataclass (``core.model.events``): what readers match on.

    A payload is read, never changed (nothing in it either): events the engine makes share parts, such as
    the masked dict of a message that a conversation's prompts send again (``Redactor.messages``)."""

    kind: str
    path: str
    payload: Mapping[str, Any]
    ts: float

    @functools.cached_property
    def data(self) -> Event:
        """The event as its ``core.model.events`` dataclass (an ``UnknownEvent`` for a kind or payload this version
        cannot read), decoded when first asked for."""
        return from_payload(self.kind, self.payload)


PAGE_SIZE = 500
"""How many rows a page of ``RunStore.step_page``, ``event_page`` and ``marks`` holds unless told otherwise."""


@dataclass(frozen=True, slots=True)
class RowMark:
    """Where a step or a trace event of a run is, without its values (``RunStore.marks``): its number in the
    order the store recorded them (``seq``), its path, its time (a step's ``started_at``, an event's ``ts``)
    and its kind (the step's or the event's)."""

    seq: int
    path: str
    ts: float
    kind: str


@dataclass(frozen=True)
class StepRecord:
    """The committed result of one leaf step execution; ``path`` identifies it uniquely in a run."""

    run_id: str
    path: str
    name: str
    kind: str
    status: StepStatus
    input: Any = None
    output: Any = None
    error: str | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    usage: Usage = ZERO_USAGE


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    pipeline_name: str
    status: RunStatus
    source: str | None = None
    source_hash: str | None = None
    input: Any = None
    output: Any = None
    error: str | None = None
    created_at: float = 0.0
    finished_at: float | None = None
    usage: Usage = ZERO_USAGE
    parent_run_id: str | None = None
    thread: str | None = None
    pause_path: str | None = None
    pause_message: str | None = None
    owner: str | None = None  # the process that claimed the run last, e.g. "pid 4242 on build-01"
    # How the run was started beyond its blueprint and input (the command line's settings and limits, as
    # plain JSON data), so a resume continues under the same ones. Core stores it and never reads it.
    options: dict[str, Any] | None = None


@dataclass(frozen=True)
class RunUpdate:
    """What ``RunStore.update_run`` changes of a stored run. ``status``, ``pause_path`` and
    ``pause_message`` are always written (a run that is not paused has no pause point); ``output``,
    ``error``, ``usage``, ``finished_at`` and ``options`` are written when given, and None leaves the stored
    value as it is."""

    status: RunStatus
    output: Any = None
    error: str | None = None
    usage: Usage | None = None
    pause_path: str | None = None
    pause_message: str | None = None
    finished_at: float | None = None
    options: dict[str, Any] | None = None


FORK_OPTION = "fork"
"""The key, in the options of the run that holds a forked thread's first turns (``flujo threads fork``;
``core.conversation.threads.fork_thread``), of what it copied: ``{"thread": NAME, "turns": N}``."""


@dataclass(frozen=True)
class ThreadTurn:
    """A turn of a thread: the ``index``-th (from 0) of the turns run ``run_id`` added to it."""

    run_id: str
    index: int
    role: Role
    content: str
    tokens: int | None = None
    shown: str | None = None  # what a person reads of it, when that is not ``content`` (ConversationTurn.shown)

    @property
    def text(self) -> str:
        """What a person reads of the turn."""
        return self.content if self.shown is None else self.shown


@dataclass(frozen=True)
class PruneResult:
    """What ``RunStore.prune_runs`` removed (or, in a dry run, would remove).

    ``deleted`` are the runs chosen (newest first) and ``children`` their sub-workflow child runs, deleted
    with them; ``live`` the chosen runs kept because a live process is executing them. ``size_before`` and
    ``size_after`` are the bytes of the store's files (None for a store without files); ``vacuumed`` says
    whether the freed space was given back to the file system (False when nothing was deleted, in a dry
    run, or when another process kept the database busy: SQLite then reuses the space for new rows).
    """

    deleted: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    live: tuple[str, ...] = ()
    size_before: int | None = None
    size_after: int | None = None
    vacuumed: bool = False


@dataclass(frozen=True)
class ThreadSummary:
    """A thread as a whole: its runs (those started with ``--thread name``), the turns they added, the sum
    of those turns' token counts, and when its first and latest runs were created."""

    name: str
    runs: int
    turns: int
    tokens: int
    first_run_at: float
    last_run_at: float


RESUME_EVENT_KINDS: tuple[str, ...] = (
    AgentStarted.kind,
    ProcessStarted.kind,
    CallSent.kind,
    QuestionAnswered.kind,
    ChildRunStarted.kind,
)
"""The events of a run that executing it again reads: the attempts its agents started and their processes
(``Frame.begin_attempt``), the calls it sent (``interrupted_calls``), how its questions were answered and the
child runs its sub-workflows started (which answers given up front it took already)."""


@dataclass(frozen=True)
class Journal:
    """What a run an earlier process executed had recorded, as executing it again needs it: its steps in the
    order they were recorded, its events of ``RESUME_EVENT_KINDS`` in order, and each of its sub-workflows'
    child runs (oldest first) with the child's own. A worker that takes a run again reads it in the
    transaction that takes it (``take_queued``): one snapshot, nothing read after."""

    steps: tuple[StepRecord, ...] = ()
    events: tuple[TraceEvent, ...] = ()
    children: tuple[tuple[RunRecord, Journal], ...] = ()


def call_interrupted(call: CallSent, record: StepRecord | None) -> bool:
    """Whether the attempt that sent ``call`` recorded no result; ``record`` is the record of its step (at
    the path of the ``CallSent`` event), if there is one."""
    # Equal as stored: both are the one time.time() value of the attempt, written as the same double.
    return record is None or record.started_at != call.started


def interrupted_calls(events: Iterable[TraceEvent], steps: Mapping[str, StepRecord]) -> list[CallSent]:
    """The calls among ``events`` (of a run whose step records are ``steps``, by path) that were
    interrupted (``call_interrupted``), in the order they were sent."""
    found: list[CallSent] = []
    for event in events:
        call = event.data
        if isinstance(call, CallSent) and call_interrupted(call, steps.get(event.path)):
            found.append(call)
    return found
