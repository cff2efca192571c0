"""History injection for agent steps inside a ``conversation: true`` loop: what each agent call is sent.

Before each agent call, ``prepare`` decides what the agent is sent: the bounded history (as chat messages
for model agents, or as one delimited text block for prompt-only agents and when a ``history_template`` is
set) and the current message. Agents that take no history (``Agent.takes_history`` is False: the builtins,
which move their input along) get only the message. The bound is the loop's strategy (``truncate_tokens``,
``truncate_turns``, ``summarize``) and, always, the agent's prompt budget (context window minus the reply
reserve).

With ``summarize``, the summary (``core.conversation.summary``) is sent in place of the oldest turns it stands
for; the strategy's bound applies to the turns after it, and the summary comes on top (never dropped by
it). The conversation itself is never cut.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.context import RunContext
from core.conversation.current_message import current_message
from core.conversation.history import as_messages, bound, drop_oldest, history_block, prompt_turns, question_of
from core.conversation.run_frame import RunFrame
from core.conversation.turns import ActiveConversation, active_in
from core.model.calls import AgentCall, ChatMessage
from core.model.events import HistoryNotInjected
from core.model.provenance import by_event, input_origin, left_out, step_key, stored
from core.model.records import TraceEvent
from core.ports import Agent
from core.steps.kinds import AgentStep
from core.text.templates import Template
from core.text.tokens import DEFAULT_ENCODING, count_messages, encoding_name
from core.text.turns import ConversationTurn, Turns, turn_text


@dataclass(frozen=True)
class Injection:
    """What an agent step sends: its message, the history messages, and facts for the trace."""

    message: Any
    history: tuple[ChatMessage, ...] = ()
    trace: dict[str, Any] = field(default_factory=dict)
    why: dict[str, Any] | None = None  # where each part came from and what was left out (PromptSent.why)

    @property
    def injected(self) -> bool:
        return bool(self.trace.get("turns"))


async def prepare(
    step: AgentStep,
    agent: Agent,
    data: Any,
    message: Any,
    ctx: RunContext,
    path: str,
    frame: RunFrame[Any],
    events: list[TraceEvent],
) -> Injection:
    """The history to inject into this call and the message to send with it."""
    active = active_in(ctx)
    if active is None:
        return Injection(message)
    if step.use_history is not False and agent.takes_history:  # only a call that sends history summarizes it
        from core.conversation.summary import summarize  # imported by the runs that have a conversation only

        await summarize(active, ctx, path, frame)
    summary = ctx.summary if active.settings.history.strategy == "summarize" else None
    turns = prompt_turns(ctx.conversation_history, summary)
    head = 0 if summary is None else 1  # the summary turn, kept whatever the strategy's bound
    current = current_message(
        turns,
        data=data,
        rendered=message,
        explicit=step.input is not None,
        initial_prompt=ctx.initial_prompt,
        iteration_input=active.iteration_input,
    )
    message, end = current.message, current.end
    offset = 0 if summary is None else summary.covers - 1  # a turn's number is its index here plus 1 plus this
    # The current message: the number of the turn it is (its origin is in ``said``), or the step's input.
    said: Any = end + 1 + offset if end < len(turns) else input_origin(path)
    if step.use_history is False:
        why = stored(_unsent(ctx, said, "use_history", end, offset), None)
        why["conversation"] = active.loop  # no history to say it: lens places the turns' events by it
        return Injection(message, why=_as_before(why, ctx.conversation_history, path))
    if not agent.takes_history:  # a builtin moving its input along: a history block would join its output
        unsent = {**_none(active, end), "mode": "none (the agent takes no history)"}
        why = stored(_unsent(ctx, said, "takes_history", end, offset), unsent)
        return Injection(message, (), unsent, _as_before(why, ctx.conversation_history, path))
    template = active.settings.history_template
    as_text = not agent.is_model or template is not None
    if as_text and agent.is_model and not isinstance(message, str):
        message = turn_text(message)  # a model is sent a structured input as JSON text: the block goes before it
    policy = active.settings.history
    max_tokens = policy.max_tokens if policy.strategy != "truncate_turns" else None
    max_turns = policy.max_turns if policy.strategy != "truncate_tokens" else None
    strategy_tokens = max_tokens
    room = _room(agent, step.name, message)
    if room is not None:
        max_tokens = room if max_tokens is None else min(max_tokens, room)
    question = question_of(turns, end)  # never send an answer without the question it answers
    head = min(head, end)
    kept = bound(
        turns[head:] if head else turns,  # no copy of the whole history when there is no summary turn
        end=end - head,
        max_tokens=max_tokens,
        max_turns=max_turns,
        keep_last=min(question, end - head),
    )
    bounded = len(kept)  # of the turns after the summary
    if head:
        kept[:0] = turns[:head]
    if kept and (isinstance(message, str) or not as_text):
        kept = _fit_window(agent, step.name, message, kept, template if as_text else _MESSAGES, question)
    trace: dict[str, Any] = {"conversation": active.loop, "turns": len(kept), "dropped": end - len(kept)}
    if summary is not None and kept[:1] == [summary.turn]:
        trace["summary_of"] = summary.covers  # the first turn sent stands for this many of the oldest
    why = stored(
        _why(
            ctx.conversation_history,
            agent,
            (policy.strategy, active.settings.ai_turn_source),
            turns,
            kept,
            said,
            (head, end, bounded, offset),
            max_turns,
            strategy_tokens,
            room,
        ),
        trace,
    )
    why = _as_before(why, ctx.conversation_history, path)
    if not kept:
        return Injection(message, (), trace, why)
    if not as_text:
        return Injection(message, as_messages(kept, ctx.conversation_history), {**trace, "mode": "messages"}, why)
    if isinstance(message, str):
        return Injection(_with_block(kept, template, message), (), {**trace, "mode": "text"}, why)
    # A script agent's structured input is passed unchanged: no text block can go before it. Say so.
    reason = "the input is structured (not text); the agent can read context.conversation_history"
    events.append(frame.event(path, HistoryNotInjected(len(kept), reason)))
    trace = {**_none(active, end), "mode": "none (structured input)"}
    why = stored(_unsent(ctx, said, "structured", end, offset), trace)
    return Injection(message, (), trace, _as_before(why, ctx.conversation_history, path))


def replayed_call(step: AgentStep, agent: Agent, ctx: RunContext) -> None:
    """An agent call served from the journal (a resumed run): its ``agent.prompt`` event, stored by the earlier
    process, gave the origins of the turns said so far, as ``prepare`` would have: the next call's event says
    those after them, as in a run never interrupted."""
    history = ctx.conversation_history
    if isinstance(history, Turns) and active_in(ctx) is not None:
        history.described = len(history)


def _why(
    history: Sequence[ConversationTurn],
    agent: Agent,
    conversation: tuple[str, str],
    turns: Sequence[ConversationTurn],
    kept: Sequence[ConversationTurn],
    said: Any,
    cut: tuple[int, int, int, int],
    max_turns: int | None,
    max_tokens: int | None,
    room: int | None,
) -> dict[str, Any]:
    """``PromptSent.why`` of a call sent ``kept`` of ``turns[:end]`` (``bounded`` of the turns after the
    summary, if ``head``, kept by the bound; ``offset`` + 1 + an index is a turn's number) before a message
    whose origin is ``said``: the numbers of the turns sent (and the summary's origin), the origins of the
    conversation's turns the trace has not said yet, and what was left out, by which rule."""
    head, end, bounded, offset = cut
    strategy, source = conversation  # the history's strategy and its ai_turn_source
    left: list[dict[str, Any]] = []
    if bounded < end - head:  # the bound dropped the oldest turns after the summary: say by which rule
        rule, numbers = _rule(strategy, turns, head, end, bounded, max_turns, max_tokens, room, agent)
        left.append(left_out(rule, head + 1 + offset, end - bounded + offset, **numbers))
    summarized = head == 1 and kept[:1] == turns[:1]
    fitted = len(kept) - (1 if summarized else 0)
    if fitted < bounded or (head and not summarized):  # cut again to fit the prompt as sent in the budget
        first = end - bounded + 1 + offset if summarized or not head else 1  # the summary's turns went too
        left.append(left_out("window", first, end - fitted + offset, **_room_numbers(agent)))
    why: dict[str, Any] = {"message": said, "left_out": left}
    if summarized:
        why["summary"] = kept[0].origin
    if fitted:
        why["turns"] = [end - fitted + 1 + offset, end + offset]
    return _with_new_origins(why, history, source)


def _as_before(why: dict[str, Any], history: Sequence[ConversationTurn], path: str) -> dict[str, Any]:
    """``why`` without its notes of what was left out when they are those of the previous call of the step at
    ``path`` in this conversation (``provenance.step_key``): a bounded conversation says its bound's note once,
    not at every iteration. Said (an empty list when nothing was left out) at a step's first call in this
    process (a resumed run's first call too) and where the history keeps no memory."""
    notes = why.get("left_out") or []
    if not isinstance(history, Turns):
        why["left_out"] = notes
        return why
    key = step_key(path)
    if key in history.noted and history.noted[key] == notes:
        why.pop("left_out", None)
    else:
        why["left_out"] = notes
    history.noted[key] = notes
    return why


def _with_new_origins(why: dict[str, Any], history: Sequence[ConversationTurn], source: str) -> dict[str, Any]:
    """``why`` with ``said``: the origins of the turns of ``history`` no earlier prompt event of this
    conversation gave and no step's event gives (a reply's, an answer's: ``provenance.by_event``), each run
    of them after the number of its first turn (``[1, "s input"]``). A prompt event so costs the seed and a
    thread's turns once, and nothing for the turns its steps said; lens reads the origins of the turns a call
    sent from the events before it (a run resumed in a new process says its seed again once). Saying them
    from the first, it also gives the conversation's ``ai_turn_source`` (``source``), which its replies'
    origins leave out."""
    start = history.described if isinstance(history, Turns) else 0
    if start > len(history):  # turns given back (a stopped iteration): say them again
        start = 0
    if start < len(history):
        said: list[Any] = []
        following = False  # whether the last origin said is that of the turn before this one
        for number, turn in enumerate(history[start:], start + 1):
            if by_event(turn.origin):
                following = False
                continue
            if not following:
                said.append(number)
            said.append(turn.origin)
            following = True
        if said:
            why["said"] = said
        if start == 0:
            why["source"] = source
        if isinstance(history, Turns):
            history.described = len(history)
    return why


def _unsent(ctx: RunContext, said: Any, rule: str, end: int, offset: int) -> dict[str, Any]:
    """The ``why`` of a call sent none of the history before its message, by ``rule``."""
    first, last = 1, end + offset  # the summary's turns too: nothing of them was sent
    notes = [left_out(rule, first, last)] if last >= first else []
    active = active_in(ctx)
    source = active.settings.ai_turn_source if active is not None else ""
    return _with_new_origins({"message": said, "left_out": notes}, ctx.conversation_history, source)


def _rule(
    strategy: str,
    turns: Sequence[ConversationTurn],
    head: int,
    end: int,
    bounded: int,
    max_turns: int | None,
    max_tokens: int | None,
    room: int | None,
    agent: Agent,
) -> tuple[str, dict[str, Any]]:
    """Which rule made ``bound`` keep ``bounded`` of the ``end - head`` turns after the summary: the
    strategy's ``max_turns`` when it alone keeps as many; else the tokens, the strategy's ``max_tokens``
    or the agent's budget, whichever is smaller."""
    if max_turns is not None and end - head > max_turns:
        oldest = end - max_turns
        if oldest > head and turns[oldest].role == "user" and turns[oldest - 1].role == "assistant":
            oldest += 1  # units are kept whole, as ``bound`` keeps them
        if end - oldest == bounded:
            return strategy, {"max_turns": max_turns}
    if room is not None and (max_tokens is None or room < max_tokens):
        return "window", _room_numbers(agent)
    return strategy, {"max_tokens": max_tokens}


def _room_numbers(agent: Agent) -> dict[str, Any]:
    """A ``window`` note's numbers: the agent's prompt budget and, when known, the window's tokens kept for the
    reply (the two make its context window)."""
    reply = getattr(agent, "reply_reserve", None)  # the model agents' (core.agents.factory)
    return {"budget": agent.prompt_budget} if reply is None else {"budget": agent.prompt_budget, "reply": reply}


def _none(active: ActiveConversation, end: int) -> dict[str, Any]:
    """The trace of a call sent none of the ``end`` turns before its message."""
    return {"conversation": active.loop, "turns": 0, "dropped": end}


_MESSAGES = "messages"  # _fit_window's "as chat messages" (a template is the text block's form)


def _with_block(kept: Sequence[ConversationTurn], template: Template | None, message: str) -> str:
    return f"{history_block(kept, template)}\n\n{message}"


def _room(agent: Agent, step: str, message: Any) -> int | None:
    """Tokens left for history in the agent's prompt budget, after its system prompt and the message."""
    budget = agent.prompt_budget
    if budget is None:
        return None
    fixed = count_messages(agent.prompt(AgentCall(input=message, step=step)), agent.model_name)
    return max(0, budget - fixed)


def _fit_window(
    agent: Agent, step: str, message: Any, kept: list[ConversationTurn], form: Template | str | None, question: int
) -> list[ConversationTurn]:
    """``kept`` without as many of its oldest units as it takes for the prompt *as sent* (the rendered
    history block with its template's text, or the history messages in the model's own tokenizer) to fit
    the agent's prompt budget. ``bound`` estimated it from the turns' stored counts (o200k_base, one chat
    message each), which is exact only for history messages to a model counted with o200k_base."""
    budget = agent.prompt_budget
    if budget is None or (form == _MESSAGES and encoding_name(agent.model_name) == DEFAULT_ENCODING):
        return kept
    fixed = count_messages(agent.prompt(AgentCall(input=message, step=step)), agent.model_name)
    while len(kept) > question:
        if form == _MESSAGES:
            call = AgentCall(input=message, step=step, history=as_messages(kept))
        else:
            call = AgentCall(input=_with_block(kept, form if isinstance(form, Template) else None, message), step=step)
        sent = count_messages(agent.prompt(call), agent.model_name)
        if sent <= budget:
            break
        per_turn = max(1.0, (sent - fixed) / len(kept))  # what a kept turn really costs, template included
        kept = drop_oldest(kept, math.ceil((sent - budget) / per_turn), keep_last=question)
    return kept
