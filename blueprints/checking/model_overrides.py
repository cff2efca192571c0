"""Other models for a blueprint's agents, the YAML unchanged: ``--model agents.NAME=provider:model`` and
``--model '*=MODEL'`` of ``flujo run``, ``resume``, ``submit``, ``explain`` and ``validate``.

``ModelOverrides.parse`` reads the command line's values and checks each model id as the YAML's are checked
(``blueprints.checking.model_ids``). ``apply`` puts them into a file's data after it is read and before it is
validated (``blueprints.checking.analysis``), so the checks, the compiler and ``flujo explain`` all see the
agents as they will run. ``agents.NAME`` names an agent of the blueprint given; ``*`` is every agent that runs
a model, in it and in the blueprints it imports: one defined with ``model:``, or with none of ``model:``,
``python:`` and ``command:`` (which would run the settings' ``default_model``); agents defined by ``python:``
or ``command:`` keep theirs. Both beat ``default_model``. For one agent, ``agents.NAME`` beats ``*`` whatever
their order, and a later value beats an earlier one. An agent given a model other than ``scripted`` drops its
``replies`` (only ``scripted`` reads them).

A value that cannot apply is the command line's mistake, not the blueprint's: ``ModelOverrideError``, which
the CLI reports as a usage error (exit code 2) with a did-you-mean.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blueprints.checking.model_ids import model_id_problem
from blueprints.reading.suggestions import did_you_mean
from core import ConfigError, provider_of

EVERY_AGENT = "*"
# Compiled at the first --model given (``re``'s cache keeps them), not at every run's start.
_AGENT = r"agents\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FORM = "write --model agents.NAME=provider:model, or --model '*=provider:model' for every agent"


class ModelOverrideError(ConfigError):
    """A ``--model`` value that is malformed, names an unknown provider or model, or names an agent the
    blueprint does not have (the CLI: exit code 2)."""


@dataclass(frozen=True)
class ModelOverride:
    """One ``--model`` value: the agent (``EVERY_AGENT`` for ``*``) and the model id it runs."""

    agent: str
    model: str

    def __str__(self) -> str:
        target = EVERY_AGENT if self.agent == EVERY_AGENT else f"agents.{self.agent}"
        return f"{target}={self.model}"


@dataclass(frozen=True)
class ModelOverrides:
    """The ``--model`` values of one command, in the order given."""

    given: tuple[ModelOverride, ...] = ()

    @classmethod
    def parse(cls, values: Iterable[str], *, cwd: Path | None = None) -> ModelOverrides:
        """The overrides ``values`` say; ModelOverrideError for the first that is malformed or names an
        unknown provider or model. A ``local:FILE`` relative path is made absolute from ``cwd`` (the working
        directory), where the person typing it means it, not the blueprint's folder."""
        return cls(tuple(_parse(value, cwd or Path.cwd()) for value in values))

    def __bool__(self) -> bool:
        return bool(self.given)

    def assignments(self) -> list[str]:
        """The overrides as ``--model`` values (what a run records, to resume with the same models)."""
        return [str(override) for override in self.given]

    def model_for(self, agent: str) -> str | None:
        """The model ``agent`` runs with instead of its own, or None."""
        for wanted in (agent, EVERY_AGENT):
            found = [override.model for override in self.given if override.agent == wanted]
            if found:
                return found[-1]
        return None

    def for_imports(self) -> ModelOverrides:
        """What applies to the blueprints this one imports: ``*`` only (``agents.NAME`` is the given one's)."""
        return ModelOverrides(tuple(override for override in self.given if override.agent == EVERY_AGENT))

    def apply(self, data: Any, *, file: str) -> Any:
        """``data`` (a blueprint file as read) with its agents' models replaced; ``data`` itself is left as
        it is. ModelOverrideError when ``agents.NAME`` names an agent ``data`` does not define, or one that
        is not a model. Data whose ``agents`` is not a mapping is returned unchanged (the schema reports it)."""
        if not isinstance(data, dict):
            return data
        agents = data.get("agents")
        named = list(dict.fromkeys(o.agent for o in self.given if o.agent != EVERY_AGENT))
        if not isinstance(agents, dict):
            if named and agents is None:
                raise ModelOverrideError(
                    f"--model agents.{named[0]}: {Path(file).name} defines no agents",
                    hint="define the agent under agents:",
                )
            return data
        for name in named:
            _check_agent(name, agents, Path(file).name)
        changed = {
            name: _with_model(agent, model)
            for name, agent in agents.items()
            if isinstance(agent, dict) and (model := self._model_of(str(name), agent)) is not None
        }
        return {**data, "agents": {**agents, **changed}} if changed else data

    def _model_of(self, name: str, agent: dict[str, Any]) -> str | None:
        specific = [override.model for override in self.given if override.agent == name]
        if specific:
            return specific[-1]
        if agent.get("model") is None and any(agent.get(kind) is not None for kind in ("python", "command")):
            return None  # ``*`` changes the agents that run a model, not python: or command: ones
        return self.model_for(EVERY_AGENT)


NO_MODEL_OVERRIDES = ModelOverrides()


def _parse(value: str, cwd: Path) -> ModelOverride:
    target, equals, model = value.partition("=")
    target, model = target.strip(), model.strip()
    if not equals:
        raise ModelOverrideError(f"--model {value!r} is not AGENT=MODEL", hint=_FORM)
    if target == EVERY_AGENT:
        agent = EVERY_AGENT
    elif (found := re.fullmatch(_AGENT, target)) is not None:
        agent = found.group("name")
    elif re.fullmatch(_NAME, target):
        raise ModelOverrideError(
            f"--model {value!r}: name the agent as agents.{target}", hint=f"write --model agents.{target}={model}"
        )
    else:
        raise ModelOverrideError(f"--model {value!r}: {target!r} is not agents.NAME or '*'", hint=_FORM)
    problem = model_id_problem(model)
    if problem is not None:
        raise ModelOverrideError(f"--model {value!r}: {problem.message}", hint=problem.hint)
    provider, _, file = model.partition(":")
    row = provider_of(model)
    if row is not None and row.api == "local" and file and not Path(file).expanduser().is_absolute():
        model = f"{provider}:{cwd / file}"
    return ModelOverride(agent, model)


def _check_agent(name: str, agents: dict[Any, Any], file: str) -> None:
    defined = [str(key) for key in agents]
    if name not in agents:
        raise ModelOverrideError(
            f"--model agents.{name}: {file} defines no agent {name!r}{did_you_mean(name, defined)}",
            hint=f"agents defined: {', '.join(defined)}" if defined else "define the agent under agents:",
        )
    agent = agents[name]
    kind = next((key for key in ("python", "command") if isinstance(agent, dict) and key in agent), None)
    if kind is not None and "model" not in agent:
        models = [key for key, value in agents.items() if isinstance(value, dict) and "model" in value]
        raise ModelOverrideError(
            f"--model agents.{name}: agent {name!r} is a {kind} agent, not a model",
            hint=f"agents with a model: {', '.join(map(str, models))}" if models else "no agent here has a model",
        )


def _with_model(agent: dict[str, Any], model: str) -> dict[str, Any]:
    changed = {**agent, "model": model}
    if model != "scripted":
        changed.pop("replies", None)
    return changed
