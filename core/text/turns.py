"""The turns of a conversation and the questions a person answered, as values: ``ConversationTurn``, the
history list ``Turns``, ``HitlEntry``, the ``Summary`` standing for the oldest turns; and ``turn_text``, a
step result as a turn's content.

A turn knows its own token count (``core.text.tokens``, counted once, only when read), which is why the turns
live here among the text tools and not with the plain values of ``core.model``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from core.model.calls import ChatMessage, Role
from core.model.views import json_default
from core.model.window_map import WindowMap
from core.text import tokens


@dataclass(frozen=True)
class ConversationTurn:
    """One turn of a conversation.

    Its tokens (o200k_base) are counted at most once, when ``tokens`` is first read: a run whose history
    always fits its bound (checked with ``tokens_at_most``) never loads the tokenizer (~0.3 s of a short run,
    docs/performance.md). ``counted`` is the count once known; a turn read back from a store arrives with it.

    ``content`` is what was said, as it was said: what prompts send. ``shown``, when set, is what a person
    reads instead (``line``): the text of a structured reply (``core.conversation.replies``) or a step's
    ``turn_text``. It never reaches a prompt. ``origin``, when known, says where the turn came from, as a short
    text of ids and never what was said (``core.model.provenance``): made once with the turn, so each prompt that
    sends the turn says why at the cost of a reference.
    """

    role: Role
    content: str
    counted: int | None = field(default=None, compare=False, repr=False)
    shown: str | None = field(default=None, compare=False, repr=False)
    origin: str | None = field(default=None, compare=False, repr=False)

    @property
    def tokens(self) -> int:
        """The content's tokens, counted on the first read (which loads the tokenizer, once per process)."""
        count = self.counted
        if count is None:
            made = tokens.count_tokens(self.content)
            object.__setattr__(self, "counted", made)  # a cache, filled once: callers see a frozen turn
            return made
        return count

    @property
    def tokens_at_most(self) -> int:
        """An upper bound of ``tokens`` that never loads the tokenizer: the count once known, else the
        content's length in UTF-8 bytes (a byte-level BPE token stands for at least one byte)."""
        if self.counted is not None:
            return self.counted
        content = self.content
        return len(content) if content.isascii() else len(content.encode("utf-8"))

    @property
    def text(self) -> str:
        """What a person reads of the turn: ``shown`` when set, else what was said."""
        return self.content if self.shown is None else self.shown

    @cached_property
    def line(self) -> str:
        """The turn as a person reads it, a ``User: ...`` / ``Assistant: ...`` line (``scratchpad.history``,
        ``conversation_history``); made once per turn (a turn is read by every later iteration)."""
        return f"{self.role.capitalize()}: {self.text}"

    @cached_property
    def message(self) -> ChatMessage:
        """The turn as a chat message of a prompt; made once per turn (every later prompt sends it)."""
        return ChatMessage(self.role, self.content)

    @cached_property
    def heard(self) -> ChatMessage:
        """The turn as the other side of the conversation hears it, the roles swapped (a simulated person's
        prompts: ``core.answering.simulated_person``); made once per turn, as ``message``."""
        return ChatMessage("user" if self.role == "assistant" else "assistant", self.content)

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "tokens": self.tokens}


class Turns(list[ConversationTurn]):
    """A conversational loop's history list (``conversation_history``), which only grows at its end: a list
        that can be referred to weakly, so that what is remembered of it (the costs of its newest turns,
        ``core.conversation.costs``) is known to be its own without keeping it alive after its run, and that
        carries what its prompts sent (``sent``: their chat messages, ``core.conversation.history.as_messages``),
        which so lives as long as the conversation, and how many of its turns' origins the trace has said
    (``described``)."""

    __slots__ = ("__weakref__", "described", "noted", "sent")

    def __init__(self, turns: Iterable[ConversationTurn] = ()) -> None:
        super().__init__(turns)
        self.sent: WindowMap[ConversationTurn, ChatMessage] = WindowMap()
        # How many of the oldest turns the run's trace has said the origins of (``core.conversation.injection``):
        # each prompt event says those of the turns after them only.
        self.described = 0
        # The notes of what was left out of each step's last call (``core.conversation.injection``), by
        # ``provenance.step_key``: a call whose notes are the same stores none.
        self.noted: dict[str, Any] = {}

    def __reduce__(self) -> tuple[type[Turns], tuple[list[ConversationTurn]]]:
        """Copied and pickled as its turns: what its prompts sent is remembered, not state."""
        return (Turns, (list(self),))


@dataclass(frozen=True)
class HitlEntry:
    """A question asked of the human and the answer given."""

    step: str
    message: str
    answer: Any

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "message": self.message, "answer": self.answer}


@dataclass(frozen=True)
class Summary:
    """A summary standing for the oldest ``covers`` turns of the conversation in prompts (``turn``)."""

    covers: int
    turn: ConversationTurn


# ``json.dumps(value, ensure_ascii=False, default=json_default)``'s encoder, built once (json.dumps with any
# argument builds one per call).
_TURN_JSON = json.JSONEncoder(ensure_ascii=False, default=json_default).encode


def turn_text(value: Any) -> str:
    """A step result as turn content: text as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return _TURN_JSON(value)
