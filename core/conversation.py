"""Conversation history of ``conversation: true`` loops: which steps make turns, and the history manager.

The loop policy starts an ``ActiveConversation`` for its body; leaf policies call ``capture`` when a step
finishes (live or replayed, so a resumed run rebuilds the same history) and ``prepare`` before an agent
call to get the bounded history to inject.

Invariants:
- ``context.conversation_history`` is the one store of turns; each turn's tokens are counted once, when
  it is added, so bounding a long history costs the turns kept, not the turns stored.
- Turns come in chronological order: a step's turn is added when that step finishes (after a streamed
  reply is complete; a failed call adds nothing). Only final answers become turns; the full exchange of
  a call (repairs, retries) stays in the trace.
- Bounding never separates an assistant turn from the user turn that answers it (a question from its
  HITL answer): turns are kept or dropped in those units, newest first; when the answer is the current
  message (taken out of the history), its question is kept whatever the bound (``question_of``).
- Nothing here reads the environment or files: defaults arrive already merged into ``HistoryPolicy``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from core.context import ConversationTurn, Role, RunContext, Summary
from core.ports import ChatMessage
from core.steps import (
    AgentStep,
    ConditionalStep,
    Conversation,
    HitlStep,
    LoopStep,
    MapStep,
    ParallelStep,
    Step,
    WorkflowStep,
)
from core.templates import Template
from core.tokens import MESSAGE_OVERHEAD, count_tokens
from core.views import json_default

if TYPE_CHECKING:
    from collections.abc import Iterator

SUMMARY_PREFIX = "Summary of the earlier conversation: "
HISTORY_OPEN = "<conversation_history>"
HISTORY_CLOSE = "</conversation_history>"


@dataclass(frozen=True)
class ActiveConversation:
    """The conversation a loop body runs in: its settings and which steps' results become turns.

    ``iteration_input`` is what the current iteration's body received (the loop's input, then the
    propagated context): a step whose input is still that object answers the conversation's newest turn.
    """

    loop: str
    settings: Conversation
    assistant_steps: frozenset[str]
    user_steps: frozenset[str]
    hitl_is_user: bool
    iteration_input: Any = None
    threaded: bool = False  # this conversation continues the run's thread: its new turns are recorded for it

    def for_iteration(self, iteration_input: Any) -> ActiveConversation:
        return replace(self, iteration_input=iteration_input)


def start(loop: LoopStep, *, threaded: bool = False) -> ActiveConversation:
    """The conversation of ``loop`` (which has ``conversation`` settings); ``threaded`` when it continues
    the run's thread."""
    settings = loop.conversation or Conversation()
    sources = set(settings.user_turn_sources)
    hitl_is_user = "hitl" in sources
    user_steps = frozenset(sources - {"hitl"})
    if settings.ai_turn_source == "named_steps":
        assistant = frozenset(settings.named_steps) - user_steps
    elif settings.ai_turn_source == "all_agents":
        assistant = frozenset(s.name for s in _leaf_steps(loop.body) if speaks(s)) - user_steps
    else:
        assistant = _last_assistant(loop.body, user_steps, hitl_is_user)
    return ActiveConversation(loop.name, settings, assistant, user_steps, hitl_is_user, threaded=threaded)


def speaks(step: Step) -> bool:
    """Whether ``step``'s result can be an assistant turn: an agent's reply, a model's or a script's
    (``python:``, ``command:``) alike, or a sub-workflow's result (the answer of the agents inside, which
    the parent's conversation never saw). The builtins and a step without an agent only move their input
    along (``takes_history`` is False), and a composite step's result is its steps' outputs: no turn."""
    if isinstance(step, WorkflowStep):
        return True
    return isinstance(step, AgentStep) and step.agent is not None and step.agent.takes_history


def _last_assistant(body: Sequence[Step], user_steps: frozenset[str], hitl_is_user: bool) -> frozenset[str]:
    """``ai_turn_source: last``: the body's last step that is not a user-turn source, when it speaks (an
    agent or a sub-workflow); another last step (a builtin, a step without an agent, a composite) makes
    no assistant turn."""
    for step in reversed(body):
        if step.name in user_steps or (isinstance(step, HitlStep) and hitl_is_user):
            continue
        return frozenset({step.name}) if speaks(step) else frozenset()
    return frozenset()


def _leaf_steps(steps: Sequence[Step]) -> Iterator[Step]:
    """Every step of a body, depth first; a nested conversational loop owns its own body."""
    for step in steps:
        yield step
        if isinstance(step, LoopStep):
            if step.conversation is None:
                yield from _leaf_steps(step.body)
        elif isinstance(step, MapStep):
            yield from _leaf_steps(step.body)
        elif isinstance(step, (ParallelStep, ConditionalStep)):
            for _, branch in step.branches:
                yield from _leaf_steps(branch)
            if isinstance(step, ConditionalStep) and step.default_branch:
                yield from _leaf_steps(step.default_branch)


def turn_text(value: Any) -> str:
    """A step result as turn content: text as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=json_default)


def add_turn(ctx: RunContext, role: Role, content: str) -> None:
    """Add a turn said now to the history (and, in the thread's conversation, to the run's thread turns)."""
    turn = ConversationTurn(role, content, count_tokens(content))
    ctx.conversation_history.append(turn)
    if ctx.conversation is not None and ctx.conversation.threaded:
        ctx.thread_turns.append(turn)


def capture(ctx: RunContext, step: str, value: Any, *, hitl: bool) -> None:
    """Add the turn that ``step``'s result makes in the active conversation, if it makes one."""
    active = ctx.conversation
    if active is None:
        return
    role: Role
    if step in active.user_steps or (hitl and active.hitl_is_user):
        role = "user"
    elif step in active.assistant_steps and not hitl:
        role = "assistant"
    else:
        return
    text = turn_text(value)
    if text.strip():
        add_turn(ctx, role, text)


def seed(ctx: RunContext, active: ActiveConversation, loop_input: Any) -> None:
    """The first user turn, before iteration 1: from ``init.history.start_with`` or the loop's input."""
    settings = active.settings
    if settings.seed_from_step is not None:
        record = ctx.steps.get(settings.seed_from_step)
        value = record.get("output") if isinstance(record, dict) else None
    elif settings.seed_from_input:
        value = loop_input
    else:
        return
    if value is None:
        return
    text = turn_text(value)
    prefix = settings.seed_prefix
    if prefix and prefix.strip().rstrip(":").strip().lower() != "user":  # "User: " is what a user turn is
        text = f"{prefix}{text}"
    if text.strip():
        add_turn(ctx, "user", text)


def prompt_turns(turns: Sequence[ConversationTurn], summary: Summary | None) -> Sequence[ConversationTurn]:
    """The turns prompts are built from: the summary in place of the oldest turns it covers, then the rest.
    Without a summary, the turns themselves (not a copy: every agent call reads them, to be read only)."""
    if summary is None:
        return turns
    return [summary.turn, *turns[summary.covers :]]


def turn_cost(turn: ConversationTurn) -> int:
    tokens = turn.tokens if turn.tokens is not None else count_tokens(turn.content)
    return tokens + MESSAGE_OVERHEAD + 1  # the role is one token (OpenAI's accounting, as count_messages)


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
    ``max_turns``, dropping the oldest whole units first. Costs the turns kept, not the turns stored.
    The newest ``keep_last`` turns (the question the current message answers) are kept whatever the
    bounds; they count towards them."""
    stop = len(turns) if end is None else end
    kept_from = max(0, stop - keep_last)
    if max_tokens is None and max_turns is None:
        return list(turns[:stop])
    tokens, count = sum(turn_cost(turn) for turn in turns[kept_from:stop]), stop - kept_from
    # Units newest first: an assistant turn with the user turn answering it, else one turn (one loop: hot).
    index = kept_from - 1
    while index >= 0:
        turn = turns[index]
        start = index - 1 if index > 0 and turn.role == "user" and turns[index - 1].role == "assistant" else index
        cost = turn_cost(turn) + (turn_cost(turns[start]) if start < index else 0)
        if max_turns is not None and count + index + 1 - start > max_turns:
            break
        if max_tokens is not None and tokens + cost > max_tokens:
            break
        kept_from, tokens, count, index = start, tokens + cost, count + index + 1 - start, start - 1
    return list(turns[kept_from:stop])


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
    if max_tokens is None:
        return False
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


def as_messages(turns: Sequence[ConversationTurn]) -> tuple[ChatMessage, ...]:
    return tuple([turn.message for turn in turns])
