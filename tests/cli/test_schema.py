"""``flujo schema [blueprint|ensemble|config]``: the JSON Schema an editor checks a file against, kept in step
with the models that validate the files: every example file and documented settings block validates
against the printed schema, every field of every model (and every key of the ensemble file format) is in it."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import tomllib
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from blueprints.reading.ensemble_file import AGENT_KEYS, CONVERSATION_KEYS, DEPENDENCY_KEYS, TOP_KEYS, is_ensemble_file
from blueprints.schema import BlueprintModel, ParticipantModel
from blueprints.schema.validating import fields_of
from core import Settings
from core.settings import validating
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo

EXAMPLES = sorted(
    path
    for path in [*(ROOT / "docs" / "examples").rglob("*.yaml"), *(ROOT / "blueprints" / "examples").glob("*.yaml")]
    if "invalid" not in path.parts and not path.name.endswith(".case.yaml")  # a case file is no blueprint
)


def printed(kind: str) -> dict[str, Any]:
    code, out, err = flujo(["schema", kind])
    assert code == exit_codes.OK, err
    schema: dict[str, Any] = json.loads(out)
    return schema


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    return {kind: printed(kind) for kind in ("blueprint", "ensemble", "config")}


def test_each_schema_is_a_json_schema_and_blueprint_is_the_default(schemas: dict[str, dict[str, Any]]) -> None:
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert printed("blueprint") == schemas["blueprint"]
    code, out, _ = flujo(["schema"])
    assert code == exit_codes.OK and json.loads(out) == schemas["blueprint"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_example_file_validates_against_its_schema(example: Path, schemas: dict[str, dict[str, Any]]) -> None:
    data = yaml.safe_load(example.read_text(encoding="utf-8"))
    kind = "ensemble" if is_ensemble_file(data) else "blueprint"
    errors = [
        f"{list(e.absolute_path)}: {e.message[:200]}"
        for e in jsonschema.Draft202012Validator(schemas[kind]).iter_errors(data)
    ]
    assert not errors, errors


def test_the_schema_refuses_what_flujo_validate_refuses_in_structure(schemas: dict[str, dict[str, Any]]) -> None:
    validator = jsonschema.Draft202012Validator(schemas["blueprint"])
    good = {"version": "0.1", "steps": [{"name": "s", "uses": "agents.a"}], "agents": {"a": {"model": "echo"}}}
    assert validator.is_valid(good)
    assert validator.is_valid({**good, "version": 0.1})  # unquoted in YAML: flujo reads it as "0.1" too
    assert not validator.is_valid({**good, "agentz": {}})  # an unknown key
    assert not validator.is_valid({**good, "steps": []})
    assert not validator.is_valid({**good, "steps": [{"kind": "loop", "name": "l", "loop": {"bdy": []}}]})
    assert not validator.is_valid({**good, "agents": {"a": {"model": "echo", "timeout": -1}}})


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and (dataclasses.is_dataclass(annotation) or issubclass(annotation, BaseModel))


def _fields(model: type[Any]) -> dict[str, Any]:
    """The annotation of each field of ``model`` (a blueprint model, a dataclass or a pydantic model)."""
    if dataclasses.is_dataclass(model):
        if model.__module__.startswith("blueprints."):
            return {name: field.annotation for name, field in fields_of(model).items()}
        namespace = {**vars(sys.modules[model.__module__]), **validating.NAMES}  # a settings dataclass
        hints = typing.get_type_hints(model, globalns=namespace)
        return {field.name: hints[field.name] for field in dataclasses.fields(model)}
    return {name: field.annotation for name, field in model.model_fields.items()}


def _models(annotation: Any) -> Iterator[type[Any]]:
    """The models an annotation names, at any depth of unions, lists, dicts and Annotated."""
    if _is_model(annotation):
        yield annotation
        return
    if typing.get_origin(annotation) is typing.Annotated:
        yield from _models(typing.get_args(annotation)[0])
        return
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for argument in typing.get_args(annotation):
            yield from _models(argument)


def _reachable(root: type[Any]) -> dict[str, type[Any]]:
    found: dict[str, type[Any]] = {}
    waiting = [root]
    while waiting:
        model = waiting.pop()
        if model.__name__ in found:
            continue
        found[model.__name__] = model
        for annotation in _fields(model).values():
            waiting.extend(_models(annotation))
    return found


@pytest.mark.parametrize(("kind", "root"), [("blueprint", BlueprintModel), ("config", Settings)])
def test_every_field_of_every_model_is_in_the_schema(
    kind: str, root: type[Any], schemas: dict[str, dict[str, Any]]
) -> None:
    schema = schemas[kind]
    models = _reachable(root)
    assert len(models) > (20 if kind == "blueprint" else 8)
    for name, model in models.items():
        written = schema if model is root else schema["$defs"][name]
        assert set(written["properties"]) == set(_fields(model)), name


def test_the_ensemble_schema_has_every_key_of_the_file_format(schemas: dict[str, dict[str, Any]]) -> None:
    schema = schemas["ensemble"]
    definitions = schema["$defs"]
    assert set(schema["properties"]) == set(TOP_KEYS)
    agent = set(definitions["EnsembleFileAgent"]["properties"])
    assert set(AGENT_KEYS) <= agent and set(_fields(ParticipantModel)) <= agent  # the dialect's keys too
    assert set(definitions["EnsembleFileDependency"]["properties"]) == set(DEPENDENCY_KEYS)
    assert set(definitions["EnsembleFileConversation"]["properties"]) == set(CONVERSATION_KEYS)


def _settings_files() -> list[tuple[str, str]]:
    """Every settings file the docs show (```toml blocks) and every flujo.toml among the examples."""
    files = [
        (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in ROOT.glob("docs/**/flujo.toml")
    ]
    for page in sorted((ROOT / "docs").glob("*.md")):
        blocks = re.findall(r"^```toml\n(.*?)^```$", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
        files += [(f"{page.name} block {number}", block) for number, block in enumerate(blocks, start=1)]
    return files


def test_every_documented_settings_file_validates_against_the_config_schema(
    schemas: dict[str, dict[str, Any]],
) -> None:
    validator = jsonschema.Draft202012Validator(schemas["config"])
    files = _settings_files()
    assert len(files) > 5
    for name, text in files:
        errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(tomllib.loads(text))]
        assert not errors, (name, errors)
    assert not validator.is_valid({"history": {"strategy": "summarise"}})
    assert not validator.is_valid({"opneai": {"base_url": "http://x"}})


def test_an_unknown_schema_is_a_usage_error() -> None:
    code, out, err = flujo(["schema", "blueprnt"])
    assert code == exit_codes.USAGE and out == ""
    assert "there is no schema 'blueprnt' — did you mean 'blueprint'?" in err
