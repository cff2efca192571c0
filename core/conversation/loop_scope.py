"""A ``conversation: true`` loop owns its history: entering the loop, each iteration, leaving it.

Invariants:
- The loop's body runs with a fresh history (or, for the loop that continues the run's thread, the
  thread's earlier turns and those this run said so far) and no summary.
- When the loop ends, however it ends, an enclosing conversation gets its own history and summary back:
  nothing the inner loop said leaks outward. At the top level the loop's turns stay in
  ``context.conversation_history`` for the steps after it.
- The first iteration seeds the first user turn, after the loop's ``init``: the output of
  ``init.history.start_with``'s step, else the message the loop's first body step would be sent where the
  loop stands (docs/conversation.md, "The current message"). That is the loop's input, unless the input is
  the context an enclosing loop propagates (or the enclosing conversation's own iteration input): then it
  is the enclosing conversation's newest turn. The context object never becomes a turn, so it never
  reaches a prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.context import RunContext
from core.conversation.current_message import current_message
from core.conversation.threads import ThreadBinding
from core.conversation.turns import ActiveConversation, active_in, add_turn, start
from core.model.provenance import seed_origin
from core.steps.kinds import LoopStep
from core.text.turns import ConversationTurn, Summary, Turns, turn_text


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
            seed(ctx, self.active, iteration_input, enclosing=self.outer, heard=self.outer_history)

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
    held = LoopConversation(active, active_in(ctx), ctx.conversation_history, ctx.summary)
    ctx.conversation, ctx.conversation_history = active, Turns(claimed.opening(ctx) if claimed is not None else ())
    ctx.summary = None
    return held


def seed(
    ctx: RunContext,
    active: ActiveConversation,
    loop_input: Any,
    *,
    enclosing: ActiveConversation | None = None,
    heard: Sequence[ConversationTurn] = (),
) -> None:
    """The first user turn of ``active``, before iteration 1: from ``init.history.start_with`` or the loop's
    input, as the message a step standing where the loop stands would be sent. ``enclosing`` is the
    conversation the loop runs in (if any) and ``heard`` the history around the loop (the enclosing
    conversation's, or at the top level the turns an earlier loop left): a loop input that is the context
    (or the enclosing iteration's own input) opens with the newest of those turns, never as the context."""
    settings = active.settings
    if settings.seed_from_step is not None:
        record = ctx.steps.get(settings.seed_from_step)
        value = record.get("output") if isinstance(record, dict) else None
    elif settings.seed_from_input:
        value = loop_input
    else:
        return
    if value is None:
        return
    value = current_message(
        heard,
        data=value,
        rendered=None,
        explicit=False,
        initial_prompt=ctx.initial_prompt,
        iteration_input=enclosing.iteration_input if enclosing is not None else None,
    ).message
    text = turn_text(value)
    prefix = settings.seed_prefix
    if prefix and prefix.strip().rstrip(":").strip().lower() != "user":  # "User: " is what a user turn is
        text = f"{prefix}{text}"
    if text.strip():
        add_turn(ctx, "user", text, origin=seed_origin(settings.seed_from_step))
