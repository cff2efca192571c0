"""Models of the loop blocks that hold no steps: history management, init, propagation, output.

Several keys accept more than one shape (``init`` is a list of operations or a mapping of presets;
``propagation`` a preset word or ``{next_input: ...}``; ``output`` a preset or a mapping). Each such union
picks its member by the shape of the value (a callable discriminator), so a wrong value gets one error
about the chosen shape instead of one error per possible shape.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag

from blueprints.schema.base import Name, PositiveInt, StrictModel
from core import HistoryStrategy


class HistoryManagementModel(StrictModel):
    """``loop.history_management``: how the injected history is bounded."""

    label: ClassVar[str] = "history_management"

    strategy: HistoryStrategy = "truncate_tokens"
    max_tokens: PositiveInt | None = None
    max_turns: PositiveInt | None = None
    summarizer_agent: Name | None = None
    summarize_ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5


class InitTargetModel(StrictModel):
    """The operand of an init operation: a ``context.*`` target and a value (text is a template)."""

    label: ClassVar[str] = "init operation"

    target: str
    value: Any = None


class InitOpModel(StrictModel):
    """One init operation: exactly one of ``set``, ``append`` or ``merge``."""

    label: ClassVar[str] = "init operation"

    set: InitTargetModel | None = None
    append: InitTargetModel | None = None
    merge: InitTargetModel | None = None


class StartWithModel(StrictModel):
    """``init.history.start_with``: seed the conversation from the initial input or a step's output."""

    label: ClassVar[str] = "init.history.start_with"

    from_step: Name | None = None
    from_initial_input: bool | None = None
    prefix: str = ""


class HistoryInitModel(StrictModel):
    label: ClassVar[str] = "init.history"

    start_with: StartWithModel


class NotesInitModel(StrictModel):
    label: ClassVar[str] = "init.notes"

    set: str


class InitPresetsModel(StrictModel):
    """The friendly mapping form of ``init``."""

    label: ClassVar[str] = "init"

    history: HistoryInitModel | None = None
    notes: NotesInitModel | None = None


def _list_or_mapping(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        return "ops"
    if isinstance(value, dict | InitPresetsModel):
        return "presets"
    return None


InitSpec = Annotated[
    Annotated[list[InitOpModel], Tag("ops")] | Annotated[InitPresetsModel, Tag("presets")],
    Discriminator(
        _list_or_mapping,
        custom_error_type="bad_shape",
        custom_error_message="expected a list of set/append/merge operations, or a mapping with history/notes",
    ),
]

PropagationPreset = Literal["context", "previous_output", "auto"]
PROPAGATION_PRESETS: tuple[str, ...] = ("context", "previous_output", "auto")
# Words ``output`` fields (and ``output.text``) accept instead of a template.
OUTPUT_SHORTHANDS: tuple[str, ...] = ("conversation_history", "initial_prompt")


class PropagationModel(StrictModel):
    """``propagation: {next_input: context|previous_output|auto|<template>}``."""

    label: ClassVar[str] = "propagation"

    next_input: str


def _word_or_mapping(value: Any) -> str | None:
    if isinstance(value, str):
        return "preset"
    if isinstance(value, dict | PropagationModel):
        return "mapping"
    return None


PropagationSpec = Annotated[
    Annotated[PropagationPreset, Tag("preset")] | Annotated[PropagationModel, Tag("mapping")],
    Discriminator(
        _word_or_mapping,
        custom_error_type="bad_shape",
        custom_error_message="expected context, previous_output, auto, or a mapping with next_input",
    ),
]


class TextOutputModel(StrictModel):
    """``output: {text: conversation_history}`` (or a template)."""

    label: ClassVar[str] = "output"

    text: str


class FieldsOutputModel(StrictModel):
    """``output: {fields: {name: initial_prompt|conversation_history|<template>}}``."""

    label: ClassVar[str] = "output"

    fields: dict[str, Any]


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
    Discriminator(
        _output_shape,
        custom_error_type="bad_shape",
        custom_error_message="expected a mapping: {text: ...}, {fields: {...}} or field: template pairs",
    ),
]


class FinalizeModel(StrictModel):
    """``map.finalize``: shape the list of results once, after the last item."""

    label: ClassVar[str] = "map.finalize"

    output_template: str | None = None
    output: OutputSpec | None = None
