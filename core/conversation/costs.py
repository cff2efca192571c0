"""What a history's turns cost in a prompt, summed once and remembered between the bounding passes over it.

Every agent call of a conversational loop bounds the same history again, grown by a turn or two. Summing the
costs of every kept turn on every call made each iteration cost the length of the kept history; instead the
cumulative costs of a window of the history are remembered (``Window``), extended by the new turns, and the
oldest turn that fits a bound is found by bisection.

Invariants:
- A window is trusted for a list only when that list holds the very turn objects it was made from at the
  very same positions: the history lists only grow at the end (``core.context``), so the very list it was
  made from (``source``, a loop's ``Turns``, referred to weakly) still does; any other list is checked by
  identity, turn by turn, in C. A parallel's branches work on copies of the lists, so a window is keyed by
  the first turn of the conversation, not by the list. Anything else (a list changed otherwise, a branch
  that went its own way) fails the check and the costs are summed again.
- Every turn of a window has been counted (``ConversationTurn.tokens``): a window is made only once a bound
  needs the exact counts, so a history that fits by its upper bounds still never loads the tokenizer.
- Windows are immutable (new tuples on every change) and few (``_WINDOWS_SIZE``): threads may share them.
"""

from __future__ import annotations

import operator
import weakref
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from core.text.tokens import MESSAGE_OVERHEAD
from core.text.turns import ConversationTurn, Turns

TURN_OVERHEAD = MESSAGE_OVERHEAD + 1  # the role is one token (OpenAI's accounting, as count_messages)
_WINDOWS_SIZE = 64  # conversations remembered at once (a run has one per loop, parallel branches a few)


def turn_cost(turn: ConversationTurn) -> int:
    """What ``turn`` costs in a prompt: its tokens (counted now if they were not yet) and the overhead."""
    return turn.tokens + TURN_OVERHEAD


@dataclass(frozen=True, slots=True)
class Window:
    """The cumulative costs of ``turns``, found at ``start`` of the lists they were summed from:
    ``sums[i + 1] - sums[j]`` is the cost of ``turns[j : i + 1]`` (``sums`` has one more item)."""

    first: ConversationTurn  # the first turn of those lists: the key (held, so that its id stays its own)
    start: int
    turns: tuple[ConversationTurn, ...]
    sums: tuple[int, ...]
    source: weakref.ref[Turns] | None  # the history list they were summed from, which only grows at its end

    @property
    def end(self) -> int:
        return self.start + len(self.turns)


_WINDOWS: dict[int, Window] = {}


def remembered(turns: Sequence[ConversationTurn]) -> Window | None:
    """The window remembered for ``turns``' conversation if ``turns`` still holds its turns where they were."""
    if not turns:
        return None
    first = turns[0]
    window = _WINDOWS.get(id(first))
    if window is None or window.first is not first or window.end > len(turns):
        return None
    if window.source is not None and window.source() is turns:  # only grown since: not walked, every prompt
        return window
    if not all(map(operator.is_, window.turns, turns[window.start : window.end])):
        return None
    return window


def fits_uncounted(
    turns: Sequence[ConversationTurn], max_tokens: int | None, end: int, window: Window | None = None
) -> bool:
    """Whether ``turns[:end]`` fit ``max_tokens`` by their upper bounds alone (``tokens_at_most``): then no
    count is needed and the tokenizer is not loaded. False means "count them", not "they do not fit".

    With ``window`` (``remembered(turns)``) the conversation's costs are known exactly from the window's
    start: True only when the window holds all of ``turns[:end]`` and they fit; else counting is left to
    ``oldest_fitting``, which costs the turns added since the window (and those older than it that the
    bound now reaches), where walking upper bounds would cost every turn back to the bound on every call
    (all of them while the exact costs fit but the UTF-8 lengths do not, a long stretch under a large
    bound). Without one the turns are walked newest first, so a long history is given up on after about
    ``max_tokens`` bytes."""
    if max_tokens is None:
        return True
    if window is not None and window.start < end:
        return window.start == 0 and window.end >= end and window.sums[end] - window.sums[0] <= max_tokens
    total = 0
    for index in range(end - 1, -1, -1):
        total += turns[index].tokens_at_most + TURN_OVERHEAD
        if total > max_tokens:
            return False
    return True


def oldest_fitting(
    turns: Sequence[ConversationTurn], stop: int, floor: int, max_tokens: int, window: Window | None
) -> int:
    """The smallest ``s`` in ``[floor, stop]`` such that ``turns[s:stop]`` cost at most ``max_tokens``.

    Costs the turns added since the last call for this conversation (and those older than its window, when
    the bound now reaches further back), plus a bisection; remembers the window for the next call."""
    kept: tuple[ConversationTurn, ...]
    sums: tuple[int, ...]
    if window is None or window.start > stop:
        start, kept, sums = stop, (), (0,)
    else:
        start, kept, sums = window.start, window.turns, window.sums
    end = start + len(kept)
    if end < stop:  # the turns added since: their costs go on the end
        new = tuple(turns[end:stop])
        total, added = sums[-1], []
        for turn in new:
            total += turn.tokens + TURN_OVERHEAD
            added.append(total)
        kept, sums, end = kept + new, sums + tuple(added), stop
    whole = sums[stop - start]
    if start > floor and whole - sums[0] <= max_tokens:  # the bound reaches older turns: sum them too
        reached, base, older = start, sums[0], []
        while reached > floor and whole - base <= max_tokens:
            reached -= 1
            base -= turns[reached].tokens + TURN_OVERHEAD
            older.append(base)
        older.reverse()
        kept, sums, start = tuple(turns[reached:start]) + kept, tuple(older) + sums, reached
    low = max(floor, start) - start
    oldest = min(stop, start + bisect_left(sums, whole - max_tokens, low, stop - start + 1))
    # Forget what lies well behind the bound (the window moves on with the conversation), keeping the turn
    # just older than the bound: the next call then knows that it does not fit without summing it again.
    cut = oldest - 1 - start
    if cut > len(kept) - cut:
        start, kept, sums = start + cut, kept[cut:], sums[cut:]
    if kept:
        if len(_WINDOWS) >= _WINDOWS_SIZE:
            _WINDOWS.clear()
        source = weakref.ref(turns) if isinstance(turns, Turns) else None
        _WINDOWS[id(turns[0])] = Window(turns[0], start, kept, sums, source)
    return oldest
