"""Who speaks in a ``conversation: true`` loop, read from the blueprint (docs/conversation.md, "Who speaks").

The same rules as the engine's (``core.conversation.turns.start``), for ``validate`` and ``explain``: an agent's
reply is an assistant turn whatever the agent is (a model, a ``python:`` or ``command:`` script), and so is
a sub-workflow's result; the builtins (``passthrough``, ``stringify``) and a step without an agent only move
their input along, and a composite step's result is its steps' outputs, so they make no turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from blueprints.schema import AgentModel, AgentStepModel, AnyStepModel, HitlStepModel, LoopSettingsModel


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
