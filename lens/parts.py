"""A run's span tree a part at a time: what ``flujo lens trace RUN --json`` writes as it reads, in memory that
does not grow with the run.

``build_tree`` (``lens.tree``) holds the whole run: its records, events and the nodes made of them (640 MB
for a run of 100,000 events). ``RunParts`` gives the same tree as ``Piece``s, in its order: a node with
everything below it (``Whole``), or a container ``Opened`` (its own fields), its children, then ``Closed``.

A container is the run, a loop, map, parallel, conditional or ensemble step with a record
(``core.KEYED_STEP_KINDS``), or one of its iterations (items, branches, rounds). Its children are found from
where its rows are (``RunStore.marks``: the path, time and number of each step and event, no values) and
ordered as ``build_tree`` orders siblings: by when they started (the earliest time of all below them), ties
in the order the tree met them (steps in the store's order, then events, then child runs, then the pause
point). A child of more than ``rows`` rows (steps and events) that is a container is opened in turn; the
others are read together, up to ``rows`` rows at a time (``RunStore.step_page`` and ``event_page``, between
the numbers of their rows), and built by ``lens.tree`` from those rows and the records of the containers
above them, so each part is the tree's own. Memory holds one part, a few numbers for each child of the
containers open, and the texts the ``Masker`` remembers; not the run.

What is not cut so is read whole, as ``build_tree`` reads it: a container with a row at one of its
iterations' own paths, or with a child run started at its own path, or two of whose children's paths mask
alike, is read as one part; a run with a step at its own path, or a child run whose path is unknown, whole.
"""

from __future__ import annotations

from array import array
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import core
from core import ChildRunStarted, RunRecord, RunStore, StepRecord, TraceEvent
from lens.masking import Masker
from lens.snapshot import RunSnapshot, load_record, load_run, paused_inside
from lens.tree import GroupNode, Node, RunNode, StepNode, build_tree, part_of

ROWS = 1_000
"""How many rows (steps and events) a part holds, unless one step holds more on its own."""

_MARKS = 5_000  # marks per page: a few numbers and a path each
_ALL_CHILDREN = 100_000  # as lens.snapshot reads them
_NONE = 2**60  # "no such row" among numbers, which stay far below (four times it fits a signed 64-bit integer)
_CHILD_RUN, _PAUSE = 2 * _NONE, 3 * _NONE  # how the tree orders them after steps and events, when tied


@dataclass(frozen=True)
class Opened:
    """A container: its own fields (no children); its children follow, then ``Closed``."""

    node: StepNode | GroupNode


@dataclass(frozen=True)
class Closed:
    """The end of the container opened last."""


@dataclass(frozen=True)
class Whole:
    """A step, an iteration or a child run with everything below it."""

    node: Node


Piece = Opened | Closed | Whole


@dataclass
class _Children:
    """The children of a container, from the marks of its rows: for each, by its path (as stored), its start
    (the earliest time below it), the first row of it the tree meets (``_first``: a step's number, an
    event's plus ``_NONE``, a child run's order plus twice that, the pause point's three times), its number
    of rows, the numbers of its first and last step and event, the number of the step at its own path (0:
    none) and whether that step is a container."""

    index: dict[str, int] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    masked: dict[int, str] = field(default_factory=dict)  # those whose masked path is not the stored one
    start: array[float] = field(default_factory=lambda: array("d"))
    first: array[int] = field(default_factory=lambda: array("q"))
    rows: array[int] = field(default_factory=lambda: array("q"))
    steps: array[int] = field(default_factory=lambda: array("q"))  # first, last, first, last ...
    events: array[int] = field(default_factory=lambda: array("q"))
    at: array[int] = field(default_factory=lambda: array("q"))
    keyed: bytearray = field(default_factory=bytearray)

    def add(self, path: str) -> int:
        i = self.index[path] = len(self.paths)
        self.paths.append(path)
        self.start.append(float("inf"))
        self.first.append(4 * _NONE)
        self.rows.append(0)
        self.steps.extend((_NONE, 0))
        self.events.extend((_NONE, 0))
        self.at.append(0)
        self.keyed.append(0)
        return i

    def order(self) -> Sequence[int]:
        """The children in the tree's order: by start, ties by the row the tree met first. Mostly the order
        they were met in (a loop's iterations, one after the other): then no list of them is made."""
        start, first = self.start, self.first
        if all((start[i], first[i]) <= (start[i + 1], first[i + 1]) for i in range(len(start) - 1)):
            return range(len(start))
        order = sorted(range(len(self.paths)), key=first.__getitem__)
        order.sort(key=start.__getitem__)
        return order


@dataclass
class _Scan:
    children: _Children
    own: array[int]  # the numbers of the container's own events


@dataclass(frozen=True)
class _Window:
    """Where a container's rows are: the numbers of its first and last step, and of its first and last event."""

    steps: tuple[int, int]
    events: tuple[int, int]


_EVERYWHERE = _Window((1, _NONE), (1, _NONE))


class RunParts:
    """The span tree of the run of ``record`` (as stored; ``lens.listing.as_shown``), read from ``store`` a part
    at a time and masked with ``masker``: first its own ``events()``, then its ``spans()``."""

    def __init__(self, store: RunStore, record: RunRecord, masker: Masker, *, rows: int = ROWS) -> None:
        self.store = store
        self.record = record
        self.masker = masker
        self.rows = rows
        self.run_id = record.run_id
        self.masked = masker.run(record)
        self._scan: _Scan | None = None
        self._whole: RunNode | None = None  # when the run is read whole
        self._child_runs: list[RunRecord] = []  # oldest first, as the tree meets them
        self._starts: dict[str, str] = {}  # child run id → the path of the step that started it

    async def events(self) -> AsyncIterator[TraceEvent]:
        """The run's own events (at path ""), masked, in order; reads where every row of the run is first."""
        if await self._children_known():
            self._scan = await self._rows_below("", _EVERYWHERE, keyed=False)
        if self._scan is None:
            self._whole = build_tree(await load_run(self.store, self.run_id, redactor=self.masker.redactor,
                                                    record=self.record))  # fmt: skip
            for event in self._whole.events:
                yield event
            return
        own = self._scan.own
        after = own[0] - 1 if own else 0
        while own and after < own[-1]:
            page = await self.store.event_page(self.run_id, after=after, until=own[-1], under="")
            if not page:
                break
            after = page[-1][0]
            self.masker.forget()
            for _, event in page:
                if not event.path:
                    yield self.masker.event(event)

    async def spans(self) -> AsyncIterator[Piece]:
        """The run's children (its ``spans``), after ``events()``."""
        if self._whole is not None:
            for node in self._whole.children:
                yield Whole(node)
            return
        assert self._scan is not None, "events() first"
        async for piece in self._below("", self._scan, (), iterations=False):
            yield piece

    async def _children_known(self) -> bool:
        """Read the run's child runs and where each was started, as ``lens.snapshot`` finds them; False when
        the run is read whole: a child run named by an event is not the run's, or has no known path."""
        named = {
            event.data.child_run_id: event.path
            for event in await self.store.events(self.run_id, kind=ChildRunStarted.kind)
            if isinstance(event.data, ChildRunStarted)
        }
        found = await self.store.list_runs(parent_run_id=self.run_id, limit=_ALL_CHILDREN)
        mine = {child.run_id for child in found}
        if not mine.issuperset(named):
            return False
        for child in found:
            where = named.get(child.run_id) or paused_inside(self.record, child)
            if not where:
                return False
            self._starts[child.run_id] = where
        self._child_runs = sorted(found, key=lambda child: child.created_at)
        return True

    async def _rows_below(self, path: str, window: _Window, *, keyed: bool) -> _Scan | None:
        """The children of the container at ``path`` ("" for the run) from the marks of the rows in ``window``;
        None when it cannot be cut (the module docstring). ``keyed``: its children are iterations."""
        children = _Children()
        own = array("q")
        prefix = f"{path}/" if path else ""
        cut = len(prefix)
        tables: tuple[tuple[Literal["steps", "events"], tuple[int, int]], ...] = (
            ("steps", window.steps),
            ("events", window.events),
        )
        for of, (first, last) in tables:
            after = first - 1
            while after < last:
                marks = await self.store.marks(self.run_id, of, after=after, until=last, limit=_MARKS)
                if not marks:
                    break
                after = marks[-1].seq
                for mark in marks:
                    where = mark.path
                    if where == path:
                        if of == "steps" and not path:
                            return None  # a step at the run's own path: it is a child of the run
                        if of == "events":
                            own.append(mark.seq)
                        continue
                    if not where.startswith(prefix):
                        continue
                    slash = where.find("/", cut)
                    if slash < 0 and keyed:
                        return None  # a row at an iteration's own path belongs to the step above it
                    child = where if slash < 0 else where[:slash]
                    i = children.index.get(child)
                    if i is None:
                        i = children.add(child)
                        if not self._masks_apart(children, i):
                            return None
                    _count(children, i, of, mark.seq, mark.ts)
                    if slash < 0 and of == "steps":
                        children.at[i] = mark.seq
                        children.keyed[i] = mark.kind in core.KEYED_STEP_KINDS
        if not self._add_unread(children, path, prefix, keyed=keyed):
            return None
        children.index.clear()  # needed to find a row's child only
        return _Scan(children, own)

    def _masks_apart(self, children: _Children, i: int) -> bool:
        """Record child ``i``'s masked path; False when another child's path masks as it does (the tree
        would make them one node)."""
        stored = children.paths[i]
        masked = self.masker.path(stored)
        if masked == stored:
            return stored not in children.masked.values()
        if masked in children.index or masked in children.masked.values():
            return False
        children.masked[i] = masked
        return True

    def _add_unread(self, children: _Children, path: str, prefix: str, *, keyed: bool) -> bool:
        """Add the child runs started below ``path`` and the pause point, as the tree meets them; False when
        one is at ``path`` itself or, below a container of iterations, at an iteration's own path."""
        unread = [(where, child.created_at, _CHILD_RUN + n) for n, child in enumerate(self._child_runs)
                  if (where := self._starts[child.run_id]) == path or where.startswith(prefix)]  # fmt: skip
        pause = self.record.pause_path
        inside_child = any(pause == p or (pause or "").startswith(p + "/") for p in self._starts.values())
        if self.record.status == "paused" and pause and not inside_child and pause.startswith(prefix):
            unread.append((pause, float("inf"), _PAUSE))
        for where, ts, first in unread:
            slash = where.find("/", len(prefix))
            if where == path or (slash < 0 and keyed):
                return False
            child = where if slash < 0 else where[:slash]
            i = children.index.get(child)
            if i is None:
                i = children.add(child)
                if not self._masks_apart(children, i):
                    return False
            children.start[i] = min(children.start[i], ts)
            children.first[i] = min(children.first[i], first)
        return True

    async def _below(
        self, path: str, scan: _Scan, above: tuple[StepRecord, ...], *, iterations: bool
    ) -> AsyncIterator[Piece]:
        """The children of the container at ``path``: opened when they are containers of many rows, else
        read ``rows`` rows at a time. ``above``: the records of the container steps above them (masked);
        ``iterations``: the container is a step, its children its iterations."""
        children = scan.children
        keyed = iterations
        part: list[int] = []
        rows = 0
        for i in children.order():
            size = children.rows[i]
            if size > self.rows and (keyed or children.keyed[i]):
                async for piece in self._part(path, children, part, above):
                    yield piece
                part, rows = [], 0
                opened = self._iteration(children, i, above) if keyed else self._step(children, i, above)
                async for piece in opened:
                    yield piece
                continue
            if part and rows + size > self.rows:
                async for piece in self._part(path, children, part, above):
                    yield piece
                part, rows = [], 0
            part.append(i)
            rows += size
        async for piece in self._part(path, children, part, above):
            yield piece

    async def _step(self, children: _Children, i: int, above: tuple[StepRecord, ...]) -> AsyncIterator[Piece]:
        """A container step of many rows: its own fields, then its iterations; read as one part when it
        cannot be cut."""
        path = children.paths[i]
        scan = await self._rows_below(path, _window(children, i), keyed=True)
        if scan is None:
            async for piece in self._part(path.rpartition("/")[0], children, [i], above):
                yield piece
            return
        record = await self.store.step_page(self.run_id, after=children.at[i] - 1, until=children.at[i], limit=1)
        own = [self.masker.event(event) for seq in scan.own for _, event in await self._event(seq)]
        mine = self.masker.step(record[0][1])
        node = part_of(RunSnapshot(self.masked, (*above, mine), tuple(own)), mine.path)
        assert isinstance(node, StepNode)
        node.children = []
        yield Opened(node)
        async for piece in self._below(path, scan, (*above, mine), iterations=True):
            yield piece
        yield Closed()

    async def _iteration(self, children: _Children, i: int, above: tuple[StepRecord, ...]) -> AsyncIterator[Piece]:
        """An iteration (item, branch, round) of many rows: itself, then its steps."""
        path = children.paths[i]
        scan = await self._rows_below(path, _window(children, i), keyed=False)
        if scan is None:
            async for piece in self._part(path.rpartition("/")[0], children, [i], above):
                yield piece
            return
        masked = children.masked.get(i) or self.masker.path(path)
        word = core.KEYED_STEP_KINDS.get(above[-1].kind, "iteration or branch")
        yield Opened(GroupNode(self.run_id, masked, masked.rpartition("/")[2], word))
        async for piece in self._below(path, scan, above, iterations=False):
            yield piece
        yield Closed()

    async def _event(self, seq: int) -> list[tuple[int, TraceEvent]]:
        return await self.store.event_page(self.run_id, after=seq - 1, until=seq, limit=1)

    async def _part(
        self, path: str, children: _Children, part: Sequence[int], above: tuple[StepRecord, ...]
    ) -> AsyncIterator[Piece]:
        """The children ``part`` of the container at ``path``, whole: their rows read, masked and built into
        the tree below the records ``above``."""
        if not part:
            return
        self.masker.forget()  # what it kept of the part before, written by now
        prefix = f"{path}/" if path else ""
        wanted = {children.paths[i] for i in part}

        def mine(where: str) -> bool:
            slash = where.find("/", len(prefix))
            return where.startswith(prefix) and (where if slash < 0 else where[:slash]) in wanted

        under = path or None
        first, last = _span(children, part, "steps")
        steps = [self.masker.step(step) async for step in self._steps(first, last, under) if mine(step.path)]
        first, last = _span(children, part, "events")
        events = [self.masker.event(event) async for event in self._events(first, last, under) if mine(event.path)]
        runs: dict[str, RunSnapshot] = {}
        starts: dict[str, str] = {}
        seen = {self.run_id, *(child.run_id for child in self._child_runs)}
        for child in self._child_runs:
            where = self._starts[child.run_id]
            if mine(where):
                runs[child.run_id] = await load_record(self.store, child, self.masker, seen=set(seen), depth=1)
                starts[child.run_id] = self.masker.path(where)
        snapshot = RunSnapshot(self.masked, (*above, *steps), tuple(events), runs, starts)
        container = part_of(snapshot, self.masker.path(path) if path else "")
        built = (
            {} if container is None else {n.path: n for n in container.children if isinstance(n, StepNode | GroupNode)}
        )
        for i in part:
            node = built.get(children.masked.get(i) or self.masker.path(children.paths[i]))
            if node is not None:
                yield Whole(node)

    async def _steps(self, first: int, last: int, under: str | None) -> AsyncIterator[StepRecord]:
        after = first - 1
        while after < last and (page := await self.store.step_page(self.run_id, after=after, until=last, under=under)):
            after = page[-1][0]
            for _, step in page:
                yield step

    async def _events(self, first: int, last: int, under: str | None) -> AsyncIterator[TraceEvent]:
        after = first - 1
        while after < last and (page := await self.store.event_page(self.run_id, after=after, until=last, under=under)):
            after = page[-1][0]
            for _, event in page:
                yield event


def _count(children: _Children, i: int, of: str, seq: int, ts: float) -> None:
    """Count a row of child ``i``: its time, its number."""
    children.rows[i] += 1
    if ts < children.start[i]:
        children.start[i] = ts
    table = children.steps if of == "steps" else children.events
    if seq < table[2 * i]:
        table[2 * i] = seq
    if seq > table[2 * i + 1]:
        table[2 * i + 1] = seq
    first = seq if of == "steps" else _NONE + seq
    if first < children.first[i]:
        children.first[i] = first


def _window(children: _Children, i: int) -> _Window:
    return _Window(
        (children.steps[2 * i], children.steps[2 * i + 1]), (children.events[2 * i], children.events[2 * i + 1])
    )


def _span(children: _Children, part: Iterable[int], table: str) -> tuple[int, int]:
    column = children.steps if table == "steps" else children.events
    return min(column[2 * i] for i in part), max(column[2 * i + 1] for i in part)
