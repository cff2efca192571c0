"""Trace events: what happened in a run, one frozen dataclass per kind, with its payload fields.

The engine emits these (``Frame.event``). The run store keeps each as its ``kind`` and the JSON of
``to_payload()`` in a ``core.model.records.TraceEvent``, and its readers get the dataclass back from
``TraceEvent.data`` (``from_payload``): the store stays generic, and lens matches on the classes, never on
kind strings or on the shape of a step path.

Invariants: ``to_payload()`` is the payload flujo has always stored for the kind (a field marked
``when_set`` is left out while it is None), so a store written before events were typed reads as before,
and ``from_payload(kind, event.to_payload()) == event`` for every event. An event whose kind this
version does not know (a newer flujo's), or whose payload does not fit its kind's fields (an older or
damaged one, or the note stored when a payload could not be prepared), decodes to ``UnknownEvent``, which
keeps the payload as it was stored.

Adding a kind: write its dataclass here and add it to ``EVENT_TYPES``; docs/lens.md's table of event
kinds is checked against ``EVENT_TYPES`` by a test.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union

_WHEN_SET = {"when_set": True}
SUMMARY = "summarize"
"""``PromptSent.purpose`` of the call that condenses a conversation's oldest turns into a summary."""


def _when_set() -> Any:
    """A field that is stored only when it is not None (older payloads of the kind do not have it)."""
    return field(default=None, metadata=_WHEN_SET)


class _Event:
    """What every event class shares: its ``kind`` and its payload."""

    __slots__ = ()
    kind: ClassVar[str]

    def to_payload(self) -> dict[str, Any]:
        """The payload stored for this event (JSON data: tuples become lists)."""
        payload: dict[str, Any] = {}
        for name, when_set in _stored_fields(type(self)):
            value = getattr(self, name)
            if value is None and when_set:
                continue
            payload[name] = list(value) if isinstance(value, tuple) else value  # as _plain, without a call
        return payload


@dataclass(frozen=True, slots=True)
class AgentStarted(_Event):
    """A script agent is about to start its side effects: the ``attempt``-th time at this step in this run
    (docs/durability.md); committed before the script starts, so a resumed run counts on."""

    kind: ClassVar[Literal["agent.started"]] = "agent.started"
    agent: str
    attempt: int


@dataclass(frozen=True, slots=True)
class ProcessStarted(_Event):
    """A command agent's process started, as the leader of process ``group``: what a resumed run needs to end
    what is left of it (processes the command started, which outlive a ``kill -9`` of flujo) before it runs
    the step again. ``boot`` is the machine's boot id and ``since`` the leader's start time in clock ticks
    since boot (Linux's ``/proc``), so a group id reused since is never taken for this one."""

    kind: ClassVar[Literal["agent.process"]] = "agent.process"
    agent: str
    group: int
    boot: str
    since: int


@dataclass(frozen=True, slots=True)
class CallSent(_Event):
    """A call to a model that a provider serves is about to be sent, committed before it is: if the process
    stops before the step's result is committed, the call's reply is lost but the provider served it, so a
    resumed run counts it (one request of unknown usage, ``core.model.records.call_interrupted``) and keeps what it may
    have used charged against the limits. ``started`` is when the step's attempt started, the
    ``started_at`` of the step's record once that attempt commits it; ``prompt_tokens`` the prompt as
    counted before sending, ``reply_cap`` the most its reply may hold (None: not capped) and ``cost_usd``
    the most the call may cost (None: the price is unknown)."""

    kind: ClassVar[Literal["agent.call"]] = "agent.call"
    agent: str
    model: str | None
    started: float
    prompt_tokens: int
    reply_cap: int | None = None
    cost_usd: float | None = None

    @property
    def most_tokens(self) -> int:
        """The most tokens the call may have used: its prompt and its reply cap."""
        return self.prompt_tokens + (self.reply_cap or 0)


@dataclass(frozen=True, slots=True)
class PromptSent(_Event):
    """An agent call: the messages sent to ``agent``, redacted, exactly as sent. ``history`` says what of a
    conversation went with them (``conversation``, ``turns``, ``dropped``, ``mode``, ``summary_of``);
    ``purpose`` is ``"summarize"`` for the call that condenses a conversation's oldest turns, and
    ``simulated_person`` names the agent playing the person when it answers a question. ``why`` (a call in a
    conversation) says, as ids, which turns were sent, where the current message and the turns no earlier
    call gave came from, and what was left out (``core.model.provenance``). ``tools`` (a model turn of a
    tool loop) are the definitions of the tools offered with the messages, as sent (``ToolDef.to_dict``)."""

    kind: ClassVar[Literal["agent.prompt"]] = "agent.prompt"
    agent: str
    messages: tuple[Mapping[str, Any], ...]
    history_injected: bool = False
    history: Mapping[str, Any] | None = _when_set()
    purpose: str | None = _when_set()
    simulated_person: str | None = _when_set()
    why: Mapping[str, Any] | None = _when_set()
    tools: tuple[Mapping[str, Any], ...] | None = _when_set()

    @property
    def summarizes(self) -> bool:
        """Whether this is the call that condenses a conversation's oldest turns (``purpose`` ``SUMMARY``)."""
        return self.purpose == SUMMARY


@dataclass(frozen=True, slots=True)
class OutputRepaired(_Event):
    """A structured reply that did not match the agent's ``output_schema``, and the repair request that
    followed: the reply as received, why it was rejected, the request sent, and the reply to it."""

    kind: ClassVar[Literal["agent.repair"]] = "agent.repair"
    first_reply: str
    error: str
    request: str
    second_reply: str


@dataclass(frozen=True, slots=True)
class ReplyReceived(_Event):
    """What the agent of the last ``PromptSent`` replied: its ``output``, the ``model`` that answered, how
    many provider ``attempts`` it took and what it cost (``usage``, as ``Usage.to_dict()``)."""

    kind: ClassVar[Literal["agent.reply"]] = "agent.reply"
    output: Any
    model: str | None = None
    attempts: int | None = _when_set()
    usage: Mapping[str, Any] | None = _when_set()
    # A reply served from a recording (``flujo run --replay``): the id of the run that recorded it. No model
    # was called; ``usage`` is what the recorded call used, which this run did not spend.
    replayed_from: str | None = _when_set()
    # The number (1-based) of the conversation's turn the reply made (``core.model.provenance``): an
    # assistant's turn as ``turn``, a user's (the step is one of ``user_turn_sources``) as ``user_turn``.
    turn: int | None = _when_set()
    user_turn: int | None = _when_set()


@dataclass(frozen=True, slots=True)
class ReplyCut(_Event):
    """A streamed reply of the last ``PromptSent`` that stopped before its end (its connection closed or
    broke mid-reply): the ``attempt`` (of at most ``attempts``) it was, the text ``received`` until then
    (shown as it streamed, never kept as the reply) and why it stopped (``reason``). A later attempt, if
    any, streamed the reply anew."""

    kind: ClassVar[Literal["agent.cut"]] = "agent.cut"
    agent: str
    attempt: int
    attempts: int
    received: str
    reason: str


@dataclass(frozen=True, slots=True)
class StepErrored(_Event):
    """A step failed: the error message and its hint."""

    kind: ClassVar[Literal["step.error"]] = "step.error"
    error: str
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class HistoryNotInjected(_Event):
    """A conversation's ``turns`` could not go with the call, and why (a script agent's structured input)."""

    kind: ClassVar[Literal["history.not_injected"]] = "history.not_injected"
    turns: int
    reason: str


@dataclass(frozen=True, slots=True)
class HistorySummarized(_Event):
    """A conversation's oldest ``turns_replaced`` turns were condensed into one summary, ``turns_kept`` kept.
    Its step is the summary's own, below the step whose call it was made for."""

    kind: ClassVar[Literal["history.summarized"]] = "history.summarized"
    turns_replaced: int
    turns_kept: int


@dataclass(frozen=True, slots=True)
class SummaryFailed(_Event):
    """The summarizer failed (``consecutive_failures`` in a row); ``fallback`` says what the run does
    instead once it stops trying. Its step is the summary's own, as for ``HistorySummarized``."""

    kind: ClassVar[Literal["history.summarize_failed"]] = "history.summarize_failed"
    error: str
    consecutive_failures: int
    usage: Mapping[str, Any] | None = _when_set()
    fallback: str | None = _when_set()


@dataclass(frozen=True, slots=True)
class QuestionAnswered(_Event):
    """A HITL question and its valid answer; ``source`` and ``by`` say who answered when it was not the
    person typing now (``simulated`` by an agent, ``replayed`` from a run)."""

    kind: ClassVar[Literal["hitl.answer"]] = "hitl.answer"
    message: str
    answer: Any
    source: str | None = _when_set()
    by: str | None = _when_set()
    turn: int | None = _when_set()  # the number of the conversation's turn the answer made


@dataclass(frozen=True, slots=True)
class AnswerRejected(_Event):
    """An answer that did not match the question's ``input_schema`` (from ``source``), and why."""

    kind: ClassVar[Literal["hitl.rejected"]] = "hitl.rejected"
    answer: Any
    error: str
    source: str


@dataclass(frozen=True, slots=True)
class LoopExited(_Event):
    """A loop ended after ``iterations`` for ``reason`` (``condition``, ``max_loops``, ``error``, ``init``):
    with its exit ``condition`` and ``max_loops`` when it completed, its ``error`` when it failed."""

    kind: ClassVar[Literal["loop.exit"]] = "loop.exit"
    reason: str
    iterations: int
    condition: str | None = None
    max_loops: int | None = _when_set()
    error: str | None = _when_set()


@dataclass(frozen=True, slots=True)
class ChildRunStarted(_Event):
    """A sub-workflow step started (or continued) the child run ``child_run_id`` of blueprint ``pipeline``."""

    kind: ClassVar[Literal["workflow.child"]] = "workflow.child"
    child_run_id: str
    pipeline: str
    # The conversation's turn the child's output made, as ``ReplyReceived`` says it.
    turn: int | None = _when_set()
    user_turn: int | None = _when_set()


@dataclass(frozen=True, slots=True)
class BranchTaken(_Event):
    """A conditional step took ``branch`` (the value of its ``condition``)."""

    kind: ClassVar[Literal["conditional.branch"]] = "conditional.branch"
    branch: str
    condition: str | None = None


@dataclass(frozen=True, slots=True)
class ParallelDone(_Event):
    """A parallel step's ``branches`` ended; ``failed`` maps the branches that failed to their errors."""

    kind: ClassVar[Literal["parallel.done"]] = "parallel.done"
    branches: tuple[str, ...]
    failed: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class EnsembleDone(_Event):
    """An ensemble's conversation ended after ``turn_count`` rounds for ``reason`` (its ``error`` when it
    failed; its ``max_total_turns`` when it completed)."""

    kind: ClassVar[Literal["ensemble.done"]] = "ensemble.done"
    reason: str
    turn_count: int
    error: str | None = _when_set()
    max_total_turns: int | None = _when_set()


@dataclass(frozen=True, slots=True)
class UnknownEvent(_Event):
    """An event this version cannot read as one of its kinds: a newer flujo's kind, or a payload that does
    not fit its kind's fields. It keeps what was stored, so it can still be shown and copied."""

    kind: str  # type: ignore[misc]  # an instance's own kind, where the classes above fix theirs
    payload: Mapping[str, Any]

    def to_payload(self) -> dict[str, Any]:
        return dict(self.payload)


@dataclass(frozen=True, slots=True)
class ToolCalled(_Event):
    """A tool call of an agent step's tool loop (at its ``P/tool/N`` path): the ``tool``, the ``arguments``
    the model gave, the ``result`` the model was sent (cut to the agent's size), whether it was an ``error``
    (the tool failed, the arguments did not fit, the tool is unknown) and whether the person ``declined`` it."""

    kind: ClassVar[Literal["tool.call"]] = "tool.call"
    tool: str
    arguments: Any
    result: str
    error: bool = False
    declined: bool | None = _when_set()
    replayed_from: str | None = _when_set()  # served from this run's recording: the tool did not run


KnownEvent = (
    AgentStarted
    | ProcessStarted
    | CallSent
    | PromptSent
    | OutputRepaired
    | ReplyReceived
    | ReplyCut
    | StepErrored
    | HistoryNotInjected
    | HistorySummarized
    | SummaryFailed
    | QuestionAnswered
    | AnswerRejected
    | LoopExited
    | ChildRunStarted
    | BranchTaken
    | ParallelDone
    | EnsembleDone
    | ToolCalled
)
Event = KnownEvent | UnknownEvent

EVENT_TYPES: Mapping[str, type[KnownEvent]] = {cls.kind: cls for cls in typing.get_args(KnownEvent)}
"""Every kind of trace event the engine writes → its class: the one table of event kinds."""


def from_payload(kind: str, payload: Mapping[str, Any]) -> Event:
    """The event stored as ``kind`` with ``payload``; an ``UnknownEvent`` when this version cannot read it
    as one of its kinds. Never raises: reading a trace never fails on one event."""
    cls = EVENT_TYPES.get(kind)
    if cls is not None:
        values: dict[str, Any] = {}
        for name, fits, required in _readers(cls):
            if name not in payload:
                if required:
                    break
                continue
            value = fits(payload[name])
            if value is _MISFIT:
                break
            values[name] = value
        else:
            return cls(**values)
    return UnknownEvent(kind, payload)


_MISFIT = object()
_Reader = Callable[[Any], Any]
_STORED: dict[type[_Event], tuple[tuple[str, bool], ...]] = {}
_READ: dict[type[_Event], tuple[tuple[str, _Reader, bool], ...]] = {}


def _stored_fields(cls: type[_Event]) -> tuple[tuple[str, bool], ...]:
    """Each payload field of ``cls`` and whether it is stored only when set (worked out once per class)."""
    found = _STORED.get(cls)
    if found is None:
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # every event class is a dataclass
        found = _STORED[cls] = tuple((f.name, bool(f.metadata.get("when_set"))) for f in fields)
    return found


def _readers(cls: type[_Event]) -> tuple[tuple[str, _Reader, bool], ...]:
    """Each payload field of ``cls``: its name, what reads a stored value (``_MISFIT`` when it does not fit
    the field's type), and whether a payload must have it (worked out once per class)."""
    found = _READ.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _READ[cls] = tuple(
            (f.name, _reader(hints[f.name]), f.default is dataclasses.MISSING)
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]  # every event class is a dataclass
        )
    return found


def _reader(hint: Any) -> _Reader:
    """A function reading a stored JSON value as a value of type ``hint`` (the types the events use)."""
    if hint is Any:
        return lambda value: value
    if hint is bool:
        return lambda value: value if isinstance(value, bool) else _MISFIT
    if hint is int:
        return lambda value: value if isinstance(value, int) and not isinstance(value, bool) else _MISFIT
    if hint is str:
        return lambda value: value if isinstance(value, str) else _MISFIT
    if hint is float:  # JSON writes a whole float as it is (1.0), but a number written by hand may be 1
        return lambda value: value if isinstance(value, int | float) and not isinstance(value, bool) else _MISFIT
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType) and type(None) in args:
        (inner,) = (arg for arg in args if arg is not type(None))
        read = _reader(inner)
        return lambda value: None if value is None else read(value)
    if origin is Mapping:  # the store gives dicts: checked first, an ABC check is slow
        return lambda value: value if type(value) is dict or isinstance(value, Mapping) else _MISFIT
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _reader(args[0])
        return lambda value: _sequence(value, item)
    raise TypeError(f"no reader for an event field of type {hint!r}")  # a new field type: teach _reader


def _sequence(value: Any, item: _Reader) -> Any:
    if not isinstance(value, list | tuple):
        return _MISFIT
    items = tuple(map(item, value))
    for each in items:
        if each is _MISFIT:
            return _MISFIT
    return items


def _plain(value: Any) -> Any:
    """``value`` as JSON data: a tuple field becomes a list (its items are JSON data already)."""
    return list(value) if isinstance(value, tuple) else value
