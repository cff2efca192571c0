"""Compiling a ``kind: ensemble`` step into a ``core.EnsembleStep``.

A participant becomes an agent (``uses: agents.X``, ``script: PATH``, ``model_profile: NAME``), a
sub-workflow (``uses: imports.X``) or the person (``ask``). ``answered_by: agents.X`` makes it the person,
played by that simulated person, whatever else it sets (the ensemble file format's way of replacing a
participant with a response generator). ``prompt`` is a model participant's system
prompt; ``config`` is given to scripts in their JSON and, for models, its model settings (``temperature``,
``max_tokens`` ...) apply. ``script:`` paths are relative to the blueprint's folder; a ``.py`` script runs
with the current Python interpreter, anything else is executed.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from blueprints.compiling.agents import agent_spec
from blueprints.compiling.base import CompilerBase
from blueprints.compiling.loops import output_hook
from blueprints.reading.positions import Path
from blueprints.schema import EnsembleStepModel, ParticipantModel
from core import Agent, BlueprintError, Dependency, EnsembleStep, HistoryPolicy, Participant, WorkflowStep
from core.agents import AgentSpec

MODEL_SETTING_KEYS = ("temperature", "max_tokens", "top_p", "seed", "stop", "presence_penalty", "frequency_penalty")
"""The ``config`` keys of a model participant that are its model settings."""


def script_argv(script: str, folder: Any) -> tuple[str, ...]:
    """How a ``script:`` participant runs: ``.py`` with this Python, anything else executed."""
    path = (folder / script).resolve()
    return (sys.executable, str(path)) if path.suffix == ".py" else (str(path),)


def compile_ensemble(c: CompilerBase, model: EnsembleStepModel, path: Path) -> EnsembleStep:
    block = model.ensemble
    here = (*path, "ensemble")
    participants = tuple(
        _participant(c, participant, (*here, "participants", number))
        for number, participant in enumerate(block.participants)
    )
    return EnsembleStep(
        name=model.name,
        participants=participants,
        max_total_turns=block.max_total_turns,
        max_agent_executions=dict(block.max_agent_executions),
        timeout_seconds=block.timeout_seconds,
        history=_history(c, model),
        output=output_hook(c, block.output, here),
        position=c.position(path),
    )


def _history(c: CompilerBase, model: EnsembleStepModel) -> HistoryPolicy:
    manage = model.ensemble.history_management
    defaults = c.agents.settings.history
    given = manage.fields_given if manage is not None else set()
    return HistoryPolicy(
        strategy=manage.strategy if manage is not None and "strategy" in given else defaults.strategy,
        max_tokens=manage.max_tokens if manage is not None and manage.max_tokens is not None else defaults.max_tokens,
        max_turns=manage.max_turns if manage is not None and manage.max_turns is not None else defaults.max_turns,
    )


def _participant(c: CompilerBase, model: ParticipantModel, path: Path) -> Participant:
    common: dict[str, Any] = {
        "name": model.name,
        "config": dict(model.config),
        "max_turns": model.max_turns,
        "depends_on": tuple(
            Dependency(
                on=dep.participant,
                condition=(
                    c.expression(dep.condition, (*path, "depends_on", number, "condition"))
                    if dep.condition is not None
                    else None
                ),
                max_executions=dep.max_executions,
            )
            for number, dep in enumerate(model.dependencies())
        ),
        "requires_all": model.requires_all,
        "state_key": model.state_key,
        "opens": bool(model.triggers_conversation),
        "position": c.position(path),
    }
    if model.answered_by is not None or model.ask is not None:  # answered_by replaces any other kind
        ask = c.template(model.ask, (*path, "ask")) if model.ask is not None else None
        person = c.agents.person(model.answered_by) if model.answered_by is not None else None
        return Participant(ask=ask, answered_by=person, input_schema=model.input_schema, **common)
    if model.uses is not None and model.uses.startswith("imports."):
        workflow = WorkflowStep(
            name=model.name, pipeline=c.imported(model.uses.removeprefix("imports.")), position=c.position(path)
        )
        return Participant(workflow=workflow, **common)
    return Participant(agent=_agent(c, model, path), **common)


def _agent(c: CompilerBase, model: ParticipantModel, path: Path) -> Agent:
    settings = {k: v for k, v in model.config.items() if k in MODEL_SETTING_KEYS}
    spec: AgentSpec
    if model.uses is not None:
        name = model.uses.removeprefix("agents.")
        if model.prompt is None and not settings:
            return c.agents.named(name)
        spec = agent_spec(name, c.blueprint.model.agents[name])
    elif model.script is not None:
        return c.agents.build(
            AgentSpec(name=model.name, command=script_argv(model.script, c.blueprint.path.parent)),
            c.position((*path, "script")),
        )
    elif model.model_profile is not None:
        profile = c.agents.settings.profiles.get(model.model_profile)
        if profile is None:  # validation reports this with the known profiles; kept for models built in code
            raise BlueprintError(
                f"unknown model_profile {model.model_profile!r}", position=c.position((*path, "model_profile"))
            )
        spec = AgentSpec(
            name=model.name,
            model=profile.model,
            system_prompt=profile.system_prompt,
            model_settings=dict(profile.model_settings),
            timeout=profile.timeout,
            model_setting=f"profiles.{model.model_profile}.model",
        )
    else:  # validation reports this; kept for models built in code
        raise BlueprintError(
            f"participant {model.name!r} needs one of uses, script, model_profile or ask", position=c.position(path)
        )
    if spec.model is not None:
        spec = dataclasses.replace(
            spec,
            system_prompt=model.prompt if model.prompt is not None else spec.system_prompt,
            model_settings={**spec.model_settings, **settings},
        )
    return c.agents.build(spec, c.position(path))
