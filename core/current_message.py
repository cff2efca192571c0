"""The current message of an agent step in a conversation: what it answers, and which turns precede it.

A ``conversation: true`` loop sends an agent the bounded history and then one current message. This
module decides that message (docs/conversation.md, "The current message"):

- A step's *candidate* is its rendered ``input:`` when it has one, else its input as usual.
- An explicit ``input:`` *is the conversation's current turn* when it renders to the context object (the
  state a conversation loop propagates: ``{{ previous_step }}`` from iteration 2, ``{{ context }}``) or
  to exactly the text of the newest turn (``{{ previous_step }}`` on iteration 1 is the seed). Such a step
  is treated as a step without ``input:``. Any other explicit input is sent as written, after the whole
  history.
- A step without ``input:`` is sent the latest user turn when the history ends with one (taken out of the
  history, so it is not sent twice); when its input is the propagated context, the latest user turn.

Invariant: the context object is never serialised into a prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.context import VIEW_KEYS, ConversationTurn
from core.conversation import latest_user_turn, turn_text

_CONTEXT_KEYS = frozenset(VIEW_KEYS)


@dataclass(frozen=True)
class CurrentMessage:
    """The message to send, and how many of the oldest turns may precede it (``turns[:end]``)."""

    message: Any
    end: int


def is_context(value: Any) -> bool:
    """Whether ``value`` is the run context as templates see it (a view of it, or its rendered copy)."""
    return isinstance(value, Mapping) and set(value) == _CONTEXT_KEYS


def is_current_turn(rendered: Any, turns: Sequence[ConversationTurn]) -> bool:
    """Whether an explicit input renders to what the conversation already holds as its current turn."""
    if is_context(rendered):
        return True
    return bool(turns) and turn_text(rendered) == turns[-1].content


def current_message(
    turns: Sequence[ConversationTurn],
    *,
    data: Any,
    rendered: Any,
    explicit: bool,
    initial_prompt: Any,
) -> CurrentMessage:
    """The message for a step whose input is ``data`` and whose ``input:`` (if ``explicit``) rendered
    to ``rendered``."""
    end = len(turns)
    if explicit and not is_current_turn(rendered, turns):
        return CurrentMessage(rendered, end)
    if end and turns[-1].role == "user":
        return CurrentMessage(turns[-1].content, end - 1)
    if is_context(data) or is_context(rendered):
        latest = latest_user_turn(turns)
        return CurrentMessage(turns[latest].content if latest is not None else turn_text(initial_prompt or ""), end)
    return CurrentMessage(data, end)
