"""The blueprint language: load a YAML blueprint with file:line:col findings, compile it into core steps.

from blueprints import validate_file, load_pipeline
for finding in validate_file("flow.yaml"):
    print(finding)
pipeline = load_pipeline("flow.yaml", settings)
print(explain_blueprint(load_blueprint("flow.yaml")).overview)   # plain words, no model (blueprints.explain)
render_blueprint(resolve_answers({"purpose": "plan a trip"}), file="trip.yaml")   # the wizard (blueprints.scaffold)
"""

from __future__ import annotations

from pathlib import Path

from blueprints.agent_builder import AgentFactory
from blueprints.compiler import compile_pipeline
from blueprints.explain import Explanation, explain_blueprint
from blueprints.findings import Finding, findings_to_json
from blueprints.loader import Blueprint, InvalidBlueprint, load_blueprint, validate_file
from blueprints.persona import simulated_user
from blueprints.scaffold import ScaffoldError, WizardAnswers, render_blueprint
from blueprints.scaffold import resolve as resolve_answers
from blueprints.yaml_source import ParsedYaml, parse_yaml
from core.config import Settings
from core.steps import Pipeline


def load_pipeline(path: str | Path, settings: Settings, *, agent_factory: AgentFactory | None = None) -> Pipeline:
    """Load, validate (against ``settings``) and compile the blueprint at ``path`` (InvalidBlueprint,
    BlueprintError, ConfigError)."""
    return compile_pipeline(load_blueprint(path, settings=settings), settings, agent_factory=agent_factory)


__all__ = [
    "AgentFactory",
    "Blueprint",
    "Explanation",
    "Finding",
    "InvalidBlueprint",
    "ParsedYaml",
    "ScaffoldError",
    "WizardAnswers",
    "compile_pipeline",
    "explain_blueprint",
    "findings_to_json",
    "load_blueprint",
    "load_pipeline",
    "parse_yaml",
    "render_blueprint",
    "resolve_answers",
    "simulated_user",
    "validate_file",
]
