"""The simulated person a run is told to use (``flujo run FILE --simulate-user agents.NAME``): an agent of
the blueprint that answers every question a person is asked (``core.answering.simulated_person``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from blueprints.checking.loader import Blueprint
from blueprints.compiling.agents import AgentBuilder, AgentFactory
from blueprints.reading.suggestions import did_you_mean
from core import RunError, Settings

if TYPE_CHECKING:
    from core import SimulatedPerson


def simulated_user(
    blueprint: Blueprint, settings: Settings, ref: str, *, agent_factory: AgentFactory | None = None
) -> SimulatedPerson:
    """The simulated person ``ref`` (``agents.NAME``) of ``blueprint``, built with its own agent (a
    scripted persona's replies are not shared with steps using the same agent). RunError when ``ref`` is
    not ``agents.NAME`` of an agent the blueprint defines; ConfigError when the agent cannot be built."""
    from blueprints.compiling.compiler import default_agent_factory

    section, _, name = ref.partition(".")
    defined = list(blueprint.model.agents)
    if section != "agents" or not name:
        raise RunError(f"--simulate-user takes agents.NAME, got {ref!r}", hint=_defined(defined))
    if name not in defined:
        raise RunError(
            f"--simulate-user: agent {name!r} is not defined in {blueprint.path}{did_you_mean(name, defined)}",
            hint=_defined(defined),
        )
    builder = AgentBuilder(blueprint, settings, agent_factory or default_agent_factory())
    return builder.person(ref)


def _defined(names: list[str]) -> str:
    if not names:
        return "define the persona under agents: (its system_prompt is the persona)"
    return f"agents defined: {', '.join(names)}"
