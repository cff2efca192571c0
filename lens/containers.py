"""The children of a container of a run's span tree, found from where the rows below it are (``RunStore.marks``:
the number, path, time and kind of each step and event; no values) and ordered as ``lens.tree`` orders them:
what ``lens.parts`` needs to write a run's tree a part at a time.

What a container's children are (``Mode``), as ``lens.tree`` places rows:

* ``run``: the run; its children are the steps named by the paths' first segment, its own events are at "";
* ``steps``: an iteration (item, branch, round); its children are the steps at the next segment;
* ``iterations``: a loop, map, parallel, conditional or ensemble step with a record (``core.KEYED_STEP_KINDS``);
  its children are its iterations, a segment each. A row at an iteration's own path (``chat/3``) is the step's
  own, and makes the iteration;
* ``unrecorded``: a step without a record (still running, or its run stopped): the segment below it names a
  step where one is recorded at that path, else an iteration (whose own rows are the step's, as above).

Each child is a handful of numbers (``Children``): its start (the earliest time of the rows below it), the first
of its rows the tree meets (which orders children that start at once: steps in the store's order, then events,
then child runs, then the pause point), how many rows it has, the numbers of its first and last step and event
(where ``RunStore.step_page`` and ``event_page`` find them), the number of the step at its own path.

``scan`` gives None for a container that cannot be cut so, which is then read whole: the run with a step at its
own path; a step whose tool loop committed turns or calls below it (``P/model/K``: its children, with no segment
between); a child run started at the container's path or at one of its iterations' own paths (a child of the
container itself); two children whose paths mask alike (the tree makes them one node).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import core
from core import RunStore
from lens.masking import Masker

Mode = Literal["run", "steps", "iterations", "unrecorded"]

NONE = 2**60  # "no such row" among numbers, which stay far below (four times it fits a signed 64-bit integer)
CHILD_RUN, PAUSE = 2 * NONE, 3 * NONE  # how the tree orders them after steps and events, when they start at once
_MARKS = 5_000  # marks per page: a few numbers and a path each


@dataclass(frozen=True)
class Window:
    """Where a container's rows are: the numbers of its first and last step, and of its first and last event."""

    steps: tuple[int, int]
    events: tuple[int, int]


EVERYWHERE = Window((1, NONE), (1, NONE))


@dataclass(frozen=True)
class Unread:
    """What makes a node without a row at its path: a child run started there (at its creation time, in the
    order the tree meets child runs), or the point a paused run waits at (``PAUSE``, at no time)."""

    path: str
    ts: float
    first: int


@dataclass
class Children:
    """The children of a container, by their paths as stored (see the module docstring)."""

    paths: list[str] = field(default_factory=list)
    masked: dict[int, str] = field(default_factory=dict)  # those whose masked path is not the stored one
    start: array[float] = field(default_factory=lambda: array("d"))
    first: array[int] = field(default_factory=lambda: array("q"))
    rows: array[int] = field(default_factory=lambda: array("q"))
    steps: array[int] = field(default_factory=lambda: array("q"))  # first, last, first, last ...
    events: array[int] = field(default_factory=lambda: array("q"))
    at: array[int] = field(default_factory=lambda: array("q"))  # the number of the step at its own path, or 0
    keyed: bytearray = field(default_factory=bytearray)  # whether that step is a container of iterations

    def add(self, path: str) -> int:
        self.paths.append(path)
        self.start.append(float("inf"))
        self.first.append(4 * NONE)
        self.rows.append(0)
        self.steps.extend((NONE, 0))
        self.events.extend((NONE, 0))
        self.at.append(0)
        self.keyed.append(0)
        return len(self.paths) - 1

    def meet(self, i: int, of: str, seq: int) -> None:
        """A row of child ``i`` (step or event, numbered ``seq``): where it is, and whether the tree meets the
        child there first."""
        table = self.steps if of == "steps" else self.events
        if seq < table[2 * i]:
            table[2 * i] = seq
        if seq > table[2 * i + 1]:
            table[2 * i + 1] = seq
        first = seq if of == "steps" else NONE + seq
        if first < self.first[i]:
            self.first[i] = first

    def count(self, i: int, of: str, seq: int, ts: float) -> None:
        """A row below child ``i``, which starts it no later than ``ts``."""
        self.meet(i, of, seq)
        self.rows[i] += 1
        if ts < self.start[i]:
            self.start[i] = ts

    def window(self, i: int) -> Window:
        return Window((self.steps[2 * i], self.steps[2 * i + 1]), (self.events[2 * i], self.events[2 * i + 1]))

    def span(self, part: Sequence[int], of: str) -> tuple[int, int]:
        """The numbers of the first and last step (``of``: or event) of the children ``part``."""
        column = self.steps if of == "steps" else self.events
        return min(column[2 * i] for i in part), max(column[2 * i + 1] for i in part)

    def is_iteration(self, i: int, mode: Mode) -> bool:
        """Whether child ``i`` of a container of ``mode`` is an iteration (else a step)."""
        return mode == "iterations" or (mode == "unrecorded" and not self.at[i])

    def opens_as(self, i: int, mode: Mode) -> Mode | None:
        """What child ``i`` is as a container, or None when it is a step of no iterations (an agent's call)."""
        if self.is_iteration(i, mode):
            return "steps"
        if not self.at[i]:
            return "unrecorded"
        return "iterations" if self.keyed[i] else None

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
class Scan:
    """A container's children, and the numbers of its own rows: its events (at its path, and for a step at its
    iterations' own paths) and the steps recorded at its iterations' own paths."""

    children: Children
    own_events: array[int]
    own_steps: array[int]


async def scan(
    store: RunStore,
    run_id: str,
    masker: Masker,
    path: str,
    window: Window,
    mode: Mode,
    unread: Sequence[Unread],
) -> Scan | None:
    """The children of the container at ``path`` ("" for the run) of run ``run_id``, from the marks of the rows
    in ``window`` and the nodes ``unread`` makes; None when it cannot be cut (the module docstring)."""
    children = Children()
    index: dict[str, int] = {}  # a child's index by its path: only to find a row's child
    changed: set[str] = set()  # the masked paths that are not the stored ones
    own_events, own_steps = array("q"), array("q")
    prefix = f"{path}/" if path else ""
    cut = len(prefix)
    tables: tuple[tuple[Literal["steps", "events"], tuple[int, int]], ...] = (
        ("steps", window.steps),  # first: a step recorded at a child's path says what the child is
        ("events", window.events),
    )
    for of, (first, last) in tables:
        after = first - 1
        while after < last:
            marks = await store.marks(run_id, of, after=after, until=last, limit=_MARKS)
            if not marks:
                break
            after = marks[-1].seq
            for mark in marks:
                where = mark.path
                if where == path:
                    if of == "events":
                        own_events.append(mark.seq)
                    elif not path:
                        return None  # a step at the run's own path: a child of the run
                    continue
                if not where.startswith(prefix):
                    continue
                slash = where.find("/", cut)
                child = where if slash < 0 else where[:slash]
                i = index.get(child)
                if i is None:
                    i = index[child] = children.add(child)
                    if not _masks_apart(children, i, masker, index, changed):
                        return None
                if slash < 0:
                    if of == "steps":
                        children.at[i] = mark.seq
                        children.keyed[i] = mark.kind in core.KEYED_STEP_KINDS
                    if mode == "iterations" or (mode == "unrecorded" and of == "events" and not children.at[i]):
                        (own_steps if of == "steps" else own_events).append(mark.seq)
                        children.meet(i, of, mark.seq)  # the step's own row: it makes the iteration, no more
                        continue
                elif mode == "unrecorded" and of == "steps" and _loop_row(mark.kind, where, slash):
                    return None  # a turn or call of the step's tool loop, at P/model/K: its child
                children.count(i, of, mark.seq, mark.ts)
    for node in unread:
        if node.path != path and not node.path.startswith(prefix):
            continue
        started = node.first < PAUSE  # a child run started there (else the point a paused run waits at)
        if node.path == path:
            if started:
                return None  # a child run of the container itself
            continue  # the pause point at the container: nothing new
        slash = node.path.find("/", cut)
        child = node.path if slash < 0 else node.path[:slash]
        i = index.get(child)
        if i is None:
            i = index[child] = children.add(child)
            if not _masks_apart(children, i, masker, index, changed):
                return None
        if started and slash < 0 and children.is_iteration(i, mode):
            return None  # started at an iteration's own path: a child run of the container itself
        children.start[i] = min(children.start[i], node.ts)
        children.first[i] = min(children.first[i], node.first)
    return Scan(children, own_events, own_steps)


def _loop_row(kind: str, where: str, slash: int) -> bool:
    """Whether a step of ``kind`` at ``where`` is a turn or a call of a tool loop two segments below the
    container (whose first ends at ``slash``)."""
    return kind in core.TOOL_LOOP_KINDS and where.find("/", slash + 1) < 0


def _masks_apart(children: Children, i: int, masker: Masker, index: dict[str, int], changed: set[str]) -> bool:
    """Record child ``i``'s masked path; False when another child's path masks as it does (``index`` holds
    the stored paths, ``changed`` the masked paths that differ from theirs)."""
    stored = children.paths[i]
    masked = masker.path(stored)
    if masked == stored:
        return stored not in changed
    if masked in changed or masked in index:
        return False
    children.masked[i] = masked
    changed.add(masked)
    return True
