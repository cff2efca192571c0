"""A simulated person: an agent that answers the questions a run asks a person (``answered_by``,
``--simulate-user``), so a conversational workflow can be tested without anyone at the terminal.

The agent hears the conversation from the person's side: the roles are flipped, so what the asking side
said (assistant turns) reaches it as user messages, and the person's earlier answers (user turns) are its
own assistant turns; the question being asked is its current message. A persona is the agent's system
prompt. Bounding the history and paying for the call are the asking policy's (``core.policies.person``).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

from core.model.calls import AgentCall, ChatMessage
from core.ports import Agent
from core.text.turns import ConversationTurn, HitlEntry, turn_text

SIMULATED = "simulated"


@dataclass(frozen=True)
class SimulatedPerson:
    """The agent that plays the person, and how it is named in traces and messages (``agents.NAME``)."""

    agent: Agent
    name: str

    def call(
        self, step: str, question: str, heard: Sequence[ConversationTurn], *, rejected: Rejection | None = None
    ) -> AgentCall:
        """The call that asks this person ``question`` after the conversation ``heard`` (as the asking
        side recorded it: ``user`` turns are the person's). The asking side's last turn, when it has not
        been answered yet, is heard with the question, in one message: left out when it holds the
        question already (a structured ``{"question": ...}`` reply), else before it. After a ``rejected``
        answer the question says why, so the person can answer again."""
        turns = list(heard)
        message = question
        if turns and turns[-1].role == "assistant":
            said = turns.pop().content
            if question.strip() not in said:
                message = f"{said}\n\n{question}"
        if rejected is not None:
            message = (
                f"{message}\n\n(Your answer {rejected.answer!r} was not accepted: {rejected.error}."
                " Please answer again.)"
            )
        return AgentCall(input=message, step=step, history=flipped(turns))


@dataclass(frozen=True)
class Rejection:
    """An answer that did not satisfy the question's ``input_schema``, and why."""

    answer: str
    error: str


def flipped(turns: Sequence[ConversationTurn]) -> tuple[ChatMessage, ...]:
    """``turns`` as the person hears them: assistant turns become user messages and the other way round.
    The same message objects for a turn in every question (``ConversationTurn.heard``): tracing a question
    masks its new turns only (``Redactor.messages``)."""
    return tuple(map(_HEARD, turns))


_HEARD = operator.attrgetter("heard")


def questions_and_answers(entries: Sequence[HitlEntry]) -> list[ConversationTurn]:
    """The questions asked so far and their answers as turns: the conversation a person had outside a
    ``conversation: true`` loop (question: assistant, answer: user)."""
    turns: list[ConversationTurn] = []
    for entry in entries:
        turns.append(ConversationTurn("assistant", entry.message))
        turns.append(ConversationTurn("user", turn_text(entry.answer)))
    return turns
