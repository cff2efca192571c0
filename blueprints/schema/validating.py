"""Validating data against the blueprint models: the one module of the schema's validation that imports pydantic.

The models (frozen dataclasses, ``blueprints.schema.base``) import nothing of pydantic, so that a command whose
blueprint was validated before unpickles them without loading pydantic's model machinery (defining one pydantic
model, or importing ``Field``, loads most of it). Their annotations are strings naming constrained types
(``Name``, ``PositiveInt``, ``StepModel`` ...) that mypy reads as plain types; this module defines those names
with their pydantic constraints and, when it is imported, puts them in the namespace of every module that
defines a model, where pydantic resolves a dataclass's annotations. So: import this module before anything asks
pydantic about a model (``validate_blueprint``, ``fields_of``, ``blueprints.schema.json_schema``).

It also sets the models' schema hook (``StrictModel.schema_hook``): a strict dataclass accepts only an instance of
itself, so each model's own schema is relaxed to accept a mapping (its values stay strict: ``"3"`` is not a whole
number), and the validated model records the keys its mapping wrote (``StrictModel.fields_given``).

Several keys accept more than one shape (a step is told by its ``kind``; ``init`` is a list of operations or a
mapping of presets ...). Each such union picks its member by the shape of the value (a callable discriminator),
so a wrong value gets one error about the chosen shape instead of one error per possible shape.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Discriminator, Field, Tag, TypeAdapter
from pydantic_core import PydanticCustomError, core_schema

from blueprints.schema.base import StrictModel
from blueprints.schema.document import BlueprintModel
from blueprints.schema.ensemble import DependencyModel, ParticipantModel
from blueprints.schema.import_config import OutputMapModel
from blueprints.schema.loop_blocks import (
    FieldsOutputModel,
    InitOpModel,
    InitPresetsModel,
    PropagationModel,
    PropagationPreset,
    TextOutputModel,
)
from blueprints.schema.steps import (
    AgentRefModel,
    AgentStepModel,
    ConditionalStepModel,
    EnsembleStepModel,
    HitlStepModel,
    LoopStepModel,
    MapStepModel,
    ParallelStepModel,
)


def _pattern(regex: str, expected: str) -> AfterValidator:
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise PydanticCustomError("bad_value", "{message}", {"message": f"expected {expected}, got {value!r}"})
        return value

    return AfterValidator(check)


_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

CallablePath = Annotated[str, _pattern(rf"{_IDENT}(\.{_IDENT})*:{_IDENT}(\.{_IDENT})*", "'module:function'")]
"""``package.module:function`` — a Python callable imported when the blueprint is compiled."""

ContextPath = Annotated[str, _pattern(rf"{_IDENT}(\.{_IDENT})*", "a context path like scratchpad.goal")]
"""A dotted path into the run context, e.g. ``scratchpad.goal``."""

UsesRef = Annotated[str, _pattern(rf"(agents|imports)\.{_IDENT}", "agents.<name> or imports.<name>")]
"""What a ``step`` calls: ``agents.<name>`` or ``imports.<alias>``."""

ImportRef = Annotated[str, _pattern(rf"imports\.{_IDENT}", "imports.<name>")]
"""A blueprint declared under ``imports:`` (a ``workflow:`` tool)."""

AgentRef = Annotated[str, _pattern(rf"agents\.{_IDENT}", "agents.<name>")]
"""An agent defined under ``agents:`` (``answered_by: agents.<name>``)."""

Name = Annotated[str, Field(min_length=1)]
PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
Ratio = Annotated[float, Field(gt=0, lt=1)]
Command = Annotated[list[str], Field(min_length=1)]


def _unquoted_version(value: Any) -> Any:
    # ``version: 0.1`` without quotes is a float in YAML; it plainly means "0.1".
    return "0.1" if value == 0.1 and not isinstance(value, bool) else value


Version = Annotated[Literal["0.1"], BeforeValidator(_unquoted_version)]


def _shape(function: Any, message: str) -> Discriminator:
    return Discriminator(function, custom_error_type="bad_shape", custom_error_message=message)


def _dependency_shape(value: Any) -> str | None:
    if isinstance(value, str):
        return "name"
    if isinstance(value, dict | DependencyModel):
        return "mapping"
    return None


DependencyEntry = Annotated[
    Annotated[Name, Tag("name")] | Annotated[DependencyModel, Tag("mapping")],
    _shape(_dependency_shape, "expected a participant's name or a mapping {participant: NAME, condition: ...}"),
]
Participants = Annotated[list[ParticipantModel], Field(min_length=1)]


def _outputs_shape(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return None


OutputsSpec = Annotated[
    Annotated[list[OutputMapModel], Tag("list")] | Annotated[dict[str, ContextPath], Tag("mapping")],
    _shape(_outputs_shape, "expected a list of {child: ..., parent: ...} entries, or a mapping child: parent"),
]


def _init_shape(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        return "ops"
    if isinstance(value, dict | InitPresetsModel):
        return "presets"
    return None


InitSpec = Annotated[
    Annotated[list[InitOpModel], Tag("ops")] | Annotated[InitPresetsModel, Tag("presets")],
    _shape(_init_shape, "expected a list of set/append/merge operations, or a mapping with history/notes"),
]


def _propagation_shape(value: Any) -> str | None:
    if isinstance(value, str):
        return "preset"
    if isinstance(value, dict | PropagationModel):
        return "mapping"
    return None


PropagationSpec = Annotated[
    Annotated[PropagationPreset, Tag("preset")] | Annotated[PropagationModel, Tag("mapping")],
    _shape(_propagation_shape, "expected context, previous_output, auto, or a mapping with next_input"),
]


def _output_shape(value: Any) -> str | None:
    if isinstance(value, TextOutputModel | FieldsOutputModel):
        return "text" if isinstance(value, TextOutputModel) else "fields"
    if not isinstance(value, dict):
        return None
    if set(value) == {"text"}:
        return "text"
    if "fields" in value:
        return "fields"
    return "mapping"


OutputSpec = Annotated[
    Annotated[TextOutputModel, Tag("text")]
    | Annotated[FieldsOutputModel, Tag("fields")]
    | Annotated[dict[str, Any], Tag("mapping")],
    _shape(_output_shape, "expected a mapping: {text: ...}, {fields: {...}} or field: template pairs"),
]


def _agent_shape(value: Any) -> str | None:
    if isinstance(value, str):
        return "path"
    if isinstance(value, dict | AgentRefModel):
        return "ref"
    return None


AgentChoice = Annotated[
    Annotated[CallablePath, Tag("path")] | Annotated[AgentRefModel, Tag("ref")],
    _shape(_agent_shape, "expected 'module:function' or a mapping {id: flujo.builtins.<name>}"),
]


def _step_kind(value: Any) -> str | None:
    if isinstance(value, AgentStepModel | HitlStepModel | LoopStepModel | ParallelStepModel):
        return value.kind
    if isinstance(value, ConditionalStepModel | MapStepModel | EnsembleStepModel):
        return value.kind
    if isinstance(value, dict):
        kind = value.get("kind", "step")
        return kind if isinstance(kind, str) else repr(kind)
    return None


StepModel = Annotated[
    Annotated[AgentStepModel, Tag("step")]
    | Annotated[HitlStepModel, Tag("hitl")]
    | Annotated[LoopStepModel, Tag("loop")]
    | Annotated[ParallelStepModel, Tag("parallel")]
    | Annotated[ConditionalStepModel, Tag("conditional")]
    | Annotated[MapStepModel, Tag("map")]
    | Annotated[EnsembleStepModel, Tag("ensemble")],
    _shape(_step_kind, "a step is a mapping with kind and name"),
]
Steps = Annotated[list[StepModel], Field(min_length=1)]
Branches = Annotated[dict[str, Steps], Field(min_length=1)]

# The names the models' annotations use, by the name they use.
NAMES: dict[str, Any] = {
    "Name": Name,
    "PositiveInt": PositiveInt,
    "NonNegativeInt": NonNegativeInt,
    "PositiveFloat": PositiveFloat,
    "Ratio": Ratio,
    "Command": Command,
    "CallablePath": CallablePath,
    "ContextPath": ContextPath,
    "UsesRef": UsesRef,
    "ImportRef": ImportRef,
    "AgentRef": AgentRef,
    "Version": Version,
    "DependencyEntry": DependencyEntry,
    "Participants": Participants,
    "OutputsSpec": OutputsSpec,
    "InitSpec": InitSpec,
    "PropagationSpec": PropagationSpec,
    "OutputSpec": OutputSpec,
    "AgentChoice": AgentChoice,
    "StepModel": StepModel,
    "Steps": Steps,
    "Branches": Branches,
}


def _record_given(data: Any, validate: core_schema.ValidatorFunctionWrapHandler) -> Any:
    """Validate a model's fields from ``data`` and record, beside them, the keys ``data`` wrote (pydantic sets
    the validated dataclass's ``__dict__`` to the fields it returns)."""
    fields, init_values = validate(data)
    fields["_given"] = frozenset(data) if isinstance(data, dict) else frozenset(fields)
    return fields, init_values


def _model_schema(model: type[StrictModel], source: Any, handler: Any) -> Any:
    """A model's schema: pydantic's, the model itself accepting a mapping (strict, a dataclass accepts only an
    instance), and recording the keys given."""
    schema = handler(source)
    if schema["type"] == "dataclass":
        schema["strict"] = False
        schema["schema"] = core_schema.no_info_wrap_validator_function(_record_given, schema["schema"])
    return schema


def _models(base: type[StrictModel]) -> list[type[StrictModel]]:
    """``base`` and every model made from it, at any depth."""
    return [base, *(model for sub in base.__subclasses__() for model in _models(sub))]


def _install() -> None:
    """Put ``NAMES`` in the namespace of every module that defines a model, and set the models' schema hook."""
    for module in {sys.modules[model.__module__] for model in _models(StrictModel)}:
        namespace = vars(module)
        for name, value in NAMES.items():
            if namespace.get(name, value) is not value:
                raise RuntimeError(f"{module.__name__} defines {name} itself")
            namespace[name] = value
    StrictModel.schema_hook = _model_schema


_install()


@cache
def _blueprint_adapter() -> TypeAdapter[BlueprintModel]:
    return TypeAdapter(BlueprintModel)


def validate_blueprint(data: Any) -> BlueprintModel:
    """``data`` (a blueprint's YAML, as plain values) as a ``BlueprintModel``; pydantic's ValidationError when it
    does not fit. The first call builds the validator."""
    return _blueprint_adapter().validate_python(data)


@dataclass(frozen=True)
class ModelField:
    """One field of a model: its annotation (resolved, its constraints kept) and whether a mapping must give it."""

    name: str
    annotation: Any
    required: bool


_FIELDS: dict[type[StrictModel], dict[str, ModelField]] = {}


def fields_of(model: type[StrictModel]) -> dict[str, ModelField]:
    """The fields of ``model``, in order, by name."""
    if model not in _FIELDS:
        _FIELDS[model] = _read_fields(model)
    return _FIELDS[model]


def _read_fields(model: type[StrictModel]) -> dict[str, ModelField]:
    hints = typing.get_type_hints(model, include_extras=True)
    return {
        field.name: ModelField(
            field.name,
            hints[field.name],
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING,
        )
        for field in dataclasses.fields(model)  # type: ignore[arg-type]
    }
