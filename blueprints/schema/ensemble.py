"""Models of the ``kind: ensemble`` step: a conversation among participants, run in rounds.

A participant is one of ``uses: agents.X | imports.X``, ``script: PATH``, ``model_profile: NAME`` or
``ask: "question"`` (the person); which one is checked by ``blueprints.checking.checks.ensemble``. The ensemble
file format is translated into these models by ``blueprints.reading.ensemble_file``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag

from blueprints.schema.base import AgentRef, JsonSchema, Name, PositiveInt, StrictModel, UsesRef
from blueprints.schema.loop_blocks import HistoryManagementModel, OutputSpec


class DependencyModel(StrictModel):
    """``depends_on: [{participant: X, condition: ..., max_executions: N}]`` (or just the name)."""

    label: ClassVar[str] = "dependency"

    participant: Name
    condition: str | None = None
    max_executions: PositiveInt | None = None


def _dependency_shape(value: Any) -> str | None:
    if isinstance(value, str):
        return "name"
    if isinstance(value, dict | DependencyModel):
        return "mapping"
    return None


DependencyEntry = Annotated[
    Annotated[Name, Tag("name")] | Annotated[DependencyModel, Tag("mapping")],
    Discriminator(
        _dependency_shape,
        custom_error_type="bad_shape",
        custom_error_message="expected a participant's name or a mapping {participant: NAME, condition: ...}",
    ),
]


class ParticipantModel(StrictModel):
    """One voice of an ensemble."""

    label: ClassVar[str] = "participant"

    name: Name
    type: Literal["script", "llm"] | None = None
    uses: UsesRef | None = None
    script: Name | None = None
    model_profile: Name | None = None
    ask: str | None = None
    answered_by: AgentRef | None = None  # a simulated person speaks for it (core.answering.simulated_person)
    input_schema: JsonSchema | None = None
    prompt: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    max_turns: PositiveInt = 1
    # Not ``default_factory=list``: pydantic reads a factory's signature, and reading ``list``'s costs a start-up ~7 ms.
    depends_on: list[DependencyEntry] = Field(default_factory=lambda: [])
    requires_all: bool = True
    state_key: Name | None = None
    triggers_conversation: bool | None = None

    def dependencies(self) -> list[DependencyModel]:
        """``depends_on`` with every entry as a mapping."""
        return [DependencyModel(participant=d) if isinstance(d, str) else d for d in self.depends_on]


class EnsembleSettingsModel(StrictModel):
    """The ``ensemble:`` block of an ensemble step."""

    label: ClassVar[str] = "ensemble settings"

    participants: Annotated[list[ParticipantModel], Field(min_length=1)]
    max_total_turns: PositiveInt = 20
    max_agent_executions: dict[str, PositiveInt] = Field(default_factory=dict)
    timeout_seconds: Annotated[float, Field(gt=0)] | None = 300
    history_management: HistoryManagementModel | None = None
    output: OutputSpec | None = None
