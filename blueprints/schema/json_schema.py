"""The JSON Schema of each file flujo reads, for editors (``flujo schema blueprint|ensemble|config``).

Each is generated from the models that validate the file: a blueprint from ``BlueprintModel``, a
settings file (``flujo.toml``, the user's ``config.toml``) from ``core.Settings``. The ensemble file format
is read by translating it into a blueprint (``blueprints.reading.ensemble_file``), so it has no model of its
own to validate it; ``EnsembleFileModel`` below describes the file as written, built from the fields of the
models its keys become (``ParticipantModel``, ``DependencyModel``, ``EnsembleSettingsModel``), so a field
added to them appears in its schema too. ``tests/cli/test_schema.py`` keeps them in step: every example file
validates against its schema, and every key of the models and of the file format is in it.

Only the structure is in a schema: the rules across values (a ``uses:`` naming an agent that exists, templates,
at most one of ``model``/``python``/``command``, none only with a ``default_model`` in the settings) are
``flujo validate``'s.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from blueprints.schema.agents import AgentModel, LimitsModel
from blueprints.schema.base import StrictModel
from blueprints.schema.document import BlueprintModel
from blueprints.schema.ensemble import DependencyModel, EnsembleSettingsModel, ParticipantModel
from blueprints.schema.validating import Name, fields_of
from core import settings_json_schema

SchemaKind = Literal["blueprint", "ensemble", "config"]
SCHEMA_KINDS: tuple[SchemaKind, ...] = ("blueprint", "ensemble", "config")
DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _EditorSchema(GenerateJsonSchema):
    """pydantic's JSON Schema, with the unions it tells apart by a function (a step by its ``kind``, which
    may be left out; an ``output:`` by its shape) as ``anyOf``: pydantic writes ``oneOf``, which a value
    that fits two of the shapes (``{text: ...}`` is also a mapping) would fail in an editor."""

    def tagged_union_schema(self, schema: core_schema.TaggedUnionSchema) -> JsonSchemaValue:
        generated = super().tagged_union_schema(schema)
        if "oneOf" in generated and "discriminator" not in generated:
            generated["anyOf"] = generated.pop("oneOf")
        return generated


FieldSpec = tuple[str, Any, Any]  # a field for ``dataclasses.make_dataclass``: name, annotation, dataclasses.Field


def _fields(model: type[StrictModel], *names: str) -> list[FieldSpec]:
    """The fields ``names`` of ``model`` (all of them when none is named), for ``_model``: their annotations
    resolved (with their constraints), their defaults kept."""
    annotations = fields_of(model)
    return [
        _field(field.name, annotations[field.name].annotation, field)
        for field in dataclasses.fields(model)  # type: ignore[arg-type]
        if not names or field.name in names
    ]


def _field(name: str, annotation: Any, field: dataclasses.Field[Any]) -> FieldSpec:
    return name, annotation, dataclasses.field(default=field.default, default_factory=field.default_factory)


def _model(name: str, doc: str | None, fields: list[FieldSpec]) -> Any:
    """A model (a dataclass of ``StrictModel``, as the blueprint's) named ``name``, described by ``doc``."""
    return dataclasses.make_dataclass(
        name, fields, bases=(StrictModel,), namespace={"__doc__": doc}, frozen=True, kw_only=True
    )


# Made at import from the fields of other models, so typed Any: mypy cannot follow ``make_dataclass``.
_PARTICIPANT = {field.name: field for field in dataclasses.fields(DependencyModel)}["participant"]
EnsembleFileDependency: Any = _model(  # ``dependencies: [{agent_name: X, condition: ..., ...}]``
    "EnsembleFileDependency",
    "An agent this one waits for: ``agent_name``, and when (``condition``), how often, all or any.",
    [
        _field("agent_name", fields_of(DependencyModel)["participant"].annotation, _PARTICIPANT),
        *(spec for spec in _fields(DependencyModel) if spec[0] != "participant"),
        ("requires_all", bool | None, dataclasses.field(default=None)),
    ],
)

EnsembleFileConversation: Any = _model(  # ``conversation: {max_turns: 2, ...}``, onto the participant
    "EnsembleFileConversation",
    "How the agent takes part in the conversation.",
    _fields(ParticipantModel, "max_turns", "state_key", "triggers_conversation"),
)

_DEPENDENCIES: Any = list[Name | EnsembleFileDependency] | None
EnsembleFileAgent: Any = _model(  # one entry of ``agents:``: a participant, with the file's own keys
    "EnsembleFileAgent",
    ParticipantModel.__doc__,
    [
        *_fields(ParticipantModel),
        ("dependencies", _DEPENDENCIES, dataclasses.field(default=None)),
        ("conversation", EnsembleFileConversation | None, dataclasses.field(default=None)),
    ],
)

EnsembleFileLimits: Any = _model(  # ``conversation_limits:``, onto the ensemble's own block
    "EnsembleFileLimits",
    "The limits of the whole conversation.",
    [spec for spec in _fields(EnsembleSettingsModel) if spec[0] != "participants"],
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class EnsembleFileModel(StrictModel):
    """An ensemble file: a list of agents that talk in rounds, run as a blueprint with one ensemble step."""

    name: Name | None = None
    agents: Annotated[list[EnsembleFileAgent], Field(min_length=1)]
    conversation_limits: EnsembleFileLimits | None = None
    personas: dict[str, AgentModel] | None = None
    limits: LimitsModel | None = None


def file_schema(kind: SchemaKind) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the file format ``kind``."""
    if kind == "config":  # the settings are core's dataclasses, checked by core (core.settings.validating)
        schema, title = settings_json_schema(), "flujo settings (flujo.toml, ~/.config/flujo/config.toml)"
    else:
        model: type[Any] = BlueprintModel if kind == "blueprint" else EnsembleFileModel
        title = "flujo blueprint" if kind == "blueprint" else "flujo ensemble file"
        schema = TypeAdapter(model).json_schema(schema_generator=_EditorSchema)
    if kind == "blueprint":  # ``version: 0.1`` unquoted is a number in YAML, and plainly means "0.1"
        schema["properties"]["version"] = {"enum": ["0.1", 0.1], "title": "Version"}
    if kind == "config":  # a provider's section given in part keeps its default base URL (load_settings)
        schema["$defs"]["ProviderSettings"].pop("required", None)
    return {"$schema": DIALECT, "title": title, **{key: value for key, value in schema.items() if key != "title"}}
