"""A run's span tree a part at a time: what ``flujo lens trace RUN --json`` writes as it reads, in memory that
does not grow with the run.

``build_tree`` (``lens.tree``) holds the whole run: its records, events and the nodes made of them (640 MB
for a run of 100,000 events). ``RunParts`` gives the same tree as ``Piece``s, in its order: nodes with
everything below them (``Whole``: a part), or a container ``Opened`` (its own fields), its children, then
``Closed``.

The containers are the run, its loops, maps, parallel, conditional and ensemble steps, their iterations, and
steps without a record (``lens.containers``, which finds a container's children from where the rows below it
are, without their values, and orders them as the tree does). A child of more than ``rows`` rows (steps and
events) that is a container is opened in turn; the others are read together, up to ``rows`` rows at a time
(``RunStore.step_page`` and ``event_page``, between the numbers of their rows), masked, and built by
``lens.tree`` from those rows and the records of the steps above them, so each part is the tree's own. Memory
holds one part, a handful of numbers for each child of the containers open, and the texts the ``Masker``
remembers; not the run. A container that cannot be cut so (``lens.containers``) is one part; a run whose
child runs' places are not all known (an event names a run that is not its child, or a child run has no
path) is read whole, as ``build_tree`` reads it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

import core
from core import ChildRunStarted, RunRecord, RunStore, StepRecord, TraceEvent
from lens.containers import CHILD_RUN, EVERYWHERE, PAUSE, Children, Mode, Scan, Unread, Window, scan
from lens.masking import Masker
from lens.snapshot import RunSnapshot, load_record, load_run, paused_inside
from lens.tree import GroupNode, Node, RunNode, StepNode, build_tree, part_of

ROWS = 2_000
"""How many rows (steps and events) a part holds, unless one step holds more on its own."""

_ALL_CHILDREN = 100_000  # as lens.snapshot reads them


@dataclass(frozen=True)
class Opened:
    """A container: its own fields (no children); its children follow, then ``Closed``."""

    node: StepNode | GroupNode


@dataclass(frozen=True)
class Closed:
    """The end of the container opened last."""


@dataclass(frozen=True)
class Whole:
    """Steps, iterations or child runs, one after the other, each with everything below it."""

    nodes: Sequence[Node]


Piece = Opened | Closed | Whole


class RunParts:
    """The span tree of the run of ``record`` (as stored; ``lens.listing.as_shown``), read from ``store`` a part
    at a time and masked with ``masker``: first its own ``events()``, then its ``spans()``."""

    def __init__(
        self,
        store: RunStore,
        record: RunRecord,
        masker: Masker,
        *,
        rows: int = ROWS,
        kinds: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self.kinds = {} if kinds is None else kinds  # the steps' kinds from the blueprint (RunSnapshot.kinds)
        self.record = record
        self.masker = masker
        self.rows = rows
        self.page = max(rows, 100)  # a part's rows in a page or two: a page is a query (and a thread's turn)
        self.run_id = record.run_id
        self.masked = masker.run(record)
        self._scan: Scan | None = None
        self._whole: RunNode | None = None  # when the run is read whole
        self._child_runs: list[RunRecord] = []  # oldest first, as the tree meets them
        self._starts: dict[str, str] = {}  # child run id → the path of the step that started it
        self._unread: list[Unread] = []

    async def events(self) -> AsyncIterator[TraceEvent]:
        """The run's own events (at path ""), masked, in order; reads where every row of the run is first."""
        if await self._children_known():
            self._scan = await self._rows("", EVERYWHERE, "run")
        if self._scan is None:
            self._whole = build_tree(await load_run(self.store, self.run_id, redactor=self.masker.redactor,
                                                    record=self.record, kinds=self.kinds))  # fmt: skip
            for event in self._whole.events:
                yield event
            return
        own = self._scan.own_events
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
            yield Whole(self._whole.children)
            return
        assert self._scan is not None, "events() first"
        async for piece in self._below("", self._scan, "run", (), None):
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
        if not {child.run_id for child in found}.issuperset(named):
            return False
        for child in found:
            where = named.get(child.run_id) or paused_inside(self.record, child)
            if not where:
                return False
            self._starts[child.run_id] = where
        self._child_runs = sorted(found, key=lambda child: child.created_at)
        self._unread = [
            Unread(self._starts[child.run_id], child.created_at, CHILD_RUN + n)
            for n, child in enumerate(self._child_runs)
        ]
        pause = self.record.pause_path
        inside = any(pause == p or (pause or "").startswith(p + "/") for p in self._starts.values())
        if self.record.status == "paused" and pause and not inside:
            self._unread.append(Unread(pause, float("inf"), PAUSE))
        return True

    async def _rows(self, path: str, window: Window, mode: Mode) -> Scan | None:
        return await scan(self.store, self.run_id, self.masker, path, window, mode, self._unread)

    async def _below(
        self, path: str, found: Scan, mode: Mode, above: tuple[StepRecord, ...], owner: StepRecord | None
    ) -> AsyncIterator[Piece]:
        """The children of the container at ``path`` (of ``mode``): opened when they are containers of many rows,
        else read ``rows`` rows at a time. ``above``: the records of the steps above them (masked); ``owner``:
        the container's record, when it is a step."""
        children = found.children
        part: list[int] = []
        rows = 0
        for i in children.order():
            size = children.rows[i]
            opens = children.opens_as(i, mode) if size > self.rows else None
            if opens is not None:
                async for piece in self._part(path, children, part, above):
                    yield piece
                part, rows = [], 0
                async for piece in self._open(path, children, i, opens, above, owner):
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

    async def _open(
        self,
        parent: str,
        children: Children,
        i: int,
        mode: Mode,
        above: tuple[StepRecord, ...],
        owner: StepRecord | None,
    ) -> AsyncIterator[Piece]:
        """Child ``i`` of the container at ``parent``, a container of ``mode`` of many rows: its own fields, then
        its children; one part when it cannot be cut."""
        path = children.paths[i]
        found = await self._rows(path, children.window(i), mode)
        if found is None:
            async for piece in self._part(parent, children, [i], above):
                yield piece
            return
        masked = children.masked.get(i) or self.masker.path(path)
        if mode == "steps":  # an iteration of ``owner`` (None: of a step without a record)
            word = core.KEYED_STEP_KINDS.get(owner.kind if owner else "", "iteration or branch")
            yield Opened(GroupNode(self.run_id, masked, masked.rpartition("/")[2], word))
            async for piece in self._below(path, found, mode, above, owner):
                yield piece
            yield Closed()
            return
        mine = None if not children.at[i] else self.masker.step(await self._step(children.at[i]))
        own_steps = [self.masker.step(await self._step(seq)) for seq in found.own_steps]
        own_events = [self.masker.event(await self._event(seq)) for seq in found.own_events]
        records = (*above, *([mine] if mine else []), *own_steps)
        node = part_of(RunSnapshot(self.masked, records, tuple(own_events), kinds=self.kinds), masked)
        assert isinstance(node, StepNode)
        node.children = []
        yield Opened(node)
        async for piece in self._below(path, found, mode, (*above, *([mine] if mine else [])), mine):
            yield piece
        yield Closed()

    async def _step(self, seq: int) -> StepRecord:
        return (await self.store.step_page(self.run_id, after=seq - 1, until=seq, limit=1))[0][1]

    async def _event(self, seq: int) -> TraceEvent:
        return (await self.store.event_page(self.run_id, after=seq - 1, until=seq, limit=1))[0][1]

    async def _part(
        self, path: str, children: Children, part: Sequence[int], above: tuple[StepRecord, ...]
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
        first, last = children.span(part, "steps")
        steps = [self.masker.step(step) async for step in self._steps(first, last, under) if mine(step.path)]
        first, last = children.span(part, "events")
        events = [self.masker.event(event) async for event in self._events(first, last, under) if mine(event.path)]
        runs: dict[str, RunSnapshot] = {}
        starts: dict[str, str] = {}
        seen = {self.run_id, *(child.run_id for child in self._child_runs)}
        for child in self._child_runs:
            where = self._starts[child.run_id]
            if mine(where):
                runs[child.run_id] = await load_record(self.store, child, self.masker, seen=set(seen), depth=1)
                starts[child.run_id] = self.masker.path(where)
        snapshot = RunSnapshot(self.masked, (*above, *steps), tuple(events), runs, starts, kinds=self.kinds)
        container = part_of(snapshot, self.masker.path(path) if path else "")
        nodes = [] if container is None else container.children
        built = {node.path: node for node in nodes if isinstance(node, StepNode | GroupNode)}
        wanted_nodes = (built.get(children.masked.get(i) or self.masker.path(children.paths[i])) for i in part)
        yield Whole([node for node in wanted_nodes if node is not None])

    async def _steps(self, first: int, last: int, under: str | None) -> AsyncIterator[StepRecord]:
        after = first - 1
        while after < last and (
            page := await self.store.step_page(self.run_id, after=after, until=last, under=under, limit=self.page)
        ):
            after = page[-1][0]
            for _, step in page:
                yield step

    async def _events(self, first: int, last: int, under: str | None) -> AsyncIterator[TraceEvent]:
        after = first - 1
        while after < last and (
            page := await self.store.event_page(self.run_id, after=after, until=last, under=under, limit=self.page)
        ):
            after = page[-1][0]
            for _, event in page:
                yield event
