"""The top-level blueprint model."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator

from blueprints.schema.agents import AgentModel, LimitsModel
from blueprints.schema.base import Name, StrictModel
from blueprints.schema.steps import StepModel
from blueprints.schema.tools import ToolModel


class BlueprintModel(StrictModel):
    """A whole blueprint file (language version 0.1)."""

    label: ClassVar[str] = "the top level"

    version: Literal["0.1"]
    name: Name | None = None
    tools: dict[str, ToolModel] = Field(default_factory=dict)
    agents: dict[str, AgentModel] = Field(default_factory=dict)
    imports: dict[str, Name] = Field(default_factory=dict)
    limits: LimitsModel | None = None
    steps: Annotated[list[StepModel], Field(min_length=1)]

    @field_validator("version", mode="before")
    @classmethod
    def _unquoted_version(cls, value: Any) -> Any:
        # ``version: 0.1`` without quotes is a float in YAML; it plainly means "0.1".
        return "0.1" if value == 0.1 and not isinstance(value, bool) else value
