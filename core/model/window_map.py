"""A function mapped over the successive windows of a growing sequence, paying for what is new in each.

A conversation's prompts send a window of its history that moves on with it: each prompt holds the previous
one's items less its oldest (once the bound is full) plus the newest turns, and the current message. What a
prompt's items are mapped to (their chat messages, their masked dicts) was mostly mapped for the previous
prompt already. ``WindowMap`` remembers the last few windows it mapped with their results, finds where the
new window's items are the same as a remembered window's, and maps only the others; the rest is copied
from the remembered result by slicing, in C, where mapping item by item cost a Python-level call or look-up
per item, which made every prompt cost the length of its window (docs/performance.md). A map lives as long
as what it serves (a run's redactor, a conversation's history list): it holds the items of its windows.

Invariants:
- The result is ``[function(item) for item in items]``, for a ``function`` that gives equal results for
  equal items (a chat message from a turn's role and content, a message's masked dict), always the same
  function for one map: an item's result is reused from a remembered item that is the same object or
  equal to it (``==``, compared in C).
- Remembered windows and their results are copies, replaced whole, never changed: threads may share a map.
- At most ``SIZE`` windows are remembered; what is found costs a walk of at most ``_WALK`` items in Python,
  the rest is compared and copied in C.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

SIZE = 8
"""Windows remembered per map, by their first item: the prompts of each agent (its system prompt first)."""

_WALK = 8  # items compared one by one before the common start of two windows is compared in C
_DROPPED = 16  # how far into a remembered window its continuation is looked for (the oldest items dropped)


class WindowMap(Generic[T, R]):
    """A function mapped over sequences that are mostly a remembered sequence, grown at its end or slid.
    The function is given with each call (a map holds none: a redactor's bound method would make a cycle)."""

    def __init__(self) -> None:
        self._by_first: dict[int, tuple[list[T], tuple[R, ...]]] = {}  # id(items[0]) → (items, results)
        self._last: tuple[list[T], tuple[R, ...]] | None = None

    def map(self, items: Sequence[T], function: Callable[[T], R]) -> list[R]:
        """``[function(item) for item in items]``, calling ``function`` for the items that are new."""
        if not items:
            return []
        items = list(items)  # a copy: the caller's list may change, the remembered one may not
        remembered = self._by_first.get(id(items[0]))
        if remembered is None or remembered[0][0] is not items[0]:
            remembered = self._last
        results = _map(items, remembered, function)
        if len(self._by_first) >= SIZE:
            self._by_first.clear()
        # The window holds items[0], so that its id stays its own while it is remembered.
        self._by_first[id(items[0])] = self._last = (items, tuple(results))
        return results


def _map(items: list[T], remembered: tuple[list[T], tuple[R, ...]] | None, function: Callable[[T], R]) -> list[R]:
    if remembered is None:
        return list(map(function, items))
    known, mapped = remembered
    start, drop, run = overlap(known, items)
    if not start and not run:
        return list(map(function, items))
    new = map(function, items[start + run :])
    return [*mapped[:start], *mapped[start + drop : start + drop + run], *new]


def overlap(known: list[T], items: list[T]) -> tuple[int, int, int]:
    """``(start, drop, run)``: ``items`` begins with the first ``start`` items of ``known``, then the ``run``
    items of ``known`` that follow ``drop`` more; what comes after is new. ``(len(known), 0, 0)`` when
    ``items`` extends ``known``; ``(1, 2, 88)`` when a prompt of a system message and 90 history messages
    drops the two oldest of them; ``(0, 0, 0)`` when nothing is shared that way. Items are the same when
    they are equal (``==``, which lists compare in C, the same object first)."""
    size, count = len(known), len(items)
    limit = min(size, count)
    start = 0
    while start < limit and start < _WALK and items[start] is known[start]:
        start += 1
    if start == _WALK and start < limit:  # a long common start: the window grew at its end
        start = _common_start(known, items, start, limit)
    if start >= limit:
        return start, 0, 0
    first = items[start]
    drop = 0
    for index in range(start + 1, min(size, start + 1 + _DROPPED)):
        if known[index] is first:
            drop = index - start
            break
    if not drop:
        return start, 0, 0
    run = min(size - start - drop, count - start)
    for length in (run, run - 1):  # the remembered window's last item may not be sent again (a current message)
        if length > 0 and items[start : start + length] == known[start + drop : start + drop + length]:
            return start, drop, length
    return start, 0, 0


def _common_start(known: list[T], items: list[T], start: int, limit: int) -> int:
    """The length of the common start of ``known`` and ``items``, known to be at least ``start`` and at most
    ``limit``: compared whole in C when they share all of it or all but its last item (a window grown at
    its end whose previous current message is not sent again), else found by halving, in C too."""
    for end in (limit, limit - 1):
        if end > start and items[start:end] == known[start:end]:
            return end
    low, high = start, limit - 1  # the common start is at least low and less than high
    while high - low > 1:
        middle = (low + high) // 2
        if items[low:middle] == known[low:middle]:
            low = middle
        else:
            high = middle
    return low
