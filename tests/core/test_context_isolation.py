"""An isolated copy shares its parent's history lists instead of copying them (docs/performance.md), and
means what a copy meant: what it appends reaches the parent only through ``adopt``; a copy that stopped
part-way leaves the parent's lists as they were, except the thread turns it said (``keep_said``); the
views it made keep showing what they showed. A parallel's branches (``branch``) still get lists of their own.
"""

from __future__ import annotations

from core import ConversationTurn, HitlEntry, RunContext


def _turn(text: str) -> ConversationTurn:
    return ConversationTurn("user", text, 1)


def _context() -> RunContext:
    ctx = RunContext(initial_prompt="plan", scratchpad={"goal": "offsite"})
    ctx.conversation_history = [_turn("hello"), _turn("when?")]
    ctx.hitl_history = [HitlEntry("ask", "when?", "May")]
    ctx.thread_turns = [_turn("hello")]
    return ctx


def _said(ctx: RunContext, text: str) -> None:
    """What a step of the copy does when a turn is said in a threaded conversation and a HITL answer given."""
    ctx.conversation_history.append(_turn(text))
    ctx.thread_turns.append(_turn(text))
    ctx.hitl_history.append(HitlEntry("ask", "?", text))


def _contents(ctx: RunContext) -> tuple[list[str], list[str], list[str]]:
    return (
        [turn.content for turn in ctx.conversation_history],
        [turn.content for turn in ctx.thread_turns],
        [entry.answer for entry in ctx.hitl_history],
    )


def test_an_isolated_copy_shares_the_history_lists_instead_of_copying_them() -> None:
    ctx = _context()
    copy = ctx.isolate()
    assert copy.conversation_history is ctx.conversation_history
    assert copy.hitl_history is ctx.hitl_history
    assert copy.thread_turns is ctx.thread_turns
    assert copy.scratchpad == ctx.scratchpad and copy.scratchpad is not ctx.scratchpad
    assert copy.steps is not ctx.steps


def test_what_an_adopted_copy_appended_is_the_parents() -> None:
    ctx = _context()
    copy = ctx.isolate()
    _said(copy, "in May")
    ctx.adopt(copy)
    assert _contents(ctx) == (["hello", "when?", "in May"], ["hello", "in May"], ["May", "in May"])
    again = ctx.isolate()  # the next iteration shares the lists as they are now
    _said(again, "Lisbon")
    ctx.adopt(again)
    assert _contents(ctx)[0] == ["hello", "when?", "in May", "Lisbon"]


def test_a_stopped_copy_leaves_the_parents_lists_as_they_were_but_its_thread_turns() -> None:
    ctx = _context()
    before = ctx.lazy_view()
    copy = ctx.isolate()
    _said(copy, "in May")
    seen = copy.lazy_view()
    ctx.keep_said([copy])
    assert _contents(ctx) == (["hello", "when?"], ["hello", "in May"], ["May"])
    # What the copy appended stays in the copy (and in the views it made); the parent's lists are new ones.
    assert _contents(copy) == (["hello", "when?", "in May"], ["hello", "in May"], ["May", "in May"])
    assert ctx.conversation_history is not copy.conversation_history
    assert [turn["content"] for turn in seen["conversation_history"]] == ["hello", "when?", "in May"]
    assert [turn["content"] for turn in before["conversation_history"]] == ["hello", "when?"]
    # The parent goes on (a retried step, a later iteration): the copy's lists do not change under it.
    _said(ctx, "June")
    assert _contents(copy)[0] == ["hello", "when?", "in May"]
    assert _contents(ctx)[0] == ["hello", "when?", "June"]


def test_a_copy_that_appended_nothing_gives_back_the_lists_themselves() -> None:
    ctx = _context()
    turns = ctx.conversation_history
    copy = ctx.isolate()
    ctx.keep_said([copy])
    assert ctx.conversation_history is turns
    assert _contents(ctx) == (["hello", "when?"], ["hello"], ["May"])


def test_a_copy_given_to_keep_said_after_its_adoption_changes_nothing() -> None:
    # A loop's exit check or next_input hook may fail after the iteration was adopted.
    ctx = _context()
    copy = ctx.isolate()
    _said(copy, "in May")
    ctx.adopt(copy)
    ctx.keep_said([copy])
    assert _contents(ctx) == (["hello", "when?", "in May"], ["hello", "in May"], ["May", "in May"])


def test_nested_copies_that_stop_leave_each_parent_as_it_was_and_keep_every_thread_turn() -> None:
    ctx = _context()
    outer = ctx.isolate()
    _said(outer, "outer")
    inner = outer.isolate()
    _said(inner, "inner")
    outer.keep_said([inner])
    assert _contents(outer) == (["hello", "when?", "outer"], ["hello", "outer", "inner"], ["May", "outer"])
    ctx.keep_said([outer])
    assert _contents(ctx) == (["hello", "when?"], ["hello", "outer", "inner"], ["May"])


def test_a_copy_that_replaced_a_list_leaves_the_parents_list_alone() -> None:
    ctx = _context()
    copy = ctx.isolate()
    copy.conversation_history = [_turn("fresh")]  # a conversational loop inside starts its own history
    copy.conversation_history.append(_turn("more"))
    ctx.keep_said([copy])
    assert _contents(ctx)[0] == ["hello", "when?"]


def test_branches_have_lists_of_their_own() -> None:
    ctx = _context()
    left, right = ctx.branch(), ctx.branch()
    _said(left, "left")
    _said(right, "right")
    assert _contents(ctx) == (["hello", "when?"], ["hello"], ["May"])
    assert _contents(left)[0] == ["hello", "when?", "left"]
    assert _contents(right)[0] == ["hello", "when?", "right"]
    ctx.keep_said([left, right])
    assert _contents(ctx)[1] == ["hello", "left", "right"]
