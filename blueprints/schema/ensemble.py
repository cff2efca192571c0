"""Models of the ``kind: ensemble`` step: a conversation among participants, run in rounds.

A participant is one of ``uses: agents.X | imports.X``, ``script: PATH``, ``model_profile: NAME`` or
``ask: "question"`` (the person); which one is checked by ``blueprints.checking.checks.ensemble``. The ensemble
file format is translated into these models by ``blueprints.reading.ensemble_file``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from blueprints.schema.base import JsonSchema, StrictModel
from blueprints.schema.loop_blocks import HistoryManagementModel

if TYPE_CHECKING:
    from blueprints.schema.base import AgentRef, Name, PositiveFloat, PositiveInt, UsesRef
    from blueprints.schema.loop_blocks import OutputSpec


@dataclass(frozen=True, kw_only=True)
class DependencyModel(StrictModel):
    """``depends_on: [{participant: X, condition: ..., max_executions: N}]`` (or just the name)."""

    label: ClassVar[str] = "dependency"

    participant: Name
    condition: str | None = None
    max_executions: PositiveInt | None = None


if TYPE_CHECKING:
    DependencyEntry = Name | DependencyModel  # a participant's name or a mapping, told apart by shape
    Participants = list["ParticipantModel"]  # at least one


@dataclass(frozen=True, kw_only=True)
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
    config: dict[str, Any] = field(default_factory=dict)
    max_turns: PositiveInt = 1
    # Not ``default_factory=list``: pydantic reads a factory's signature, and reading ``list``'s costs a start-up ~7 ms.
    depends_on: list[DependencyEntry] = field(default_factory=lambda: [])
    requires_all: bool = True
    state_key: Name | None = None
    triggers_conversation: bool | None = None

    def dependencies(self) -> list[DependencyModel]:
        """``depends_on`` with every entry as a mapping."""
        return [DependencyModel(participant=d) if isinstance(d, str) else d for d in self.depends_on]


@dataclass(frozen=True, kw_only=True)
class EnsembleSettingsModel(StrictModel):
    """The ``ensemble:`` block of an ensemble step."""

    label: ClassVar[str] = "ensemble settings"

    participants: Participants
    max_total_turns: PositiveInt = 20
    max_agent_executions: dict[str, PositiveInt] = field(default_factory=dict)
    timeout_seconds: PositiveFloat | None = 300
    history_management: HistoryManagementModel | None = None
    output: OutputSpec | None = None
