"""Models of the loop blocks that hold no steps: history management, init, propagation, output.

Several keys accept more than one shape (``init`` is a list of operations or a mapping of presets;
``propagation`` a preset word or ``{next_input: ...}``; ``output`` a preset or a mapping). Each such union
picks its member by the shape of the value (a callable discriminator, in ``blueprints.schema.validating``), so
a wrong value gets one error about the chosen shape instead of one error per possible shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from blueprints.schema.base import StrictModel
from core import HistoryStrategy

if TYPE_CHECKING:
    from blueprints.schema.base import Name, PositiveInt, Ratio


@dataclass(frozen=True, kw_only=True)
class HistoryManagementModel(StrictModel):
    """``loop.history_management``: how the injected history is bounded."""

    label: ClassVar[str] = "history_management"

    strategy: HistoryStrategy = "truncate_tokens"
    max_tokens: PositiveInt | None = None
    max_turns: PositiveInt | None = None
    summarizer_agent: Name | None = None
    summarize_ratio: Ratio = 0.5


@dataclass(frozen=True, kw_only=True)
class InitTargetModel(StrictModel):
    """The operand of an init operation: a ``context.*`` target and a value (text is a template)."""

    label: ClassVar[str] = "init operation"

    target: str
    value: Any = None


@dataclass(frozen=True, kw_only=True)
class InitOpModel(StrictModel):
    """One init operation: exactly one of ``set``, ``append`` or ``merge``."""

    label: ClassVar[str] = "init operation"

    set: InitTargetModel | None = None
    append: InitTargetModel | None = None
    merge: InitTargetModel | None = None


@dataclass(frozen=True, kw_only=True)
class StartWithModel(StrictModel):
    """``init.history.start_with``: seed the conversation from the initial input or a step's output."""

    label: ClassVar[str] = "init.history.start_with"

    from_step: Name | None = None
    from_initial_input: bool | None = None
    prefix: str = ""


@dataclass(frozen=True, kw_only=True)
class HistoryInitModel(StrictModel):
    label: ClassVar[str] = "init.history"

    start_with: StartWithModel


@dataclass(frozen=True, kw_only=True)
class NotesInitModel(StrictModel):
    label: ClassVar[str] = "init.notes"

    set: str


@dataclass(frozen=True, kw_only=True)
class InitPresetsModel(StrictModel):
    """The friendly mapping form of ``init``."""

    label: ClassVar[str] = "init"

    history: HistoryInitModel | None = None
    notes: NotesInitModel | None = None


if TYPE_CHECKING:
    InitSpec = list[InitOpModel] | InitPresetsModel  # told apart by shape

PropagationPreset = Literal["context", "previous_output", "auto"]
PROPAGATION_PRESETS: tuple[str, ...] = ("context", "previous_output", "auto")
# Words ``output`` fields (and ``output.text``) accept instead of a template.
OUTPUT_SHORTHANDS: tuple[str, ...] = ("conversation_history", "initial_prompt")


@dataclass(frozen=True, kw_only=True)
class PropagationModel(StrictModel):
    """``propagation: {next_input: context|previous_output|auto|<template>}``."""

    label: ClassVar[str] = "propagation"

    next_input: str


if TYPE_CHECKING:
    PropagationSpec = PropagationPreset | PropagationModel  # told apart by shape


@dataclass(frozen=True, kw_only=True)
class TextOutputModel(StrictModel):
    """``output: {text: conversation_history}`` (or a template)."""

    label: ClassVar[str] = "output"

    text: str


@dataclass(frozen=True, kw_only=True)
class FieldsOutputModel(StrictModel):
    """``output: {fields: {name: initial_prompt|conversation_history|<template>}}``."""

    label: ClassVar[str] = "output"

    fields: dict[str, Any]


if TYPE_CHECKING:
    OutputSpec = TextOutputModel | FieldsOutputModel | dict[str, Any]  # told apart by shape


@dataclass(frozen=True, kw_only=True)
class FinalizeModel(StrictModel):
    """``map.finalize``: shape the list of results once, after the last item."""

    label: ClassVar[str] = "map.finalize"

    output_template: str | None = None
    output: OutputSpec | None = None
