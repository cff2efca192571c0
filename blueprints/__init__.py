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
from typing import TYPE_CHECKING

from blueprints.checking.loader import Blueprint, InvalidBlueprint, load_blueprint, validate_file
from blueprints.checking.model_overrides import ModelOverrideError, ModelOverrides
from blueprints.checking.validated import ValidatedFiles
from blueprints.compiling.agents import AgentFactory
from blueprints.compiling.compiler import compile_pipeline
from blueprints.reading.findings import Finding, findings_to_json
from blueprints.reading.yaml_source import ParsedYaml, parse_yaml
from core import Pipeline, Settings
from core.front_door import lazy_exports

if TYPE_CHECKING:
    from blueprints.cases.case_file import CASE_SUFFIX, Case, case_text, read_case
    from blueprints.cases.expectations import ExpectationResult, Expectations, RunFacts, check_expectations
    from blueprints.compiling.persona import simulated_user
    from blueprints.explain import Explanation, explain_blueprint
    from blueprints.scaffold import ScaffoldError, WizardAnswers, render_blueprint
    from blueprints.scaffold import resolve as resolve_answers
    from blueprints.schema.json_schema import SCHEMA_KINDS, file_schema

if TYPE_CHECKING:  # what flujo_cli takes from blueprints (the block of _LAZY below)
    from blueprints.explain import Note, StepExplanation, StepGroup
    from blueprints.scaffold import Question as WizardQuestion
    from blueprints.scaffold import parse_answer as parse_wizard_answer

# Imported when first used: ``flujo run`` needs neither the explainer nor the wizard (their modules are a
# few hundredths of a second of every run's start-up).
_LAZY = {
    # Case files (flujo lens export --case, flujo test): a recorded run kept as a test.
    "CASE_SUFFIX": "blueprints.cases.case_file",
    "Case": "blueprints.cases.case_file",
    "case_text": "blueprints.cases.case_file",
    "read_case": "blueprints.cases.case_file",
    "ExpectationResult": "blueprints.cases.expectations",
    "Expectations": "blueprints.cases.expectations",
    "RunFacts": "blueprints.cases.expectations",
    "check_expectations": "blueprints.cases.expectations",
    "Explanation": "blueprints.explain",
    "explain_blueprint": "blueprints.explain",
    "ScaffoldError": "blueprints.scaffold",
    "WizardAnswers": "blueprints.scaffold",
    "render_blueprint": "blueprints.scaffold",
    "resolve_answers": "blueprints.scaffold:resolve",
    # What flujo_cli takes besides (it imports blueprints only through this front door): the parts of an
    # explanation it draws (``flujo explain``) and the wizard's questions it asks (``flujo create``).
    "Note": "blueprints.explain",
    "StepExplanation": "blueprints.explain",
    "StepGroup": "blueprints.explain",
    "WizardQuestion": "blueprints.scaffold:Question",
    "parse_wizard_answer": "blueprints.scaffold:parse_answer",
    # ``flujo schema``: the JSON Schema of each file format, for editors.
    "SCHEMA_KINDS": "blueprints.schema.json_schema",
    "file_schema": "blueprints.schema.json_schema",
    # ``--simulate-user``: the simulated person of a run.
    "simulated_user": "blueprints.compiling.persona",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


def load_pipeline(
    path: str | Path,
    settings: Settings,
    *,
    agent_factory: AgentFactory | None = None,
    models: ModelOverrides | None = None,
) -> Pipeline:
    """Load, validate (against ``settings``) and compile the blueprint at ``path``, its agents running the
    models ``models`` gives them (InvalidBlueprint, BlueprintError, ConfigError)."""
    blueprint = load_blueprint(path, settings=settings, models=models or ModelOverrides())
    return compile_pipeline(blueprint, settings, agent_factory=agent_factory)


__all__ = [
    "CASE_SUFFIX",
    "SCHEMA_KINDS",
    "AgentFactory",
    "Blueprint",
    "Case",
    "ExpectationResult",
    "Expectations",
    "Explanation",
    "Finding",
    "InvalidBlueprint",
    "ModelOverrideError",
    "ModelOverrides",
    "ParsedYaml",
    "RunFacts",
    "ScaffoldError",
    "ValidatedFiles",
    "WizardAnswers",
    "case_text",
    "check_expectations",
    "compile_pipeline",
    "explain_blueprint",
    "file_schema",
    "findings_to_json",
    "load_blueprint",
    "load_pipeline",
    "parse_yaml",
    "read_case",
    "render_blueprint",
    "resolve_answers",
    "simulated_user",
    "validate_file",
]
__all__ += [  # flujo_cli (the block at the end of _LAZY)
    "Note",
    "StepExplanation",
    "StepGroup",
    "WizardQuestion",
    "parse_wizard_answer",
]
