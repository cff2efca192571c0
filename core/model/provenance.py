"""Why each part of a prompt is there: where a conversation's turns came from, and what a prompt left out.

A turn's ``origin`` (``ConversationTurn.origin``) is made once, when the turn is said: one short text of
ids (a step path, a run id, turn numbers), never a copy of what was said. A turn a step made is numbered by
that step's own event (``told``: ``agent.reply``, ``hitl.answer``, ``workflow.child`` carry ``turn`` or
``user_turn``), whose kind and path are its origin. The ``why`` of an ``agent.prompt`` event
(``PromptSent.why``, made by ``core.conversation.injection``) is ``{"message": origin of the current
message, "turns": [FIRST, LAST] (the numbers, 1-based, of the conversation's turns sent), "summary": origin
of the summary sent, "said": [N, origin of turn N, of turn N+1, ..., M, origin of turn M, ...],
"left_out": [note, ...]}`` (a key without a value left out, and the whole ``why`` when none is left).
``said`` gives the origins of the turns no earlier prompt event of the conversation gave and no step's
event gives (``by_event``): the seed, a thread's earlier turns. So a prompt event costs nothing for the
turns its steps said, and lens reads the origin of turn K from the events before it (docs/lens.md, "Why
each message is there"; benchmarks/test_provenance.py). What the event's ``history`` already says is not
stored again (``stored``, ``read_why``): the turns sent, the current message's number when it is the newest
turn, the turns a single note left out when they are all those dropped; so a call in a bounded
conversation stores its bound's note when it changes, and nothing else.

An origin is a one-letter code, a space, then its fields, separated by one space; a path or a name, which
may hold spaces, is always last:
- ``s input`` the conversation's seed (first user) turn, from the loop's input; ``s STEP`` from
  ``init.history.start_with``'s step;
- ``a PATH`` a person's answer to the question asked at ``PATH``;
- ``r PATH`` the reply of the step at ``PATH``, a turn because of the conversation's ``ai_turn_source``
  (given once, as ``source``, by the conversation's first prompt event); ``u PATH`` the output of a step
  named in ``user_turn_sources``;
- ``p PATH`` an ensemble participant's turn (its path ends with the round and the participant's name);
  ``c PATH`` the cue of an ensemble participant that spoke last (whose turn it is, at ``PATH``);
- ``m FIRST LAST AGENT`` a summary of turns FIRST to LAST (1-based) made by ``AGENT``;
- ``t RUN_ID`` a turn an earlier run of the thread said;
- ``i PATH`` a current message that is the step's own input (not a turn).

The notes of what was left out, objects by their ``rule`` (``turns`` is ``[FIRST, LAST]``, 1-based, of the
conversation's turns): ``truncate_tokens``/``truncate_turns``/``summarize`` with ``max_tokens`` or
``max_turns`` (the strategy's bound); ``window`` with ``budget`` (the agent's context window minus the
reply's share); ``use_history`` (the step opted out); ``takes_history`` (a builtin that moves its input
along); ``structured`` (a script's structured input, which no text block can go before).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

SEED_INPUT = "s input"


class Derived(NamedTuple):
    """What an ``agent.prompt`` event's ``history`` (``{"turns", "dropped", "summary_of"}``) tells of its
    ``why`` without it being stored: the numbers (1-based) of the first and last turns sent after the
    summary (``first > last``: none), the number the current message has when it is the newest turn, and the
    first turn a single note of what was left out starts at (after the summary's turns)."""

    first: int
    last: int
    message: int
    dropped_from: int


def derived(history: Mapping[str, Any] | None) -> Derived | None:
    """What ``history`` says of a call's turns (``Derived``); None when it does not say (no ``turns`` and
    ``dropped`` counts). ``core.conversation.injection`` stores only what differs from it, and lens reads
    the rest from it: one function, so the two cannot disagree."""
    if not history:
        return None
    sent, dropped, summary_of = history.get("turns"), history.get("dropped"), history.get("summary_of")
    if not isinstance(sent, int) or not isinstance(dropped, int):
        return None
    covers = summary_of if isinstance(summary_of, int) and summary_of > 0 else 0
    last = sent + dropped + max(covers - 1, 0)  # the summary turn stands for ``covers`` turns
    first = last - (sent - (1 if covers else 0)) + 1
    return Derived(first, last, last + 1, covers + 1)


def seed_origin(step: str | None) -> str:
    return SEED_INPUT if step is None else f"s {step}"


def step_origin(path: str, *, role: str, hitl: bool) -> str:
    """The origin of the turn the step at ``path`` made: a person's answer, a reply, or a user turn."""
    if hitl:
        return answer_origin(path)
    return f"r {path}" if role == "assistant" else f"u {path}"


def told(origin: str | None, number: int) -> dict[str, int]:
    """What the event of the step that made turn ``number`` (whose origin is ``origin``, ``step_origin``'s)
    says of it: ``{"turn": N}`` for a reply or an answer, ``{"user_turn": N}`` for a user turn. Its origin so
    never goes in a prompt event's ``said`` (``by_event``): lens reads it from the step's event."""
    if origin is None:
        return {}
    return {"user_turn": number} if origin.startswith("u ") else {"turn": number}


def told_turns(path: str, turn: Any, user_turn: Any, *, answer: bool) -> dict[int, str]:
    """``told`` read back: the turns the event of the step at ``path`` numbers (``turn``, ``user_turn``, as
    its payload holds them), each with its origin; ``answer`` for a ``hitl.answer`` event."""
    found: dict[int, str] = {}
    if isinstance(turn, int):
        found[turn] = step_origin(path, role="assistant", hitl=answer)
    if isinstance(user_turn, int):
        found[user_turn] = step_origin(path, role="user", hitl=False)
    return found


def by_event(origin: str | None) -> bool:
    """Whether a turn whose origin is ``origin`` is said by its step's event (``told``), not by ``said``."""
    return origin is not None and origin[:2] in _TOLD


_TOLD = ("r ", "a ", "u ")


def answer_origin(path: str) -> str:
    return f"a {path}"


def participant_origin(path: str) -> str:
    return f"p {path}"


def cue_origin(path: str) -> str:
    return f"c {path}"


def thread_origin(run_id: str) -> str:
    return f"t {run_id}"


def summary_origin(first: int, last: int, by: str) -> str:
    return f"m {first} {last} {by}"


def input_origin(path: str) -> str:
    return f"i {path}"


def left_out(rule: str, first: int, last: int, **numbers: Any) -> dict[str, Any]:
    """A note that turns ``first`` to ``last`` (1-based) were not sent, by ``rule``, with its numbers."""
    return {"rule": rule, "turns": [first, last], **numbers}


_ITERATION = re.compile(r"(?<=/)\d+(?=/|$)")


def step_key(path: str) -> str:
    """The step of a call whatever its iteration: ``chat/3/talk`` → ``chat/*/talk``. A call's notes of what
    was left out are stored only when they differ from those of the previous call of its step
    (``PromptSent.why`` without ``left_out``: the same as that call's)."""
    return _ITERATION.sub("*", path)


def stored(why: dict[str, Any], history: Mapping[str, Any] | None) -> dict[str, Any]:
    """``why`` as an event stores it: without what ``history`` gives (``derived``): the turns sent, the current
    message's number when it is the newest turn, and a single note's turns when they are all those
    dropped."""
    known = derived(history)
    notes = why.get("left_out")
    if known is None:
        return why
    if why.get("message") == known.message:
        del why["message"]
    if why.get("turns") == [known.first, known.last]:
        del why["turns"]
    if notes and len(notes) == 1 and notes[0].get("turns") == [known.dropped_from, known.first - 1]:
        del notes[0]["turns"]
    return why


def read_why(why: Mapping[str, Any], history: Mapping[str, Any] | None, previous: Any = ()) -> dict[str, Any]:
    """A stored ``why`` whole again (``stored`` undone): ``message``, ``turns`` (when any were sent) and each
    note's ``turns`` filled in from ``history``; without ``left_out``, the notes ``previous`` (those of the
    previous call of the step, as stored)."""
    whole = dict(why)
    notes = [dict(note) for note in why.get("left_out", previous) or () if isinstance(note, Mapping)]
    whole["left_out"] = notes
    known = derived(history)
    if known is None:
        return whole
    whole.setdefault("message", known.message)
    if "turns" not in whole and known.first <= known.last:
        whole["turns"] = [known.first, known.last]
    if len(notes) == 1 and "turns" not in notes[0]:
        notes[0]["turns"] = [known.dropped_from, known.first - 1]
    return whole
