"""What was said in a parallel's branches: every branch's turns, HITL answers and thread turns, kept.

Invariants:
- What was said is a record, not state: whatever the merge strategy does to the branches' state, the
  conversation turns and HITL answers of the parent come first, then those each successful branch added,
  in branch order (not the order branches finished in). A branch whose turns no longer start with the
  parent's brings its history in place of the parent's.
- The thread turns said in every branch are kept, those of failed branches too (``RunContext.keep_said``).
- A summary a branch made stands for the oldest turns; it is kept (the last branch's) when those are turns
  all branches share, whose places the merge does not move; otherwise the parent's stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.context import RunContext
from core.text.turns import ConversationTurn, HitlEntry, Summary


@dataclass(frozen=True)
class BranchRecords:
    """What the parent and its successful branches said, merged, to put back after their state is merged."""

    turns: list[ConversationTurn]
    hitl: list[HitlEntry]
    thread_turns: list[ConversationTurn]
    summary: Summary | None
    branches: tuple[RunContext, ...]

    def restore(self, ctx: RunContext) -> None:
        """Put the records back into ``ctx`` (after the merge strategy has changed its state)."""
        ctx.conversation_history, ctx.hitl_history = self.turns, self.hitl
        ctx.thread_turns, ctx.summary = self.thread_turns, self.summary
        ctx.keep_said(self.branches)


def branch_records(ctx: RunContext, branches: Sequence[RunContext]) -> BranchRecords:
    """The records of ``ctx`` and of the successful ``branches`` (in branch order), taken before merging."""
    turns, hitl = merged_records(ctx, branches)
    shared = len(ctx.conversation_history)
    made = [b.summary for b in branches if b.summary is not ctx.summary and b.summary is not None]
    summary = made[-1] if made and made[-1].covers <= shared else ctx.summary
    return BranchRecords(turns, hitl, ctx.thread_turns, summary, tuple(branches))


def merged_records(ctx: RunContext, branches: Sequence[RunContext]) -> tuple[list[ConversationTurn], list[HitlEntry]]:
    """The conversation turns and HITL answers of ``ctx`` followed by those each branch added, in branch
    order. (A branch whose turns no longer start with the parent's brings its history in place of the
    parent's.)"""
    base, known = ctx.conversation_history, len(ctx.conversation_history)
    history, added = list(base), list[ConversationTurn]()
    for branch in branches:
        turns = branch.conversation_history
        if turns[:known] == base:
            added.extend(turns[known:])
        else:
            history = list(turns)
    answers = list(ctx.hitl_history)
    for branch in branches:
        answers.extend(branch.hitl_history[len(ctx.hitl_history) :])
    return history + added, answers
