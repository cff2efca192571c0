"""Checks of the JSON Schemas a blueprint declares (``output_schema`` of agents and steps, ``input_schema``
of human steps): each must be a valid schema of its draft, as a run would need it to be.

A malformed schema is reported at the part of it that is wrong (``type: 12`` at the ``12``), with
jsonschema's own words. jsonschema is imported only when the blueprint declares a schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.reading.positions import Path
from blueprints.schema import AgentStepModel, HitlStepModel


def check_schemas(checker: Checker, sites: Iterable[StepSite]) -> None:
    """Every declared schema is a valid JSON Schema."""
    for name, agent in checker.model.agents.items():
        if agent.output_schema is not None:
            check_schema(checker, ("agents", name, "output_schema"), agent.output_schema)
    for site in sites:
        step = site.step
        if isinstance(step, AgentStepModel) and step.output_schema is not None:
            check_schema(checker, (*site.path, "output_schema"), step.output_schema)
        elif isinstance(step, HitlStepModel) and step.input_schema is not None:
            check_schema(checker, (*site.path, "input_schema"), step.input_schema)


def check_schema(checker: Checker, path: Path, schema: dict[str, Any]) -> None:
    import jsonschema  # lazy: ~60 ms of imports, only for blueprints that declare schemas

    validator = jsonschema.validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        inside = tuple(part for part in exc.absolute_path if isinstance(part, str | int))
        where = "/".join(str(part) for part in inside)
        checker.error(
            "bad-value",
            f"{path[-1]} is not a valid JSON Schema: {exc.message}" + (f" (at {where})" if where else ""),
            checker.at((*path, *inside)),
            "a JSON Schema is a mapping such as {type: object, properties: {answer: {type: string}}}",
        )
