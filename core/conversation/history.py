"""The history's bounds and forms: which turns fit a bound, where a summary cuts, the history as text or messages.

Invariants:
- Bounding costs the turns added since the last bound of the same conversation, not the turns kept nor the
  turns stored (``core.conversation.costs`` remembers their cumulative costs).
- Bounding never separates an assistant turn from the user turn that answers it (a question from its
  HITL answer): turns are kept or dropped in those units, newest first; when the answer is the current
  message (taken out of the history), its question is kept whatever the bound (``question_of``).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from core.conversation.costs import fits_uncounted, oldest_fitting, remembered, turn_cost
from core.model.calls import ChatMessage
from core.text.templates import Template
from core.text.turns import ConversationTurn, Summary, Turns

SUMMARY_PREFIX = "Summary of the earlier conversation: "
HISTORY_OPEN = "<conversation_history>"
HISTORY_CLOSE = "</conversation_history>"


def prompt_turns(turns: Sequence[ConversationTurn], summary: Summary | None) -> Sequence[ConversationTurn]:
    """The turns prompts are built from: the summary in place of the oldest turns it covers, then the rest.
    Without a summary, the turns themselves (not a copy: every agent call reads them, to be read only)."""
    if summary is None:
        return turns
    return [summary.turn, *turns[summary.covers :]]


def question_of(turns: Sequence[ConversationTurn], end: int) -> int:
    """1 when ``turns[end]`` (the current message, taken out of the history) is a user turn answering the
    assistant turn just before it: that question must be sent with it. Else 0."""
    answers = end < len(turns) and turns[end].role == "user"
    return 1 if answers and end > 0 and turns[end - 1].role == "assistant" else 0


def bound(
    turns: Sequence[ConversationTurn],
    *,
    end: int | None = None,
    max_tokens: int | None = None,
    max_turns: int | None = None,
    keep_last: int = 0,
) -> list[ConversationTurn]:
    """The most recent turns of ``turns[:end]`` within ``max_tokens`` (with message overhead) and
    ``max_turns``, dropping the oldest whole units first: the history's bound (not the ``[bounds]`` of
    hostile input nor the run's limits; the words are in ``core.text.bounds``). Costs the turns added since the
    last call for the same conversation (``core.conversation.costs``), not the turns kept nor the turns stored.
    The newest ``keep_last`` turns (the question the current message answers) are kept whatever the
    bounds; they count towards them."""
    stop = len(turns) if end is None else end
    window = remembered(turns) if max_tokens is not None else None
    if (max_turns is None or stop <= max_turns) and fits_uncounted(turns, max_tokens, stop, window):
        return _copy(turns, 0, stop)  # everything fits, whatever the exact counts
    kept_from = max(0, stop - keep_last)
    # Both bounds hold for the newest turns up to some oldest turn (each turn costs at least one token)...
    oldest = 0 if max_turns is None else max(0, stop - max_turns)
    if max_tokens is not None:
        oldest = oldest_fitting(turns, stop, oldest, max_tokens, window)
    if oldest >= kept_from:
        return _copy(turns, kept_from, stop)
    # ... and units are kept whole: a user turn answering the assistant turn before it (which does not fit)
    # goes with it. Which turns pair up does not depend on where the walk starts: a pair is an assistant
    # turn and the user turn just after it, so no two pairs overlap.
    if oldest > 0 and turns[oldest].role == "user" and turns[oldest - 1].role == "assistant":
        oldest += 1
    return _copy(turns, oldest, stop)


def _copy(turns: Sequence[ConversationTurn], start: int, stop: int) -> list[ConversationTurn]:
    """``list(turns[start:stop])``, without copying twice what a list's slice already copied (every prompt)."""
    part = turns[start:stop]
    return part if type(part) is list else list(part)


def drop_oldest(turns: Sequence[ConversationTurn], count: int, *, keep_last: int = 0) -> list[ConversationTurn]:
    """``turns`` without at least ``count`` (and at least one) of their oldest turns, in whole units (an
    assistant turn and the user turn answering it are one); the newest ``keep_last`` turns always stay."""
    start, droppable = 0, len(turns) - keep_last
    while start < droppable and (start == 0 or start < count):
        pair = start + 1 < droppable and turns[start].role == "assistant" and turns[start + 1].role == "user"
        start += 2 if pair else 1
    return list(turns[start:])


def summary_cut(turns: Sequence[ConversationTurn], ratio: float) -> int:
    """How many of the oldest turns a summary replaces: ``ratio`` of them, at least two, moved forward so
    that no assistant turn is separated from the user turn answering it. 0 when there is nothing to cut."""
    if len(turns) < 3:
        return 0
    cut = min(len(turns) - 1, max(2, int(len(turns) * ratio)))
    if turns[cut].role == "user" and turns[cut - 1].role == "assistant":
        cut += 1
    return cut if cut < len(turns) else 0


def needs_summary(turns: Sequence[ConversationTurn], *, max_tokens: int | None, max_turns: int | None) -> bool:
    if max_turns is not None and len(turns) > max_turns:
        return True
    if fits_uncounted(turns, max_tokens, len(turns)):
        return False
    assert max_tokens is not None  # None always fits
    total = 0
    for turn in turns:
        total += turn_cost(turn)
        if total > max_tokens:
            return True
    return False


def default_block(turns: Sequence[ConversationTurn]) -> str:
    lines = [HISTORY_OPEN, *(f"{turn.role}: {turn.content}" for turn in turns), HISTORY_CLOSE]
    return "\n".join(lines)


def history_block(turns: Sequence[ConversationTurn], template: Template | None) -> str:
    """The history as one clearly delimited text block (prompt-only agents, or ``history_template``).

    A template's trailing line break (a YAML ``|`` block ends with one) is dropped: one blank line, never
    two, stands between the block and the message."""
    if template is None:
        return default_block(turns)
    return template.render_text({"history": [turn.to_dict() for turn in turns]}).rstrip()


def as_messages(
    turns: Sequence[ConversationTurn], history: Sequence[ConversationTurn] | None = None
) -> tuple[ChatMessage, ...]:
    """The chat messages of ``turns``, taken from ``history``. When that is a conversation's ``Turns``, the
    messages of the turns its previous prompts sent too are copied from those prompts (``Turns.sent``), so
    a prompt costs its new turns, not its window."""
    if isinstance(history, Turns):
        return tuple(history.sent.map(turns, _MESSAGE))
    return tuple(map(_MESSAGE, turns))  # the attribute read in C: a prompt's every turn


_MESSAGE = operator.attrgetter("message")
