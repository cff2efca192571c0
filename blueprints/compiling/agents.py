"""Building the agents a blueprint uses: AgentSpecs from the YAML, then ``build_agent`` once per agent.

An agent defined under ``agents:`` is built once and shared by every step that uses it (a step that
overrides ``output_schema`` gets its own); so is the default summarizer the settings name
(``history.summarizer_model``). A ConfigError from ``build_agent`` (a missing API key, an unknown
provider) is re-raised as a ConfigError whose message starts with the agent's file:line:col.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path as PathLib
from typing import TYPE_CHECKING, Any

from blueprints.checking.callables import load_callable
from blueprints.checking.loader import Blueprint
from blueprints.reading.positions import Path
from blueprints.schema import AgentModel, AgentRefModel, AgentStepModel
from core import Agent, ConfigError, Settings, SourcePosition, find_provider
from core.agents import AgentSpec

if TYPE_CHECKING:  # the simulated person's module: imported by the runs that have one
    from core import SimulatedPerson

AgentFactory = Callable[[AgentSpec, Settings], Agent]


def agent_spec(name: str, agent: AgentModel) -> AgentSpec:
    """The AgentSpec of an ``agents:`` entry."""
    return AgentSpec(
        name=name,
        model=agent.model,
        system_prompt=agent.system_prompt,
        examples=tuple((example.user, example.assistant) for example in agent.examples or ()),
        output_schema=agent.output_schema,
        model_settings=dict(agent.model_settings),
        timeout=agent.timeout,
        max_retries=agent.max_retries,
        replies=tuple(agent.replies or ()),
        python=agent.python,
        command=tuple(agent.command or ()),
        context_window=agent.context_window,
        base_url=agent.base_url,
    )


def relative_to(spec: AgentSpec, folder: PathLib) -> AgentSpec:
    """``spec`` with a relative ``model: local:FILE`` made relative to ``folder`` (the blueprint's)."""
    provider, colon, file = (spec.model or "").partition(":")
    row = find_provider(provider)
    if row is None or row.api != "local" or not colon or not file or PathLib(file).expanduser().is_absolute():
        return spec
    return dataclasses.replace(spec, model=f"local:{folder / file}")


class AgentBuilder:
    """Builds (and caches) the agents of one blueprint."""

    def __init__(self, blueprint: Blueprint, settings: Settings, factory: AgentFactory) -> None:
        self.blueprint = blueprint
        self.settings = settings
        self.factory = factory
        self._named: dict[str, Agent] = {}
        self._default_summarizer: Agent | None = None
        self._summarizers: dict[str, Agent] = {}  # speaking agents made summarizers (``speaker_summarizer``)

    def build(self, spec: AgentSpec, position: SourcePosition) -> Agent:
        """The agent ``spec`` describes (built now, not shared); a ConfigError names ``position``."""
        return self._build(spec, position)

    def _build(self, spec: AgentSpec, position: SourcePosition) -> Agent:
        try:
            return self.factory(spec, self.settings)
        except ConfigError as exc:
            raise ConfigError(f"{position}: {exc.message}", hint=exc.hint) from exc

    def _import(self, spec: str, path: Path) -> None:
        load_callable(spec, position=self.blueprint.position(path), search=self.blueprint.path.parent)

    def named(self, name: str, *, output_schema: dict[str, Any] | None = None) -> Agent:
        """The agent ``agents.<name>`` (with its output_schema replaced when one is given)."""
        if output_schema is None and name in self._named:
            return self._named[name]
        model = self.blueprint.model.agents[name]
        path = ("agents", name)
        if model.python is not None:
            self._import(model.python, (*path, "python"))
        spec = relative_to(agent_spec(name, model), self.blueprint.path.parent)
        if output_schema is not None:
            spec = dataclasses.replace(spec, output_schema=output_schema)
        agent = self._build(spec, self.blueprint.key_position(path))
        if output_schema is None:
            self._named[name] = agent
        return agent

    def person(self, ref: str) -> SimulatedPerson:
        """The simulated person ``agents.<name>`` (``answered_by``, ``--simulate-user``); its agent is the
        one steps using ``agents.<name>`` share."""
        from core import SimulatedPerson

        return SimulatedPerson(self.named(ref.partition(".")[2]), ref)

    def default_summarizer(self, position: SourcePosition) -> Agent:
        """The summarizer the settings name (``history.summarizer_model``, ``history.summarizer_prompt``), for
        a ``summarize`` loop without ``summarizer_agent``; built once. ``position`` is the first such loop's,
        for the message of a ConfigError (a missing API key)."""
        if self._default_summarizer is None:
            history = self.settings.history
            assert history.summarizer_model is not None, "the compiler asks only when one is configured"
            spec = AgentSpec(
                name="default_summarizer",
                model=history.summarizer_model,
                system_prompt=history.summarizer_prompt,
                model_setting="history.summarizer_model",
            )
            try:
                self._default_summarizer = self.factory(spec, self.settings)
            except ConfigError as exc:
                raise ConfigError(
                    f"{position}: the default summarizer (setting history.summarizer_model): {exc.message}",
                    hint=exc.hint,
                ) from exc
        return self._default_summarizer

    def speaker_summarizer(self, name: str) -> Agent:
        """``agents.<name>`` made a summarizer (a ``summarize`` loop's last speaking agent, when the loop names no
        summarizer and none is configured): the same model and settings, without its system prompt, examples
        and output_schema (it is sent the built-in summary request, with ``history.summarizer_prompt`` as its
        system prompt when one is set); built once per agent."""
        built = self._summarizers.get(name)
        if built is None:
            model = self.blueprint.model.agents[name]
            spec = dataclasses.replace(
                relative_to(agent_spec(name, model), self.blueprint.path.parent),
                system_prompt=self.settings.history.summarizer_prompt,
                examples=(),
                output_schema=None,
            )
            built = self._summarizers[name] = self._build(spec, self.blueprint.key_position(("agents", name)))
        return built

    def for_step(self, step: AgentStepModel, path: Path) -> Agent | None:
        """The agent a ``kind: step`` calls; None for a passthrough step (no uses, no agent)."""
        if step.uses is not None:
            section, _, name = step.uses.partition(".")
            assert section == "agents", "imports are handled by the compiler"
            return self.named(name, output_schema=step.output_schema)
        if isinstance(step.agent, str):
            self._import(step.agent, (*path, "agent"))
            spec = AgentSpec(name=step.name, python=step.agent, output_schema=step.output_schema)
            return self._build(spec, self.blueprint.position((*path, "agent")))
        if isinstance(step.agent, AgentRefModel):
            spec = AgentSpec(name=step.name, builtin=step.agent.id, output_schema=step.output_schema)
            return self._build(spec, self.blueprint.position((*path, "agent")))
        return None
