"""Bounding a history remembers its cumulative costs (core.conversation.costs): the same result as summing
every kept turn on every call (``reference_bound``, the way it was done before), for less."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core import RunContext
from core.conversation.costs import TURN_OVERHEAD, turn_cost
from core.conversation.history import as_messages, bound, prompt_turns
from core.model.calls import Role
from core.text.turns import ConversationTurn, Summary, Turns


def _reference_fits(turns: Sequence[ConversationTurn], max_tokens: int | None, end: int) -> bool:
    if max_tokens is None:
        return True
    total = 0
    for index in range(end - 1, -1, -1):
        total += turns[index].tokens_at_most + TURN_OVERHEAD
        if total > max_tokens:
            return False
    return True


def reference_bound(
    turns: Sequence[ConversationTurn],
    *,
    end: int | None = None,
    max_tokens: int | None = None,
    max_turns: int | None = None,
    keep_last: int = 0,
) -> list[ConversationTurn]:
    """``bound`` as it was before its costs were remembered: every kept turn summed on every call."""
    stop = len(turns) if end is None else end
    if (max_turns is None or stop <= max_turns) and _reference_fits(turns, max_tokens, stop):
        return list(turns[:stop])
    kept_from = max(0, stop - keep_last)
    tokens, count = sum(turn_cost(turn) for turn in turns[kept_from:stop]), stop - kept_from
    index = kept_from - 1
    while index >= 0:
        turn = turns[index]
        start = index - 1 if index > 0 and turn.role == "user" and turns[index - 1].role == "assistant" else index
        cost = turn_cost(turn) + (turn_cost(turns[start]) if start < index else 0)
        if max_turns is not None and count + index + 1 - start > max_turns:
            break
        if max_tokens is not None and tokens + cost > max_tokens:
            break
        kept_from, tokens, count, index = start, tokens + cost, count + index + 1 - start, start - 1
    return list(turns[kept_from:stop])


class Reading(ConversationTurn):
    """A turn that notes each read of its exact count (``tokens``)."""

    reads: list[str] = []  # noqa: RUF012 (one log for the test, cleared by it)

    @property
    def tokens(self) -> int:
        Reading.reads.append(self.content)
        return super().tokens


_ROLES: tuple[Role, ...] = ("user", "assistant")
_turn = st.builds(
    lambda role, size, counted: ConversationTurn(role, "w" * size, size // 2 if counted else None),
    st.sampled_from(_ROLES),
    st.integers(0, 40),
    st.booleans(),
)
_call = st.tuples(
    st.lists(_turn, max_size=12),  # the turns added before this call
    st.sampled_from(["same", "copy", "other"]),  # the list the call is given (a loop iteration copies it)
    st.integers(0, 3),  # how many of the newest turns ``end`` leaves out
    st.one_of(st.none(), st.integers(0, 300)),
    st.one_of(st.none(), st.integers(0, 30)),
    st.integers(0, 3),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_turn, max_size=30), st.lists(_call, min_size=1, max_size=8))
def test_bound_is_the_reference_bound_over_a_growing_history(
    start: list[ConversationTurn],
    calls: list[tuple[list[ConversationTurn], str, int, int | None, int | None, int]],
) -> None:
    turns = list(start)
    for added, given_as, left_out, max_tokens, max_turns, keep_last in calls:
        turns.extend(added)
        if given_as == "copy":
            turns = list(turns)
        elif given_as == "other" and len(turns) > 1:  # the same first turn, others after it: not trusted
            turns = [turns[0], *(ConversationTurn(turn.role, turn.content, 50) for turn in turns[1:])]
        end = max(0, len(turns) - left_out)
        options = {"end": end, "max_tokens": max_tokens, "max_turns": max_turns, "keep_last": min(keep_last, end)}
        assert bound(turns, **options) == reference_bound(turns, **options)  # type: ignore[arg-type]


def test_a_growing_history_is_counted_only_for_its_new_turns() -> None:
    """Each call reads the exact counts of the turns added since the last (and of none when nothing was
    added), not of every kept turn: the cost of an iteration does not grow with the history kept."""
    turns: list[ConversationTurn] = [
        Reading("user" if n % 2 else "assistant", f"turn {n} " + "w" * 40) for n in range(200)
    ]
    budget = 40 * turn_cost(turns[0])  # about 40 of them
    first = bound(turns, max_tokens=budget)
    assert 30 < len(first) < 50
    for n in range(200, 210):
        turns = [*turns, Reading("user" if n % 2 else "assistant", f"turn {n} " + "w" * 40)]  # a new iteration's copy
        Reading.reads.clear()
        kept = bound(turns, max_tokens=budget)
        assert Reading.reads == [f"turn {n} " + "w" * 40]
        assert kept == reference_bound(turns, max_tokens=budget)
    Reading.reads.clear()
    bound(turns, max_tokens=budget, end=len(turns) - 1)
    assert Reading.reads == []


def test_a_history_that_fits_by_its_upper_bounds_is_never_counted() -> None:
    turns = [ConversationTurn("user" if n % 2 else "assistant", f"turn {n}") for n in range(50)]
    assert bound(turns, max_tokens=10_000) == turns
    bound([*turns, ConversationTurn("user", "one more")], max_tokens=10_000)
    assert all(turn.counted is None for turn in turns)


class Bounding(ConversationTurn):
    """A turn that notes each read of its upper bound (``tokens_at_most``)."""

    reads: list[str] = []  # noqa: RUF012 (one log for the test, cleared by it)

    @property
    def tokens_at_most(self) -> int:
        Bounding.reads.append(self.content)
        return super().tokens_at_most


def test_a_history_whose_counts_fit_but_bytes_do_not_walks_only_its_new_turns() -> None:
    """Under a bound that the exact counts fit but the UTF-8 lengths do not (a long stretch of a conversation
    under a large bound: text is about four bytes a token), each call costs its new turns: not a walk of
    upper bounds back through the history, which every call of that stretch paid."""
    said = "we could hold the offsite by the lake in early spring if the budget allows it"
    turns: list[ConversationTurn] = [Bounding("user" if n % 2 else "assistant", f"{n}: {said}") for n in range(60)]
    by_bytes = sum(turn.tokens_at_most + TURN_OVERHEAD for turn in turns)
    exact = sum(turn_cost(ConversationTurn(turn.role, turn.content)) for turn in turns)  # these left uncounted
    budget = 2 * exact
    assert budget < by_bytes  # the stretch this test is about
    assert bound(turns, max_tokens=budget) == turns
    for n in range(60, 70):
        turns.append(Bounding("user" if n % 2 else "assistant", f"{n}: {said}"))
        Bounding.reads.clear()
        kept = bound(turns, max_tokens=budget)
        assert Bounding.reads == []
        assert kept == reference_bound(turns, max_tokens=budget) == turns


class Watched(Turns):
    """A history list that notes the slices read of it."""

    def __init__(self, turns: list[ConversationTurn]) -> None:
        super().__init__(turns)
        self.slices: list[tuple[int, int]] = []

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            self.slices.append((index.start or 0, len(self) if index.stop is None else index.stop))
        return super().__getitem__(index)


def test_the_list_a_window_was_made_from_is_not_checked_again() -> None:
    """A history list only grows at its end (core.context): bounding the same list again trusts the window
    made from it without reading its turns back (every prompt of a conversation did, its whole window);
    only the turns it sends are sliced."""
    said = "we could hold the offsite by the lake in early spring if the budget allows it"
    turns = Watched([ConversationTurn("user" if n % 2 else "assistant", f"{n}: {said}") for n in range(200)])
    budget = 40 * turn_cost(turns[0])
    bound(turns, max_tokens=budget)
    for n in range(200, 210):
        turns.append(ConversationTurn("user" if n % 2 else "assistant", f"{n}: {said}"))
        turns.slices.clear()
        kept = bound(turns, max_tokens=budget)
        assert turns.slices  # the turns sent, and those added since the last call
        assert all(start >= len(turns) - len(kept) for start, _ in turns.slices)
        assert kept == reference_bound(list(turns), max_tokens=budget)


def test_a_window_does_not_keep_its_history_alive() -> None:
    """What is remembered of a history list refers to it weakly: a run's history is freed after the run."""
    said = "we could hold the offsite by the lake in early spring if the budget allows it"
    turns = Turns(ConversationTurn("user" if n % 2 else "assistant", f"{n}: {said}") for n in range(200))
    bound(turns, max_tokens=40 * turn_cost(turns[0]))
    gone = weakref.ref(turns)
    del turns
    gc.collect()
    assert gone() is None


_how = st.sampled_from(["same", "same", "turns", "plain", "other", "summary", "shared"])
_shaped_call = st.tuples(
    st.lists(_turn, max_size=10),  # the turns added before this call, in place (a Turns only grows at its end)
    _how,  # the list the call is given: the very list, a Turns or plain copy, other turns after the same first
    # one, a summary's (a new list each call, sliced after its head as injection does), or the very list and
    # then another agent's call on it with its own prompt budget
    st.integers(0, 4),
    st.one_of(st.none(), st.integers(0, 400)),
    st.one_of(st.none(), st.integers(0, 30)),
    st.integers(0, 3),
    st.integers(0, 400),  # the other agent's max_tokens
)


def _same_as_reference(turns: Sequence[ConversationTurn], **options: Any) -> None:
    kept = bound(turns, **options)
    wanted = reference_bound(list(turns), **options)
    assert kept == wanted
    assert all(mine is theirs for mine, theirs in zip(kept, wanted, strict=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(_turn, max_size=40), st.booleans(), st.lists(_shaped_call, min_size=1, max_size=10))
def test_bound_is_the_reference_bound_whatever_list_each_call_is_given(
    start: list[ConversationTurn],
    as_turns: bool,
    calls: list[tuple[list[ConversationTurn], str, int, int | None, int | None, int, int]],
) -> None:
    turns: list[ConversationTurn] = Turns(start) if as_turns else list(start)
    for added, how, left_out, max_tokens, max_turns, keep_last, other_tokens in calls:
        turns.extend(added)
        given: list[ConversationTurn] = turns
        if how == "turns":
            turns = given = Turns(turns)
        elif how == "plain":
            turns = given = list(turns)
        elif how == "other" and len(turns) > 1:
            given = [turns[0], *(ConversationTurn(turn.role, turn.content, 50) for turn in turns[1:])]
        elif how == "summary" and len(turns) > 2:
            covers = min(len(turns) - 1, 2 + left_out)
            given = list(prompt_turns(turns, Summary(covers, ConversationTurn("user", "summary " * left_out))))[1:]
        end = max(0, len(given) - left_out)
        _same_as_reference(given, end=end, max_tokens=max_tokens, max_turns=max_turns, keep_last=min(keep_last, end))
        if how == "shared":
            _same_as_reference(given, end=len(given), max_tokens=other_tokens)


def test_a_failed_iteration_s_turns_are_not_taken_for_the_parent_s() -> None:
    """An isolated iteration appends to the Turns it shares with its parent; when it fails, the parent gets a
    copy of the first turns back and goes on differently. Each list is bounded as the reference does."""
    said = "we could hold the offsite by the lake in early spring"
    ctx = RunContext(conversation_history=Turns(ConversationTurn(_ROLES[n % 2], f"{n} {said}") for n in range(80)))
    budget = 30 * 20
    _same_as_reference(ctx.conversation_history, max_tokens=budget)
    copy = ctx.isolate()
    copy.conversation_history.append(ConversationTurn("user", "failed " + said * 3))
    _same_as_reference(copy.conversation_history, max_tokens=budget)
    failed = copy.conversation_history
    ctx.keep_said([copy])
    assert ctx.conversation_history is not failed
    ctx.conversation_history.append(ConversationTurn("user", "kept " + said))
    for turns in (ctx.conversation_history, failed, ctx.conversation_history):
        for end in (len(turns), len(turns) - 1):
            _same_as_reference(turns, end=end, max_tokens=budget)
            _same_as_reference(turns, end=end, max_tokens=budget // 3, keep_last=1)


def test_a_history_list_copies_and_pickles_as_its_turns() -> None:
    turns = Turns(ConversationTurn("user" if n % 2 else "assistant", f"turn {n}") for n in range(5))
    as_messages(turns[1:5], turns)
    for again in (copy.copy(turns), copy.deepcopy(turns), pickle.loads(pickle.dumps(turns))):
        assert type(again) is Turns and again == turns and again is not turns
        assert again.sent is not turns.sent
