"""The JSON Schema of each file flujo reads, for editors (``flujo schema blueprint|ensemble|config``).

Each is generated from the pydantic models that validate the file: a blueprint from ``BlueprintModel``, a
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

import copy
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from blueprints.schema.agents import AgentModel, LimitsModel
from blueprints.schema.base import Name, StrictModel
from blueprints.schema.document import BlueprintModel
from blueprints.schema.ensemble import DependencyModel, EnsembleSettingsModel, ParticipantModel
from blueprints.schema.steps import complete_models
from core import settings_json_schema

complete_models()  # the fields below are read from models made with defer_build

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


def _fields(model: type[BaseModel], *names: str) -> dict[str, Any]:
    """The fields ``names`` of ``model`` (all of them when none is named), for ``create_model``."""
    fields = model.model_fields
    return {name: (field.annotation, copy.copy(field)) for name, field in fields.items() if not names or name in names}


def _renamed(field: FieldInfo) -> tuple[Any, FieldInfo]:
    return field.annotation, copy.copy(field)


# Made at import from the fields of other models, so typed Any: mypy cannot follow ``create_model``.
EnsembleFileDependency: Any = create_model(  # ``dependencies: [{agent_name: X, condition: ..., ...}]``
    "EnsembleFileDependency",
    __base__=StrictModel,
    __doc__="An agent this one waits for: ``agent_name``, and when (``condition``), how often, all or any.",
    agent_name=_renamed(DependencyModel.model_fields["participant"]),
    **{name: spec for name, spec in _fields(DependencyModel).items() if name != "participant"},
    requires_all=(bool | None, None),
)

EnsembleFileConversation: Any = create_model(  # ``conversation: {max_turns: 2, ...}``, onto the participant
    "EnsembleFileConversation",
    __base__=StrictModel,
    __doc__="How the agent takes part in the conversation.",
    **_fields(ParticipantModel, "max_turns", "state_key", "triggers_conversation"),
)

_DEPENDENCIES: Any = list[Name | EnsembleFileDependency] | None
EnsembleFileAgent: Any = create_model(  # one entry of ``agents:``: a participant, with the file's own keys
    "EnsembleFileAgent",
    __base__=StrictModel,
    __doc__=ParticipantModel.__doc__,
    **_fields(ParticipantModel),
    dependencies=(_DEPENDENCIES, None),
    conversation=(EnsembleFileConversation | None, None),
)

EnsembleFileLimits: Any = create_model(  # ``conversation_limits:``, onto the ensemble's own block
    "EnsembleFileLimits",
    __base__=StrictModel,
    __doc__="The limits of the whole conversation.",
    **{name: spec for name, spec in _fields(EnsembleSettingsModel).items() if name != "participants"},
)


class EnsembleFileModel(StrictModel):
    """An ensemble file: a list of agents that talk in rounds, run as a blueprint with one ensemble step."""

    name: Name | None = None
    agents: list[EnsembleFileAgent] = Field(min_length=1)
    conversation_limits: EnsembleFileLimits | None = None
    personas: dict[str, AgentModel] | None = None
    limits: LimitsModel | None = None


def file_schema(kind: SchemaKind) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the file format ``kind``."""
    if kind == "blueprint":
        model: type[BaseModel] = BlueprintModel
        title = "flujo blueprint"
    elif kind == "ensemble":
        model, title = EnsembleFileModel, "flujo ensemble file"
    if kind == "config":  # Settings are dataclasses, checked by core (core.settings.validating)
        schema, title = settings_json_schema(), "flujo settings (flujo.toml, ~/.config/flujo/config.toml)"
    else:
        schema = model.model_json_schema(schema_generator=_EditorSchema)
    if kind == "blueprint":  # ``version: 0.1`` unquoted is a number in YAML, and plainly means "0.1"
        schema["properties"]["version"] = {"enum": ["0.1", 0.1], "title": "Version"}
    if kind == "config":  # a provider's section given in part keeps its default base URL (load_settings)
        schema["$defs"]["ProviderSettings"].pop("required", None)
    return {"$schema": DIALECT, "title": title, **{key: value for key, value in schema.items() if key != "title"}}
