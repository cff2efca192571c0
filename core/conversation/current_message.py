"""The current message of an agent step in a conversation: what it answers, and which turns precede it.

A ``conversation: true`` loop sends an agent the bounded history and then one current message. This
module decides that message (docs/conversation.md, "The current message"):

- A step without ``input:`` answers what was said last when its input *is* that: when its input is the
  iteration's own input (the first step of the body: the loop's input, then the context the loop
  propagates), or is exactly the newest turn (the HITL answer just given, the reply of the agent just
  before it under ``all_agents``), the newest turn is its message, in the user role, and is taken out of
  the history sent (never twice). Otherwise its input (the output of a step that made no turn: a writer
  under ``ai_turn_source: last``, a script, a parallel's outputs) is its message, after the whole history.
- An explicit ``input:`` that renders to the context object (``{{ previous_step }}`` from iteration 2,
  ``{{ context }}``) is treated as no ``input:``; one that renders to exactly the newest turn's text
  (``{{ previous_step }}`` on iteration 1 is the seed) sends that turn once, as the message. Any other
  explicit input is sent as written, after the whole history.

Invariant: the context object is never serialised into a prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.context import VIEW_KEYS, RunContext
from core.model.views import ATOMIC
from core.text.turns import ConversationTurn, turn_text

_CONTEXT_KEYS = frozenset(VIEW_KEYS)


@dataclass(frozen=True)
class CurrentMessage:
    """The message to send, and how many of the oldest turns may precede it (``turns[:end]``)."""

    message: Any
    end: int


def is_context(value: Any) -> bool:
    """Whether ``value`` is the run context as templates see it (a view of it, or its rendered copy)."""
    kind = type(value)  # told by its type first: ``isinstance`` on a Mapping asks the ABC machinery
    if kind is not dict and (kind in ATOMIC or kind is list or not isinstance(value, Mapping)):
        return False
    return set(value) == _CONTEXT_KEYS


def current_message(
    turns: Sequence[ConversationTurn],
    *,
    data: Any,
    rendered: Any,
    explicit: bool,
    initial_prompt: Any,
    iteration_input: Any,
) -> CurrentMessage:
    """The message for a step whose input is ``data`` and whose ``input:`` (if ``explicit``) rendered
    to ``rendered``."""
    end = len(turns)
    newest = turns[-1] if turns else None
    if explicit and not is_context(rendered):
        if newest is not None and turn_text(rendered) == newest.content:
            return CurrentMessage(newest.content, end - 1)
        return CurrentMessage(rendered, end)
    if data is iteration_input or is_context(data):  # the body's own input: the conversation says what is next
        if newest is None:
            return CurrentMessage(turn_text(initial_prompt or ""), 0)
        return CurrentMessage(newest.content, end - 1)
    if newest is not None and turn_text(data) == newest.content:
        return CurrentMessage(newest.content, end - 1)
    return CurrentMessage(data, end)


def newest_message(ctx: RunContext) -> Any:
    """The message a step whose input is the context answers: the newest turn (or the run's input)."""
    assert ctx.conversation is not None
    turns = ctx.conversation_history
    return current_message(
        turns,
        data=ctx.conversation.iteration_input,
        rendered=None,
        explicit=False,
        initial_prompt=ctx.initial_prompt,
        iteration_input=ctx.conversation.iteration_input,
    ).message


def message_for(ctx: RunContext, value: Any) -> Any:
    """What a step, a sub-workflow or an ensemble whose input is ``value`` takes in: ``value``, unless it is
    the context a conversational loop propagates; then the conversation's newest turn (``newest_message``),
    so the context never reaches a prompt, a child run or an output that would nest it."""
    if ctx.conversation is not None and is_context(value):
        return newest_message(ctx)
    return value


def default_question(ctx: RunContext, step: str) -> str:
    """The question of a ``hitl`` step written without ``message`` (docs/blueprints.md, "kind: hitl"): in a
    conversation, what the assistant said last (the newest assistant turn); outside one, or before the
    assistant has spoken, ``Your answer for '<step>'?``."""
    if ctx.conversation is not None:
        turns = ctx.conversation_history
        for index in range(len(turns) - 1, -1, -1):  # newest first, without copying the history
            if turns[index].role == "assistant":
                return turns[index].text  # a structured reply's question, as a person reads it
    return f"Your answer for {step!r}?"
