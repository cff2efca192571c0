"""``flujo explain`` for ensembles: who speaks when, the limits, the worst case of rounds and model calls.

The worst case is read from the structure: a participant speaks at most ``min(max_turns,
max_agent_executions)`` times and never more than ``max_total_turns``; the conversation has at most
``max_total_turns`` rounds and never more than the participants' turns added up (every round has a
speaker). Conditions are said as written; whether they hold is known only at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from blueprints.explain.model import Note, Part
from blueprints.explain.scope import Call, Scope
from blueprints.explain.words import sentence
from blueprints.schema import EnsembleStepModel, ParticipantModel
from core import OFFLINE_MODELS, Settings


@dataclass
class EnsembleWords:
    """What explain says about one ensemble step, and what it adds to the run-wide tallies."""

    does: str
    parts: tuple[Part, ...]
    calls: list[Call] = field(default_factory=list)
    human: list[str] = field(default_factory=list)
    returns: str = ""


def _turns(participant: ParticipantModel, model: EnsembleStepModel) -> int:
    block = model.ensemble
    cap = block.max_agent_executions.get(participant.name)
    most = participant.max_turns if cap is None else min(cap, participant.max_turns)
    return min(most, block.max_total_turns)


def _when(participant: ParticipantModel) -> str:
    deps = participant.dependencies()
    if not deps:
        return "from round 1, every round"
    opens = "in round 1 (it opens the conversation), then " if participant.triggers_conversation else ""
    said = []
    for dep in deps:
        words = f"{dep.participant} has spoken"
        if dep.condition is not None:
            words += f" and {dep.condition}"
        if dep.max_executions is not None:
            words += f" (at most {dep.max_executions} time(s) on this)"
        said.append(words)
    joiner = " and " if participant.requires_all else " or "
    return opens + "every round once " + joiner.join(said)


def _what(participant: ParticipantModel, scope: Scope, settings: Settings) -> tuple[str, str | None]:
    """The participant in words, and the provider:model it calls (None for offline agents and scripts)."""
    if participant.answered_by is not None:
        asked = participant.ask.strip() if participant.ask is not None else "the newest turn"
        return f"a simulated person, {participant.answered_by} (asked: {asked})", None
    if participant.ask is not None:
        return f"you (asked: {participant.ask.strip()})", None
    if participant.script is not None:
        return f"the script {participant.script}", None
    if participant.model_profile is not None:
        profile = settings.profiles.get(participant.model_profile)
        model = profile.model if profile is not None else None
        return f"the model profile {participant.model_profile} ({model or 'not configured'})", model
    uses = participant.uses or ""
    if uses.startswith("imports."):
        return f"the sub-workflow {uses}", None
    agent = scope.blueprint.model.agents.get(uses.removeprefix("agents."))
    if agent is not None and agent.model is not None:
        metered = agent.model if agent.model not in OFFLINE_MODELS else None
        return f"the agent {uses.removeprefix('agents.')} ({agent.model})", metered
    return f"the agent {uses.removeprefix('agents.')}", None


def explain_ensemble(model: EnsembleStepModel, scope: Scope, settings: Settings, receives: str) -> EnsembleWords:
    block = model.ensemble
    turns = {p.name: _turns(p, model) for p in block.participants}
    rounds = min(block.max_total_turns, sum(turns.values()))
    does = (
        f"Runs a conversation among {len(block.participants)} participants"
        f" ({', '.join(p.name for p in block.participants)}) in rounds, opened by {receives}: in each round every"
        " participant that is ready speaks: the agents of a round at the same time, then you, if you are one."
    )
    words = EnsembleWords(does, ())
    parts: list[Part] = []
    for participant in block.participants:
        what, metered = _what(participant, scope, settings)
        most = turns[participant.name]
        parts.append(
            Note(
                participant.name,
                sentence(f"{what}; speaks {_when(participant)}, at most {most} time(s)"),
            )
        )
        label = f"{scope.prefix}{model.name} › {participant.name}"
        if participant.ask is not None or participant.answered_by is not None:
            asked = participant.ask.strip() if participant.ask is not None else "the newest turn"
            by = f" (answered by a simulated person, {participant.answered_by})" if participant.answered_by else ""
            words.human.append(f"{label}, up to {most * scope.times} time(s): {asked}{by}")
        elif participant.script is None and not (participant.uses or "").startswith("imports."):
            words.calls.append(Call(label, participant.name, metered, most * scope.times, scope.per_item, False))
    limit = f"{block.timeout_seconds:g} seconds" if block.timeout_seconds is not None else "no time limit"
    parts.append(
        Note(
            "Stops",
            sentence(
                f"when no participant is ready (completed), after {block.max_total_turns} rounds (turn_limit) or"
                f" after {limit} of running time, not counting time waiting for you (timeout);"
                f" at most {rounds} round(s)"
            ),
        )
    )
    returns = (
        "the output block's values"
        if block.output is not None
        else "a mapping {final_state, history, turn_count, completion_reason}"
    )
    parts.append(Note("Returns", sentence(returns)))
    words.parts = tuple(parts)
    words.returns = returns
    return words
