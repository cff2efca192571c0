"""Checks that run after the structure validates: names, references, templates, exclusive keys.

Each check adds findings to a ``Checker``; none raises for an author's mistake.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path as FilePath
from typing import assert_never

from blueprints.checking.checks.agents import check_agent_definition, check_agent_step
from blueprints.checking.checks.checker import AGENT_TOOL_KEYS, Checker
from blueprints.checking.checks.context_keys import blueprint_writes
from blueprints.checking.checks.control import check_conditional, check_hitl, check_loop, check_map
from blueprints.checking.checks.conversation import (
    check_conversation_inputs,
    check_conversation_speakers,
    check_history_reaches_scripts,
    check_use_history_placement,
)
from blueprints.checking.checks.loop_output import check_empty_outputs
from blueprints.checking.checks.names import check_unique_names
from blueprints.checking.checks.parallel import check_parallel
from blueprints.checking.checks.schemas import check_schemas
from blueprints.checking.checks.sites import walk
from blueprints.checking.checks.turn_text import check_turn_text
from blueprints.checking.checks.workflows import check_workflow_step
from blueprints.checking.checks.write_targets import check_sinks
from blueprints.reading.findings import Finding
from blueprints.reading.positions import PositionIndex
from blueprints.schema import (
    AgentModel,
    AgentStepModel,
    BlueprintModel,
    ConditionalStepModel,
    EnsembleStepModel,
    HitlStepModel,
    LoopStepModel,
    MapStepModel,
    ParallelStepModel,
)
from core import BoundsSettings, HistorySettings


def run_checks(
    model: BlueprintModel,
    index: PositionIndex,
    folder: FilePath,
    *,
    history: HistorySettings | None = None,
    profiles: Collection[str] | None = None,
    bounds: BoundsSettings | None = None,
) -> list[Finding]:
    """All semantic findings for a blueprint whose structure is valid, checked against the settings'
    ``history`` defaults and ``bounds`` (the built-in ones when None)."""
    checker = Checker(model, index, folder, history=history, profiles=profiles, bounds=bounds)
    sites = list(walk(model.steps, ("steps",)))
    step_names = [site.step.name for site in sites]
    checker.writes = blueprint_writes(checker, sites)
    check_unique_names(checker, sites)
    check_sinks(checker, sites)
    # The tools' checks, imported for a blueprint that names tools only: for one that defines none and whose
    # agents list and set none, they find nothing.
    names_tools = bool(model.tools) or any(map(_names_tools, model.agents.values()))
    if names_tools:
        from blueprints.checking.checks.tools import check_agent_tools, check_tool_definition, check_tools_reach

        for name, tool in model.tools.items():
            check_tool_definition(checker, name, tool)
    for name, agent in model.agents.items():
        check_agent_definition(checker, name, agent)
        if names_tools:
            check_agent_tools(checker, name, agent)
    for site in sites:
        step = site.step
        if isinstance(step, AgentStepModel):
            check_agent_step(checker, site, step_names)
            check_workflow_step(checker, site)
        elif isinstance(step, HitlStepModel):
            check_hitl(checker, site, step_names)
        elif isinstance(step, LoopStepModel):
            check_loop(checker, site, step_names)
        elif isinstance(step, ConditionalStepModel):
            check_conditional(checker, site, step_names)
        elif isinstance(step, MapStepModel):
            check_map(checker, site, step_names)
        elif isinstance(step, EnsembleStepModel):
            from blueprints.checking.checks.ensemble import check_ensemble  # the blueprints with an ensemble only

            check_ensemble(checker, site)
        elif isinstance(step, ParallelStepModel):
            check_parallel(checker, site)
        else:
            assert_never(step)
    check_conversation_inputs(checker, sites)
    check_conversation_speakers(checker, sites)
    check_history_reaches_scripts(checker, sites)
    check_schemas(checker, sites)
    check_use_history_placement(checker, sites)
    check_empty_outputs(checker, sites)
    check_turn_text(checker, sites, step_names)
    if names_tools:
        check_tools_reach(checker, sites)
    return checker.findings


def _names_tools(agent: AgentModel) -> bool:
    """Whether ``agent`` lists tools or sets a key about them."""
    return agent.tools is not None or not agent.fields_given.isdisjoint(AGENT_TOOL_KEYS)
