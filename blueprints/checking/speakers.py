"""Who speaks in a ``conversation: true`` loop, read from the blueprint (docs/conversation.md, "Who speaks").

The same rules as the engine's (``core.conversation.turns.start``), for ``validate`` and ``explain``: an agent's
reply is an assistant turn whatever the agent is (a model, a ``python:`` or ``command:`` script), and so is
a sub-workflow's result; the builtins (``passthrough``, ``stringify``) and a step without an agent only move
their input along, and a composite step's result is its steps' outputs, so they make no turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from blueprints.schema import (
    AgentModel,
    AgentStepModel,
    AnyStepModel,
    ConditionalStepModel,
    HitlStepModel,
    LoopSettingsModel,
    LoopStepModel,
    MapStepModel,
    ParallelStepModel,
)


def asks_user(step: AnyStepModel) -> bool:
    """A ``kind: step`` with ``agent: {id: flujo.builtins.ask_user}``: it asks the human, like a hitl step."""
    return (
        isinstance(step, AgentStepModel)
        and not isinstance(step.agent, str)
        and step.agent is not None
        and step.agent.id == "flujo.builtins.ask_user"
    )


def speaks(step: AnyStepModel, agents: Mapping[str, AgentModel]) -> bool:
    """Whether ``step``'s result can be an assistant turn: an agent's reply or a sub-workflow's result."""
    if not isinstance(step, AgentStepModel):
        return False
    if isinstance(step.agent, str):
        return True  # agent: "module:function", a Python script agent
    if step.uses is None:
        return False  # a builtin (agent: {id: ...}) or no agent: the input moves along
    if step.uses.startswith("imports."):
        return True
    return step.uses.removeprefix("agents.") in agents


def user_sources(loop: LoopSettingsModel) -> tuple[bool, frozenset[str]]:
    """Whether HITL steps make user turns, and the steps named as user-turn sources."""
    sources = set(loop.user_turn_sources) if loop.user_turn_sources is not None else {"hitl"}
    return "hitl" in sources, frozenset(sources - {"hitl"})


def last_step(loop: LoopSettingsModel) -> AnyStepModel | None:
    """``ai_turn_source: last``: the body's last step that is not a user-turn source (it speaks or not)."""
    hitl_is_user, named_users = user_sources(loop)
    for step in reversed(loop.body):
        asks = isinstance(step, HitlStepModel) or asks_user(step)
        if step.name in named_users or (asks and hitl_is_user):
            continue
        return step
    return None


def silent_reason(
    loop: LoopSettingsModel, steps: Sequence[AnyStepModel], agents: Mapping[str, AgentModel]
) -> str | None:
    """Why the conversation of ``loop`` (whose own steps, nested conversations left out, are ``steps``) can
    never get an assistant turn; None when some step can make one."""
    _, named_users = user_sources(loop)
    source = loop.ai_turn_source or "last"
    if source == "named_steps":
        named = set(loop.named_steps or ()) - named_users
        if any(s.name in named for s in steps):
            return None
        return "no step named in named_steps is in its body"
    if source == "all_agents":
        if any(speaks(s, agents) and s.name not in named_users for s in steps):
            return None
        return "no step in its body is an agent or a sub-workflow"
    last = last_step(loop)
    if last is not None and speaks(last, agents):
        return None
    if last is None:
        return "with ai_turn_source: last, every step of its body makes user turns"
    return (
        f"with ai_turn_source: last, its last step {last.name!r} is not an agent or a sub-workflow "
        "(a builtin, a step without an agent or a composite step makes no turn)"
    )


def own_steps(body: Sequence[AnyStepModel]) -> list[AnyStepModel]:
    """The steps of a conversational loop's body that speak in its conversation, depth first: a nested
    ``conversation: true`` loop owns its body (as ``core.conversation`` decides)."""
    found: list[AnyStepModel] = []
    for step in body:
        found.append(step)
        if isinstance(step, LoopStepModel):
            if not step.loop.conversation:
                found += own_steps(step.loop.body)
        elif isinstance(step, MapStepModel):
            found += own_steps(step.map.body)
        elif isinstance(step, ParallelStepModel):
            for branch in step.settings.branches.values():
                found += own_steps(branch)
        elif isinstance(step, ConditionalStepModel):
            for branch in step.branches.values():
                found += own_steps(branch)
            if step.default_branch is not None:
                found += own_steps(step.default_branch)
    return found


def last_speaker(loop: LoopSettingsModel, agents: Mapping[str, AgentModel]) -> AnyStepModel | None:
    """The step whose reply is the last assistant turn of an iteration of ``loop``: its ``ai_turn_source``
    speaker (``last``: the last step, when it speaks; ``all_agents``: the last agent step; ``named_steps``: the
    last named step, in body order). None when no step speaks."""
    _, named_users = user_sources(loop)
    source = loop.ai_turn_source or "last"
    if source == "last":
        last = last_step(loop)
        return last if last is not None and speaks(last, agents) else None
    steps = own_steps(loop.body)
    if source == "all_agents":
        speaking = [s for s in steps if speaks(s, agents) and s.name not in named_users]
    else:
        named = set(loop.named_steps or ()) - named_users
        speaking = [s for s in steps if s.name in named]
    return speaking[-1] if speaking else None


@dataclass(frozen=True)
class SpeakerSummarizer:
    """Who would summarize a ``summarize`` loop that has no summarizer of its own and no configured default:
    the agent of its last speaker (``agent``, a name under ``agents:``), or why none can (``reason``).
    ``needed`` is False when no step of the loop is sent its history: then nothing is ever summarized."""

    agent: str | None
    reason: str
    needed: bool = True


def hears_history(step: AnyStepModel) -> bool:
    """Whether ``step`` is an agent call sent the conversation's history (``use_history`` not false): an
    agent under ``agents:`` or a ``python:`` script; not a builtin, a step without an agent or a sub-workflow
    (which never sees its parent's conversation)."""
    if not isinstance(step, AgentStepModel) or step.use_history is False:
        return False
    return isinstance(step.agent, str) or (step.uses is not None and step.uses.startswith("agents."))


def speaker_summarizer(loop: LoopSettingsModel, agents: Mapping[str, AgentModel]) -> SpeakerSummarizer:
    """The loop's last speaking agent, if it can summarize: a model agent (not ``model: scripted``, whose
    replies are written for the conversation, nor a ``python:``/``command:`` script or a sub-workflow)."""
    if not any(hears_history(step) for step in own_steps(loop.body)):
        return SpeakerSummarizer(None, "no step of the loop is sent its history", needed=False)
    step = last_speaker(loop, agents)
    if step is None:
        return SpeakerSummarizer(None, "no step of the loop speaks")
    if not isinstance(step, AgentStepModel) or step.uses is None or not step.uses.startswith("agents."):
        what = "a sub-workflow" if isinstance(step, AgentStepModel) and step.uses else "a script agent"
        return SpeakerSummarizer(None, f"its last speaker {step.name!r} is {what}, which cannot summarize")
    name = step.uses.removeprefix("agents.")
    agent = agents.get(name)
    if agent is None:
        return SpeakerSummarizer(None, f"its last speaker {step.name!r} calls an undefined agent")
    if agent.python is not None or agent.command is not None:
        return SpeakerSummarizer(None, f"its last speaking agent {name!r} is a script agent, which cannot summarize")
    if agent.model is None or agent.model == "scripted":
        return SpeakerSummarizer(
            None, f"its last speaking agent {name!r} (model: scripted) replies as written and cannot summarize"
        )
    return SpeakerSummarizer(name, f"its last speaking agent {name!r} summarizes")
