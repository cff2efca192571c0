"""The opening of an explanation: one sentence for the top-level steps, and the agents with their users."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from blueprints.checking.checks.sites import walk
from blueprints.checking.loader import Blueprint
from blueprints.checking.speakers import asks_user
from blueprints.explain.loops import max_loops
from blueprints.explain.words import sentence
from blueprints.schema import (
    AgentModel,
    AgentStepModel,
    AnyStepModel,
    ConditionalStepModel,
    EnsembleStepModel,
    HitlStepModel,
    LoopStepModel,
    MapStepModel,
    ParallelStepModel,
)
from core import provider_of


def model_words(model: str) -> str:
    """A model id, with the plain words of a provider that needs them (``local``: where the model runs)."""
    provider = provider_of(model)
    if provider is None or provider.priced:
        return model
    _, colon, file = model.partition(":")
    return f"{model} ({file if colon else provider.default_model} on this machine, no key)"


def agent_words(agent: AgentModel) -> tuple[str, bool]:
    """What an agent is, and whether it runs without a model provider."""
    if agent.model == "scripted":
        return "a scripted agent, offline", True
    if agent.model == "echo":
        return "an echo agent, offline: replies with what it is sent", True
    if agent.model is not None:
        return model_words(agent.model), False
    if agent.python is not None:
        return f"the Python function {agent.python}", True
    return f"the command {' '.join(agent.command or [])}", True


def _phrase(model: AnyStepModel) -> tuple[str, str, str]:
    """How the overview names a top-level step: a key (consecutive steps with one key are said
    together), the words for one step, and the words for several (``{n}`` is their number)."""
    if isinstance(model, HitlStepModel) or asks_user(model):
        return "ask", "asks you a question", "asks you {n} questions"
    if isinstance(model, AgentStepModel):
        if model.uses is not None and model.uses.startswith("imports."):
            return "import", "runs a sub-workflow", "runs {n} sub-workflows"
        if model.uses is not None or isinstance(model.agent, str):
            agent = model.uses.removeprefix("agents.") if model.uses is not None else str(model.agent)
            return f"call {agent}", f"calls {agent}", f"calls {agent} {{n}} times"
        return "value", "prepares a value", "prepares {n} values"
    if isinstance(model, LoopStepModel):
        limit = max_loops(model.loop)
        what = "a conversation" if model.loop.conversation else "a loop"
        return f"loop {model.name}", f"runs {what} of up to {limit} iteration{'s' if limit > 1 else ''}", ""
    if isinstance(model, ParallelStepModel):
        return "parallel", f"runs {len(model.settings.branches)} branches at once", "runs {n} sets of branches at once"
    if isinstance(model, ConditionalStepModel):
        return "conditional", "picks a branch", "picks {n} branches in turn"
    if isinstance(model, MapStepModel):
        return f"map {model.name}", "repeats its steps for each item of a list", ""
    if isinstance(model, EnsembleStepModel):
        who = len(model.ensemble.participants)
        return f"ensemble {model.name}", f"runs a conversation among {who} participants", ""
    assert_never(model)


def overview(steps: Sequence[AnyStepModel]) -> str:
    groups: list[tuple[str, str, str, list[str]]] = []
    for step in steps:
        key, one, several = _phrase(step)
        if groups and groups[-1][0] == key and several:
            groups[-1][3].append(step.name)
        else:
            groups.append((key, one, several, [step.name]))
    said = [
        f"{one if len(names) == 1 else several.format(n=len(names))} ({', '.join(names)})"
        for _, one, several, names in groups
    ]
    return sentence("first " + ", then ".join(said) if len(said) > 1 else said[0])


def used_by(blueprint: Blueprint) -> dict[str, list[str]]:
    used: dict[str, list[str]] = {name: [] for name in blueprint.model.agents}
    for site in walk(blueprint.model.steps, ("steps",)):
        step = site.step
        if isinstance(step, AgentStepModel) and step.uses is not None and step.uses.startswith("agents."):
            used.setdefault(step.uses.removeprefix("agents."), []).append(step.name)
        if isinstance(step, HitlStepModel) and step.answered_by is not None:
            used.setdefault(step.answered_by.removeprefix("agents."), []).append(f"{step.name} (to answer it)")
        if isinstance(step, EnsembleStepModel):
            for participant in step.ensemble.participants:
                if participant.answered_by is not None:
                    used.setdefault(participant.answered_by.removeprefix("agents."), []).append(
                        f"{step.name} › {participant.name} (to answer it)"
                    )
                elif participant.uses is not None and participant.uses.startswith("agents."):
                    used.setdefault(participant.uses.removeprefix("agents."), []).append(
                        f"{step.name} › {participant.name}"
                    )
        if isinstance(step, LoopStepModel) and step.loop.history_management is not None:
            summarizer = step.loop.history_management.summarizer_agent
            if summarizer is not None:
                used.setdefault(summarizer, []).append(f"{step.name} (to summarize the history)")
    return used
