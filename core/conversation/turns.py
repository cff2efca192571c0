"""Turns of a ``conversation: true`` loop: which steps make turns, and adding them to the history.

The loop starts an ``ActiveConversation`` for its body (``start``; ``core.conversation.loop_scope`` seeds it); the
leaf policies call ``capture`` when a step finishes (live or replayed, so a resumed run rebuilds the same
history). What each agent is then sent of the history is ``core.conversation.injection``'s business.

Invariants:
- ``context.conversation_history`` is the one store of turns; each turn's tokens are counted at most once,
  when a bound first needs them (a history whose UTF-8 length fits the bound needs no count), so bounding
  a long history costs the turns kept, not the turns stored.
- Turns come in chronological order: a step's turn is added when that step finishes (after a streamed
  reply is complete; a failed call adds nothing). Only final answers become turns; the full exchange of
  a call (repairs, retries) stays in the trace.
- Nothing here reads the environment or files: defaults arrive already merged into ``HistoryPolicy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.context import RunContext
from core.conversation.replies import shown_text
from core.model.calls import Role
from core.model.provenance import step_origin, told
from core.steps.kinds import (
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
from core.text.turns import ConversationTurn, turn_text

if TYPE_CHECKING:
    from collections.abc import Iterator


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
        # Every field written out: ``dataclasses.replace`` costs several times more, once per iteration.
        return ActiveConversation(
            self.loop, self.settings, self.assistant_steps, self.user_steps, self.hitl_is_user, iteration_input,
            self.threaded,
        )  # fmt: skip


def active_in(ctx: RunContext) -> ActiveConversation | None:
    """The conversation ``ctx`` runs in. The context holds it as a ``core.ports.ConversationScope`` (the context
    is below the conversation), and it is always an ``ActiveConversation``: only ``core.conversation.loop_scope``
    sets it."""
    active = ctx.conversation
    if active is None or isinstance(active, ActiveConversation):
        return active
    raise TypeError(f"a run context's conversation must be an ActiveConversation, not {type(active).__name__}")


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


def add_turn(ctx: RunContext, role: Role, content: str, *, shown: str | None = None, origin: str | None = None) -> None:
    """Add a turn said now to the history (and, in the thread's conversation, to the run's thread turns);
    ``shown`` is what a person reads of it when that is not ``content``, ``origin`` where it came from
    (``core.model.provenance``)."""
    if shown == content:
        shown = None
    # Its tokens are counted when a bound first needs them.
    turn = ConversationTurn(role, content, shown=shown, origin=origin)
    ctx.conversation_history.append(turn)
    if ctx.conversation is not None and ctx.conversation.threaded:
        ctx.thread_turns.append(turn)


def makes_turn(ctx: RunContext, step: str, *, hitl: bool) -> bool:
    """Whether ``step``'s result makes a turn in the active conversation."""
    active = active_in(ctx)
    if active is None:
        return False
    if step in active.user_steps or (hitl and active.hitl_is_user):
        return True
    return step in active.assistant_steps and not hitl


def capture(
    ctx: RunContext, step: str, value: Any, *, hitl: bool, shown: str | None = None, path: str | None = None
) -> dict[str, int]:
    """Add the turn that ``step``'s result makes in the active conversation, if it makes one. A person reads
    ``shown`` of it (a step's ``turn_text``) when given, else the text of a structured reply
    (``core.conversation.replies.shown_text``), else the result itself. ``path`` is the step's path, which
    the turn's origin names. Returns what the step's event says of the turn (``provenance.told``): its
    number, as ``turn`` (a reply, an answer) or ``user_turn``; empty when the result made no turn."""
    active = active_in(ctx)
    if active is None:
        return {}
    role: Role
    if step in active.user_steps or (hitl and active.hitl_is_user):
        role = "user"
    elif step in active.assistant_steps and not hitl:
        role = "assistant"
    else:
        return {}
    text = turn_text(value)
    if not text.strip():
        return {}
    origin = None if path is None else step_origin(path, role=role, hitl=hitl)
    shown = shown if shown is not None and shown.strip() else shown_text(value)
    add_turn(ctx, role, text, shown=shown, origin=origin)
    return told(origin, len(ctx.conversation_history))
