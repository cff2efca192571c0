"""Why each part of a prompt is there: where a conversation's turns came from, and what a prompt left out.

A turn's ``origin`` (``ConversationTurn.origin``) is made once, when the turn is said, as a few ids (a step
path, a run id, turn numbers), never a copy of its text: a prompt that sends the turn refers to it. The
``why`` of an ``agent.prompt`` event (``PromptSent.why``, made by ``core.conversation.injection``) is then
``{"history": [origin of each turn sent], "message": origin of the current message, "left_out": [note]}``;
lens places the history's origins on the messages that carry them and says the rest in words
(docs/lens.md, "Why each message is there").

The origins, by their first key:
- ``{"seed": "input"}`` the conversation's first user turn, from the loop's input; ``{"seed": STEP}`` from
  ``init.history.start_with``'s step;
- ``{"answer": PATH}`` a person's answer to the question asked at ``PATH``;
- ``{"reply": PATH, "source": ai_turn_source}`` the reply of the step at ``PATH``, a turn because of the
  conversation's ``ai_turn_source``; ``{"user": PATH}`` the output of a step named in ``user_turn_sources``;
- ``{"summary": [FIRST, LAST], "by": AGENT}`` a summary of turns FIRST to LAST (1-based) made by ``AGENT``;
- ``{"thread": RUN_ID}`` a turn an earlier run of the thread said;
- ``{"input": PATH}`` a current message that is the step's own input (not a turn).

The notes of what was left out, by their ``rule`` (``turns`` is ``[FIRST, LAST]``, 1-based, of the
conversation's turns): ``truncate_tokens``/``truncate_turns``/``summarize`` with ``max_tokens`` or
``max_turns`` (the strategy's bound); ``window`` with ``budget`` (the agent's context window minus the reply's
share, ``window`` and ``reserve`` when known); ``use_history`` (the step opted out); ``takes_history`` (a
builtin that moves its input along); ``structured`` (a script's structured input, which no text block can
go before).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEED_INPUT: Mapping[str, Any] = {"seed": "input"}


def seed_origin(step: str | None) -> Mapping[str, Any]:
    return SEED_INPUT if step is None else {"seed": step}


def step_origin(path: str, *, role: str, hitl: bool, source: str) -> Mapping[str, Any]:
    """The origin of the turn the step at ``path`` made: a person's answer, a reply, or a user turn."""
    if hitl:
        return {"answer": path}
    if role == "assistant":
        return {"reply": path, "source": source}
    return {"user": path}


def thread_origin(run_id: str) -> Mapping[str, Any]:
    return {"thread": run_id}


def summary_origin(first: int, last: int, by: str) -> Mapping[str, Any]:
    return {"summary": [first, last], "by": by}


def left_out(rule: str, first: int, last: int, **numbers: Any) -> dict[str, Any]:
    """A note that turns ``first`` to ``last`` (1-based) were not sent, by ``rule``, with its numbers."""
    return {"rule": rule, "turns": [first, last], **numbers}
