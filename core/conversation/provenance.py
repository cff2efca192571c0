"""Why each part of a prompt is there: where a conversation's turns came from, and what a prompt left out.

A turn's ``origin`` (``ConversationTurn.origin``) is made once, when the turn is said: one short text of
ids (a step path, a run id, turn numbers), never a copy of what was said. The ``why`` of an ``agent.prompt``
event (``PromptSent.why``, made by ``core.conversation.injection``) is ``{"message": origin of the current
message, "turns": [FIRST, LAST] (the numbers, 1-based, of the conversation's turns sent), "summary": origin
of the summary sent, "said": [N, origin of turn N, of turn N+1, ...], "left_out": [note, ...]}`` (a key
without a value left out). ``said`` gives the origins of the turns no earlier prompt event of the
conversation gave (``Turns.described``): so a prompt event costs the turns said since the last one (two
an iteration), not the turns it sent, and lens reads the origin of turn K from the events before it
(docs/lens.md, "Why each message is there"; benchmarks/test_provenance.py).

An origin is its code, then its fields, separated by one space; a path or a name, which may hold spaces,
is always last:
- ``seed input`` the conversation's first user turn, from the loop's input; ``seed STEP`` from
  ``init.history.start_with``'s step;
- ``answer PATH`` a person's answer to the question asked at ``PATH``;
- ``reply SOURCE PATH`` the reply of the step at ``PATH``, a turn because of the conversation's
  ``ai_turn_source`` ``SOURCE``; ``user PATH`` the output of a step named in ``user_turn_sources``;
- ``summary FIRST LAST AGENT`` a summary of turns FIRST to LAST (1-based) made by ``AGENT``;
- ``thread RUN_ID`` a turn an earlier run of the thread said;
- ``input PATH`` a current message that is the step's own input (not a turn).

The notes of what was left out, objects by their ``rule`` (``turns`` is ``[FIRST, LAST]``, 1-based, of the
conversation's turns): ``truncate_tokens``/``truncate_turns``/``summarize`` with ``max_tokens`` or
``max_turns`` (the strategy's bound); ``window`` with ``budget`` (the agent's context window minus the
reply's share); ``use_history`` (the step opted out); ``takes_history`` (a builtin that moves its input
along); ``structured`` (a script's structured input, which no text block can go before).
"""

from __future__ import annotations

from typing import Any

SEED_INPUT = "seed input"


def seed_origin(step: str | None) -> str:
    return SEED_INPUT if step is None else f"seed {step}"


def step_origin(path: str, *, role: str, hitl: bool, source: str) -> str:
    """The origin of the turn the step at ``path`` made: a person's answer, a reply, or a user turn."""
    if hitl:
        return f"answer {path}"
    if role == "assistant":
        return f"reply {source} {path}"
    return f"user {path}"


def thread_origin(run_id: str) -> str:
    return f"thread {run_id}"


def summary_origin(first: int, last: int, by: str) -> str:
    return f"summary {first} {last} {by}"


def input_origin(path: str) -> str:
    return f"input {path}"


def left_out(rule: str, first: int, last: int, **numbers: Any) -> dict[str, Any]:
    """A note that turns ``first`` to ``last`` (1-based) were not sent, by ``rule``, with its numbers."""
    return {"rule": rule, "turns": [first, last], **numbers}
