"""What a participant is sent: the conversation so far from its own point of view, bounded.

Its own turns are ``assistant`` turns; everyone else's (and the ensemble's input, which opens the
conversation) are ``user`` turns naming the speaker ("critic: too long"). The history is bounded by the
ensemble's history policy (``truncate_tokens`` / ``truncate_turns``; ``summarize`` bounds like
``truncate_tokens``) and the model's prompt budget, cutting from the stored turns without copying them.
A model is sent its system prompt, the bounded history and, as the current message, the newest turn said
by someone else (or a cue when it spoke last). A script is sent one JSON object (``envelope``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.conversation.ensemble.state import EnsembleState
from core.conversation.history import bound
from core.model.calls import AgentCall, ChatMessage
from core.model.codec import normalize
from core.model.provenance import cue_origin, left_out
from core.ports import Agent
from core.steps.kinds import HistoryPolicy, Participant
from core.text.tokens import count_messages
from core.text.turns import ConversationTurn, turn_text


def cue(participant: Participant, round_number: int) -> str:
    """The current message of a model whose own turn was the newest: whose turn it is."""
    return f"(round {round_number}: it is your turn, {participant.name})"


def kept_range(state: EnsembleState, policy: HistoryPolicy | None, *, room: int | None = None) -> int:
    """The index of the oldest stored turn sent (``state.said[start:]``), within ``policy`` and ``room``."""
    return _kept_from(state.said, policy, room=room)


def _kept_from(said: Sequence[ConversationTurn], policy: HistoryPolicy | None, *, room: int | None) -> int:
    max_tokens = max_turns = None
    if policy is not None:
        max_tokens = policy.max_tokens if policy.strategy != "truncate_turns" else None
        max_turns = policy.max_turns if policy.strategy != "truncate_tokens" else None
    if room is not None:
        max_tokens = room if max_tokens is None else min(max_tokens, room)
    if max_tokens is None and max_turns is None:
        return 0
    return len(said) - len(bound(said, max_tokens=max_tokens, max_turns=max_turns))


def chat(
    state: EnsembleState, participant: Participant, agent: Agent, round_number: int, path: str = ""
) -> tuple[Any, tuple[ChatMessage, ...], dict[str, Any]]:
    """The current message and the history messages of a model participant, and where they came from (the
    ``why`` of its ``agent.prompt`` event, ``ensemble_why``; the participant's turn is at ``path``)."""
    room = None
    if agent.prompt_budget is not None:
        call = AgentCall(input=cue(participant, round_number), step=participant.name)
        fixed = count_messages(agent.prompt(call), agent.model_name)
        room = max(0, agent.prompt_budget - fixed)
    start = kept_range(state, state.step.history, room=room)
    messages: list[ChatMessage] = []
    cut = _kept_from(state.earlier, state.step.history, room=room) if start == 0 else len(state.earlier)
    if start == 0 and state.earlier:  # a thread's earlier turns, within the same bounds
        earlier = state.earlier[cut:]
        own = f"{participant.name}: "
        for old in earlier:  # from its point of view too: its own turns are the assistant's, others' the user's
            if old.role == "assistant" and old.content.startswith(own):
                messages.append(ChatMessage("assistant", old.content.removeprefix(own)))
            else:
                messages.append(ChatMessage("user", old.content))
    if start == 0 and state.seed is not None:
        messages.append(state.seed.message)
    messages += _point_of_view(state, participant.name)[start:]
    # The turns are numbered as sent: the thread's earlier ones, the input, then the ensemble's.
    first = cut + 1 if start == 0 else len(state.earlier) + (state.seed is not None) + start + 1
    rule = _bound_rule(state, start, cut, room, agent)
    if messages and messages[-1].role == "user":
        return messages[-1].content, tuple(messages[:-1]), ensemble_why(state, round_number, first, None, rule)
    return cue(participant, round_number), tuple(messages), ensemble_why(state, round_number, first, path, rule)


def ensemble_why(
    state: EnsembleState, round_number: int, first: int, cued: str | None, rule: dict[str, Any] | None
) -> dict[str, Any]:
    """``PromptSent.why`` of a participant's call (``core.model.provenance``): the conversation (the
    ensemble's name), the numbers of the turns sent from ``first``, the current message (the newest turn, or,
    when the participant spoke last, the cue of its turn at ``cued``), what ``rule`` left out, and the
    origins of the turns said since the last round. Every call of a round says the same ones, so that lens
    reads them whatever order the round's calls are in."""
    total = len(state.earlier) + (state.seed is not None) + len(state.said)
    if state.told_in != round_number:
        state.told_from, state.told_in, state.told = state.told, round_number, total
    last = total if cued is not None else total - 1
    why: dict[str, Any] = {"conversation": state.step.name, "message": cue_origin(cued) if cued else total}
    if first <= last:
        why["turns"] = [first, last]
    # Said at every call (no memory of a step's previous call here): empty when nothing was left out.
    why["left_out"] = [left_out(rule.pop("rule"), 1, first - 1, **rule)] if first > 1 and rule is not None else []
    if state.told_from < total:
        why["said"] = [state.told_from + 1, *(_origin(state, number) for number in range(state.told_from, total))]
    return why


def _origin(state: EnsembleState, index: int) -> str | None:
    """The origin of the turn at ``index`` (0-based) of the thread's earlier turns, the input, the ensemble's."""
    if index < len(state.earlier):
        return state.earlier[index].origin
    index -= len(state.earlier)
    if state.seed is not None:
        if index == 0:
            return state.seed.origin
        index -= 1
    return state.said[index].origin


def _bound_rule(state: EnsembleState, start: int, cut: int, room: int | None, agent: Agent) -> dict[str, Any] | None:
    """Which rule left the oldest turns out: the ensemble's history policy when it alone cuts as much, else
    the agent's prompt budget."""
    policy = state.step.history
    if start == 0 and cut == 0:
        return None
    alone = kept_range(state, policy) if start else _kept_from(state.earlier, policy, room=None)
    if policy is not None and (alone == (start or cut) or room is None):
        numbers = {"max_turns": policy.max_turns} if policy.strategy == "truncate_turns" else {}
        return {"rule": policy.strategy, **(numbers or {"max_tokens": policy.max_tokens})}
    reply = getattr(agent, "reply_reserve", None)
    return {"rule": "window", "budget": agent.prompt_budget, **({} if reply is None else {"reply": reply})}


def _point_of_view(state: EnsembleState, name: str) -> list[ChatMessage]:
    """``state.said`` as participant ``name`` is sent it: its own turns the assistant's (their output's
    text), everyone else's the user's (``name: text``). Made once per turn and kept (``state.views``): each
    round's prompt holds the same message objects as the last one's, so it costs its new turns to make, to
    mask in its trace (``Redactor.messages``) and to store, not its window."""
    made = state.views.setdefault(name, [])
    for index in range(len(made), len(state.said)):
        turn = state.turns[index]
        own = turn.participant == name
        made.append(ChatMessage("assistant", turn_text(turn.output)) if own else state.said[index].message)
    return made


def envelope(state: EnsembleState, participant: Participant, opening: Any, round_number: int) -> dict[str, Any]:
    """The JSON object a script participant is sent: {input, context, history, turn, agent, config}."""
    start = kept_range(state, state.step.history)
    # A copy (a JSON round trip: the values are JSON data already, and it is several times faster than
    # deepcopy): a Python participant changing what it was sent changes nothing of the state.
    return normalize(  # type: ignore[no-any-return]
        {
            "input": opening,
            "context": state.context,
            "history": state.history[start:],
            "turn": round_number,
            "agent": participant.name,
            "config": participant.config,
        }
    )
