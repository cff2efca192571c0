"""A ``conversation: true`` loop owns its history: entering the loop, each iteration, leaving it.

Invariants:
- The loop's body runs with a fresh history (or, for the loop that continues the run's thread, the
  thread's earlier turns and those this run said so far) and no summary.
- When the loop ends, however it ends, an enclosing conversation gets its own history and summary back:
  nothing the inner loop said leaks outward. At the top level the loop's turns stay in
  ``context.conversation_history`` for the steps after it.
- The first iteration seeds the first user turn (``init.history.start_with`` or the loop's input), after
  the loop's ``init``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.context import ConversationTurn, RunContext, Summary, Turns
from core.conversation.threads import ThreadBinding
from core.conversation.turns import ActiveConversation, seed, start
from core.steps import LoopStep


@dataclass(frozen=True)
class LoopConversation:
    """The conversation a loop holds while it runs, and what it replaced in the context."""

    active: ActiveConversation
    outer: ActiveConversation | None
    outer_history: list[ConversationTurn]
    outer_summary: Summary | None

    def begin(self, ctx: RunContext, iteration: int, iteration_input: Any) -> None:
        """Before the body of ``iteration`` runs on ``ctx`` (the iteration's isolated copy)."""
        ctx.conversation = self.active.for_iteration(iteration_input)
        if iteration == 1:
            seed(ctx, self.active, iteration_input)

    def leave(self, ctx: RunContext) -> None:
        """When the loop ends (completed, failed or stopped by a signal)."""
        ctx.conversation = self.outer
        if self.outer is not None:  # the enclosing conversation's history, untouched by this loop's turns
            ctx.conversation_history = self.outer_history
        ctx.summary = self.outer_summary  # a summary belongs to the conversation it was made in


def enter_loop(loop: LoopStep, ctx: RunContext, thread: ThreadBinding | None) -> LoopConversation | None:
    """Start the conversation of ``loop`` in ``ctx`` (None when the loop is not conversational). The first
    conversational loop to start continues the run's ``thread``, if it has one."""
    if loop.conversation is None:
        return None
    claimed = thread if thread is not None and thread.claim(loop) else None
    active = start(loop, threaded=claimed is not None)
    held = LoopConversation(active, ctx.conversation, ctx.conversation_history, ctx.summary)
    ctx.conversation, ctx.conversation_history = active, Turns(claimed.opening(ctx) if claimed is not None else ())
    ctx.summary = None
    return held
