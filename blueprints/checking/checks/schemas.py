"""Checks of the JSON Schemas a blueprint declares (``output_schema`` of agents and steps, ``input_schema``
of human steps): each must be a valid schema of its draft, as a run would need it to be.

A malformed schema is reported at the part of it that is wrong (``type: 12`` at the ``12``), with
jsonschema's own words. Each ``$ref`` must resolve inside the schema (the run fetches nothing), and no
chain of ``$ref``s may lead back to where it started (checking any value would recurse without end); both
are reported at the ``$ref``. jsonschema is imported only when the blueprint declares a schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.reading.positions import Path
from blueprints.schema import AgentStepModel, HitlStepModel

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from referencing import Resource
    from referencing._core import Resolver  # referencing does not export it

_REF_HINT = "a $ref points inside its schema, e.g. $ref: '#/$defs/name'; a remote reference is never fetched"


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
        return
    _check_references(checker, path, schema, validator)


def _check_references(checker: Checker, path: Path, schema: dict[str, Any], validator: type[Validator]) -> None:
    """Each ``$ref`` resolves inside ``schema``, and none leads back to itself through ``$ref``s alone."""
    import jsonschema
    from referencing import Registry, Specification
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import specification_with

    places: dict[int, tuple[str | int, ...]] = {}  # each mapping of the schema, by id: where it is

    def place(node: object, inside: tuple[str | int, ...]) -> None:
        if isinstance(node, dict):
            places.setdefault(id(node), inside)
            for key, value in node.items():
                place(value, (*inside, key))
        elif isinstance(node, list):
            for number, value in enumerate(node):
                place(value, (*inside, number))

    place(schema, ())
    in_cycles: set[int] = set()

    def report(node: dict[str, Any], message: str) -> None:
        inside = (*places.get(id(node), ()), "$ref")
        where = "/".join(str(part) for part in inside)
        checker.error("bad-value", f"{path[-1]}: {message} (at {where})", checker.at((*path, *inside)), _REF_HINT)

    def follow(start: dict[str, Any], resolver: Resolver[Any]) -> None:
        chain, node = [start], start
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            try:
                resolved = resolver.lookup(node["$ref"])
            except Unresolvable:
                if node is start:
                    report(start, f"$ref {start['$ref']!r} does not resolve inside the schema")
                return  # further along, it is reported at its own place
            node, resolver = resolved.contents, resolved.resolver
            if node is start:
                in_cycles.update(id(each) for each in chain)
                report(start, f"$ref {start['$ref']!r} leads back to itself through $refs alone")
                return
            if any(node is each for each in chain):
                return  # a cycle further along: reported at its own places
            chain.append(node)

    def walk(resource: Resource[Any], resolver: Resolver[Any]) -> None:
        resolver = resolver.in_subresource(resource)
        contents = resource.contents
        if isinstance(contents, dict) and id(contents) not in in_cycles:
            follow(contents, resolver)
        for sub in resource.subresources():
            walk(sub, resolver)

    meta = validator.META_SCHEMA  # its $id (draft 4: id) names the draft, as jsonschema reads it
    draft = specification_with(str(meta.get("$id", meta.get("id", ""))), default=Specification.OPAQUE)
    root = draft.create_resource(schema)
    # The drafts' own meta-schemas resolve without a fetch at run time (jsonschema ships them), so here too.
    drafts: list[type[Validator]] = [jsonschema.Draft4Validator, jsonschema.Draft6Validator]
    drafts += [jsonschema.Draft7Validator, jsonschema.Draft201909Validator, jsonschema.Draft202012Validator]
    metas = [(str(each.META_SCHEMA.get("$id", each.META_SCHEMA.get("id"))), each.META_SCHEMA) for each in drafts]
    walk(root, Registry().with_contents(metas).resolver_with_root(root))
