"""The span tree of a run: run → steps → iterations / branches → steps … → agent calls → messages.

``build_tree(snapshot)`` turns a ``RunSnapshot`` into nodes, a union tagged by ``kind``:

* ``RunNode``: the run (the root, or a sub-workflow's child run under the step that started it);
* ``StepNode``: a step at a path; ``record`` is None for a step whose result is not recorded (it is still
  running, paused inside, or its run was interrupted);
* ``GroupNode``: one iteration of a loop, item of a map or branch of a parallel / conditional;
* ``CallNode``: one agent call: its ``PromptSent`` event, the ``ReplyCut``, ``OutputRepaired`` and
  ``ReplyReceived`` after it, and the messages sent (``MessageNode``);
* ``EventNode``: any other event (``QuestionAnswered``, ``LoopExited``, ``StepErrored`` ...). A call a
  provider serves is journaled before it is sent (``CallSent``); it is shown only when no result of its
  step's attempt was recorded: interrupted (``core.model.records.call_interrupted``: its step counts it as a request of
  unknown usage), or still waiting for its reply while its run is running.

Events are matched on their ``core.model.events`` classes (``TraceEvent.data``), never on kind strings. Paths: a
step path alternates names and keys below the steps that run steps (``core.KEYED_STEP_KINDS``;
``chat/3/clarify``: step ``chat``, iteration ``3``, step ``clarify``); a history summary is a step of its
own below the agent step it served, and its events (``HistorySummarized``, ``SummaryFailed``) say what it
is. An agent step's tool loop commits records below it, of the kinds ``core.TOOL_LOOP_KINDS`` (model turn K
at ``P/model/K``, tool call N at ``P/tool/N``, its approval below the call): they are the agent step's
children, named ``turn K`` and by the tool's name, with no node for the segment between (the records' kinds
say where a loop is). Siblings are in execution order (start time; the store's order breaks ties). Building
is linear in the number of steps and events (10,000 events in well under a second).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import core
from core import (
    INTERRUPTED_CALL,
    ZERO_USAGE,
    CallSent,
    ChildRunStarted,
    HistorySummarized,
    OutputRepaired,
    PromptSent,
    ReplyCut,
    ReplyReceived,
    RunRecord,
    StepRecord,
    SummaryFailed,
    TraceEvent,
    Usage,
    call_interrupted,
)
from lens.preview import compact, full_text
from lens.snapshot import RunSnapshot


@dataclass(eq=False, repr=False)
class MessageNode:
    """A message of an agent call, as it was sent (masked)."""

    run_id: str
    path: str
    index: int
    role: str
    content: str
    kind: Literal["message"] = "message"

    def __repr__(self) -> str:
        return _short_repr(self)

    @property
    def children(self) -> Sequence[Node]:
        return ()


@dataclass(eq=False, repr=False)
class CallNode:
    """One agent call of the step at ``path`` (``index`` counts the step's calls from 0)."""

    run_id: str
    path: str
    index: int
    prompt: PromptSent
    ts: float
    reply: ReplyReceived | None = None
    cuts: list[ReplyCut] = field(default_factory=list)  # attempts whose streamed reply was cut off
    repairs: list[OutputRepaired] = field(default_factory=list)
    summary: HistorySummarized | SummaryFailed | None = None  # the summary's outcome before this call
    turn: bool = False  # a model turn of a tool loop: its reply is a ``ModelTurn`` (text and the calls asked for)
    kind: Literal["call"] = "call"

    def __repr__(self) -> str:
        return _short_repr(self)

    @property
    def children(self) -> Sequence[Node]:
        return self.messages

    @functools.cached_property
    def messages(self) -> list[MessageNode]:
        """The messages sent, made when first asked for (a long run has tens of thousands)."""
        return _messages(self)

    @property
    def history(self) -> Mapping[str, Any] | None:
        """The ``history`` facts of the prompt event (conversation, turns, dropped, mode ...), if any."""
        return self.prompt.history

    @property
    def injected(self) -> bool:
        return self.prompt.history_injected


@dataclass(eq=False, repr=False)
class EventNode:
    run_id: str
    event: TraceEvent
    # For a ``CallSent``: its reply was never recorded (True), or it may still come (its run is running).
    interrupted: bool = False
    kind: Literal["event"] = "event"

    def __repr__(self) -> str:
        return _short_repr(self)

    @property
    def path(self) -> str:
        return self.event.path

    @property
    def children(self) -> Sequence[Node]:
        return ()


@dataclass(eq=False, repr=False)
class StepNode:
    run_id: str
    path: str
    name: str
    record: StepRecord | None = None
    children: list[Node] = field(default_factory=list)
    events: list[TraceEvent] = field(default_factory=list)
    status_if_unrecorded: str = "not recorded"
    interrupted: int = 0  # calls of the step whose reply was never recorded (``call_interrupted``)
    kind: Literal["step"] = "step"

    def __repr__(self) -> str:
        return _short_repr(self)

    @property
    def status(self) -> str:
        return self.record.status if self.record is not None else self.status_if_unrecorded

    @property
    def own_usage(self) -> Usage:
        """What the step's own calls cost: its record's usage, and one request of unknown usage for each
        call interrupted before its reply was recorded (as its run counts them)."""
        own = self.record.usage if self.record is not None else ZERO_USAGE
        for _ in range(self.interrupted):
            own += INTERRUPTED_CALL
        return own

    @functools.cached_property
    def usage(self) -> Usage:
        """What the step cost: a leaf step's own (``own_usage``); a composite step's (loop, map, parallel,
        conditional, sub-workflow), whose own record holds none, is the sum of everything that ran in it."""
        if self.record is not None and self.record.kind not in core.CONTAINER_STEP_KINDS:
            return self.own_usage
        return self.own_usage + _usage_within(self.children)


@dataclass(eq=False, repr=False)
class GroupNode:
    """An iteration / item / branch of the composite step whose path is ``path`` minus its last segment."""

    run_id: str
    path: str
    key: str
    word: str
    children: list[Node] = field(default_factory=list)
    kind: Literal["group"] = "group"

    def __repr__(self) -> str:
        return _short_repr(self)

    @property
    def title(self) -> str:
        return f"{self.word} {self.key}"


@dataclass(eq=False, repr=False)
class RunNode:
    record: RunRecord
    children: list[Node] = field(default_factory=list)
    path: str = ""  # in its parent run: the path of the step that started it ("" for the root)
    events: list[TraceEvent] = field(default_factory=list)  # the run's own events (at path "")
    kind: Literal["run"] = "run"

    def __repr__(self) -> str:
        return _short_repr(self)

    @property
    def run_id(self) -> str:
        return self.record.run_id

    def walk(self) -> Iterator[Node]:
        """Every node below this one (and itself), depth first, in order."""
        return walk(self)


Node = RunNode | StepNode | GroupNode | CallNode | MessageNode | EventNode


def _usage_within(nodes: Sequence[Node]) -> Usage:
    """What the steps among ``nodes`` cost, with everything below them (a step's history summary
    included); a sub-workflow's child run counts its own total."""
    total = ZERO_USAGE
    for node in nodes:
        if isinstance(node, StepNode):
            total += node.own_usage + _usage_within(node.children)
        elif isinstance(node, GroupNode):
            total += _usage_within(node.children)
        elif isinstance(node, RunNode):
            total += node.record.usage
    return total


def _short_repr(node: Node) -> str:
    """``StepNode('chat/3/clarify', children=2)``: a node without the tree below it (the default repr of a
    large run's root runs to megabytes, and asyncio computes it for a task's result on some paths)."""
    where = node.run_id if isinstance(node, RunNode) else node.path
    return f"{type(node).__name__}({where!r}, children={len(node.children)})"


Container = RunNode | StepNode | GroupNode


def walk(node: Node) -> Iterator[Node]:
    stack: list[Node] = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def build_tree(snapshot: RunSnapshot) -> RunNode:
    """The span tree of ``snapshot``'s run and, under the steps that started them, its child runs."""
    return _Builder(snapshot).build()


def part_of(snapshot: RunSnapshot, path: str) -> StepNode | GroupNode | RunNode | None:
    """The node at ``path`` (a step's or an iteration's, masked; "" for the run) of the tree ``build_tree``
    makes of ``snapshot``, which may hold a part of a run only (``lens.parts``): the records of the steps
    above ``path`` and the rows of some of the steps below it give the part of the run's tree below it."""
    builder = _Builder(snapshot)
    if path:
        builder.made(path)  # made first, with what is known of it: a step may have no row at its own path
    root = builder.build()
    return root if not path else builder.steps.get(path) or builder.groups.get(path)


class _Builder:
    def __init__(self, snapshot: RunSnapshot, path: str = "") -> None:
        self.snapshot = snapshot
        self.run_id = snapshot.record.run_id
        self.root = RunNode(snapshot.record, path=path)
        self.records = {step.path: step for step in snapshot.steps}
        self.steps: dict[str, StepNode] = {}
        self.groups: dict[str, GroupNode] = {}
        self.first: dict[int, float] = {}  # id(node) → when it started, for ordering
        self.calls: dict[int, CallNode] = {}  # id(step node) → its latest agent call
        self.sent: list[tuple[Container, TraceEvent]] = []  # the CallSent events, each with its node
        self.loops = _tool_loops(snapshot.steps)

    def build(self) -> RunNode:
        record = self.snapshot.record
        for step in self.snapshot.steps:
            node = self._step(step.path)
            self._start(node, step.started_at)
        for event in self.snapshot.events:
            self._add_event(event)
        self._unanswered_calls(record)
        for child_id, child in self.snapshot.children.items():
            where = self.snapshot.child_paths.get(child_id)
            child_root = _Builder(child, where or "").build()
            parent: Container = self._step(where) if where else self.root
            parent.children.append(child_root)
            self._start(child_root, child.record.created_at)
        self._pause_point(record)
        self._link_summaries()
        for node in self.steps.values():
            if node.record is None:
                node.status_if_unrecorded = _unrecorded_status(record, node.path)
        self._order(self.root)
        return self.root

    def _unanswered_calls(self, record: RunRecord) -> None:
        """Show the journaled calls whose step's attempt recorded no result: interrupted, counted in their
        step's usage; or, the latest of its step in a running run, perhaps still waiting for its reply."""
        latest = {event.path: event for _, event in self.sent}
        for target, event in self.sent:
            call = event.data
            assert isinstance(call, CallSent)
            if not call_interrupted(call, self.records.get(event.path)):
                continue  # its step's record holds the attempt's result; the call is shown with its prompt
            waiting = record.status == "running" and latest[event.path] is event
            shown = EventNode(self.run_id, event, interrupted=not waiting)
            target.children.append(shown)
            self._start(shown, event.ts)
            if not waiting and isinstance(target, StepNode):
                target.interrupted += 1

    def _link_summaries(self) -> None:
        """Give each agent call the outcome of the history summary made just before it, if any: it says
        how the history the call was sent came to be. The summary is a step below the step whose call it
        served, and its events say what it is."""
        for node in self.steps.values():
            calls = [c for c in node.children if isinstance(c, CallNode)]
            if not calls:
                continue
            outcomes = [
                (event.ts, event.data)
                for below in node.children
                if isinstance(below, StepNode)
                for event in below.events
                if isinstance(event.data, HistorySummarized | SummaryFailed)
            ]
            for call in calls:
                before = [outcome for ts, outcome in outcomes if ts <= call.ts]
                if before:
                    call.summary = before[-1]

    def _pause_point(self, record: RunRecord) -> None:
        """A paused run shows the step it waits at, though nothing of that step is recorded yet (unless it
        waits inside a child run, which shows its own)."""
        where = record.pause_path
        if record.status != "paused" or not where:
            return
        if any(where == p or where.startswith(p + "/") for p in self.snapshot.child_paths.values()):
            return
        self._step(where)

    def made(self, path: str) -> None:
        """Make the node at ``path`` (a step's, or an iteration's and the step above it) and those above it."""
        self._step(path)

    def _step(self, path: str) -> StepNode:
        """The node of the step at ``path``, created (with its ancestors) when new."""
        found = self.steps.get(path)
        if found is not None:
            return found
        segments = path.split("/")
        parent: Container = self.root
        prefix = ""
        above = ""  # the step path of the step the node is in: its names, without the keys between them
        i = 0
        while True:
            here = f"{prefix}/{segments[i]}" if prefix else segments[i]
            named = f"{above}/{segments[i]}" if above else segments[i]
            node = self.steps.get(here)
            if node is None:
                node = StepNode(self.run_id, here, segments[i], self.records.get(here))
                if prefix in self.loops:
                    node.name = _loop_child_name(node.record, prefix, segments[i])
                elif node.record is not None:
                    node.name = node.record.name
                self.steps[here] = node
                parent.children.append(node)
            if i == len(segments) - 1:
                return node
            loop = f"{here}/{segments[i + 1]}"
            if loop in self.loops and i + 2 < len(segments):  # a turn or a call of the step's tool loop
                parent, prefix, above, i = node, loop, f"{named}/{segments[i + 1]}", i + 2
                continue
            if prefix in self.loops or not self._has_groups(node, named, segments[i + 1]):  # below a call: its approval
                parent, prefix, above, i = node, here, named, i + 1
                continue
            key = segments[i + 1]
            group_path = f"{here}/{key}"
            group = self.groups.get(group_path)
            if group is None:
                word = core.KEYED_STEP_KINDS.get(self._kind(node, named), "iteration or branch")
                group = self.groups[group_path] = GroupNode(self.run_id, group_path, key, word)
                node.children.append(group)
            parent, prefix, above, i = group, group_path, named, i + 2
            if i >= len(segments):  # a path that ends at a key: no step recorded there; keep the group
                return node

    def _kind(self, node: StepNode, named: str) -> str:
        """The kind of the step of ``node``, whose step path is ``named``: its record's; for a step with no
        record yet (a loop records itself when it ends), its blueprint's, when lens was given it; else ""."""
        if node.record is not None:
            return node.record.kind
        return self.snapshot.kinds.get(named, "")

    def _has_groups(self, node: StepNode, named: str, following: str) -> bool:
        """Whether the segment after ``node``'s is a key (iteration, branch) rather than a step's name: the
        step's kind says (``_kind``); for a step of unknown kind, a key is what has no record of its own (a
        step's history summary, below it, has one)."""
        kind = self._kind(node, named)
        if kind:
            return kind in core.KEYED_STEP_KINDS
        return f"{node.path}/{following}" not in self.records

    def _add_event(self, event: TraceEvent) -> None:
        node = self._step(event.path) if event.path else None
        target: Container = node if node is not None else self.root
        (node or self.root).events.append(event)
        last = self.calls.get(id(target))
        match event.data:
            case PromptSent() as prompt:
                call = CallNode(self.run_id, event.path, 0 if last is None else last.index + 1, prompt, event.ts)
                call.turn = node is not None and node.record is not None and node.record.kind == core.MODEL_TURN_KIND
                target.children.append(call)
                self.calls[id(target)] = call
                self._start(call, event.ts)
            case ReplyReceived() as reply if last is not None and last.reply is None:
                last.reply = reply
            case ReplyCut() as cut if last is not None and last.reply is None:
                last.cuts.append(cut)
            case OutputRepaired() as repair if last is not None:
                last.repairs.append(repair)
            case ChildRunStarted(child_run_id=child) if child in self.snapshot.children:
                pass  # the child run is shown below its step
            case CallSent():  # shown by its call, or as unanswered (``_unanswered_calls``)
                self.sent.append((target, event))
            case _:  # a second reply to one prompt is kept visible rather than dropped
                self._add_plain(target, event)
        if node is not None:
            self._start(node, event.ts)

    def _add_plain(self, target: Container, event: TraceEvent) -> None:
        shown = EventNode(self.run_id, event)
        target.children.append(shown)
        self._start(shown, event.ts)

    def _start(self, node: Node, ts: float) -> None:
        known = self.first.get(id(node))
        if known is None or ts < known:
            self.first[id(node)] = ts

    def _order(self, node: Node) -> float:
        """Sort every container's children by start time (stable); return ``node``'s start time."""
        if isinstance(node, RunNode | StepNode | GroupNode):
            times = {id(child): self._order(child) for child in node.children}
            node.children.sort(key=lambda child: times[id(child)])
            if times:
                self._start(node, min(times.values()))
        if isinstance(node, RunNode) and node is not self.root:
            return self.first.get(id(node), node.record.created_at)
        return self.first.get(id(node), float("inf"))


def _tool_loops(steps: Sequence[StepRecord]) -> frozenset[str]:
    """The path segments of the tool loops in ``steps`` (``P/model`` and ``P/tool`` of each agent step ``P``
    whose loop committed a turn or a call): no step is there, the agent step's turns and calls are below."""
    kinds = core.TOOL_LOOP_KINDS
    found: set[str] = set()
    for step in steps:
        if step.kind in kinds:
            agent = step.path.rpartition("/")[0].rpartition("/")[0]
            found.update(f"{agent}/{kind}" for kind in kinds)
    return frozenset(found)


def _loop_child_name(record: StepRecord | None, loop: str, number: str) -> str:
    """The name of a tool loop's turn (``turn 2``) or call (its tool's name; ``call 3`` while unrecorded)."""
    if record is not None:
        return f"turn {number}" if record.kind == core.MODEL_TURN_KIND else record.name
    return f"{'turn' if loop.endswith('/' + core.MODEL_TURN_KIND) else 'call'} {number}"


def _messages(call: CallNode) -> list[MessageNode]:
    found = []
    for index, message in enumerate(call.prompt.messages):
        role = str(message.get("role", "?"))
        content = message.get("content", "")
        text = content if isinstance(content, str) else full_text(content)
        asked = _parsed(message.get("tool_calls"))
        if isinstance(asked, list) and asked:  # an assistant message of a tool loop: the calls it asked for
            text = "\n".join([*([text] if text else []), *(tool_call_words(each) for each in asked)])
        found.append(MessageNode(call.run_id, call.path, index, role, text))
    return found


def _parsed(value: Any) -> Any:
    """A message's ``tool_calls`` as the list it is: the engine writes them as one JSON text."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return [value]  # shown as written


def tool_call_words(call: Any) -> str:
    """A call a model asked for, as ``calls lookup({"id": "42"})``."""
    if not isinstance(call, Mapping):
        return f"calls {compact(call)}"
    return f"calls {call.get('name', '?')}({compact(call.get('arguments'))})"


def _unrecorded_status(run: RunRecord, path: str) -> str:
    """What to call a step with no recorded result, from its run's state."""
    inside = run.pause_path is not None and (run.pause_path == path or run.pause_path.startswith(path + "/"))
    if run.status == "paused" and inside:
        return "paused"
    if run.status in ("running", "interrupted"):
        return run.status
    return "not recorded"
