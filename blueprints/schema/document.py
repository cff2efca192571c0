"""The top-level blueprint model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from blueprints.schema.agents import AgentModel, LimitsModel
from blueprints.schema.base import StrictModel
from blueprints.schema.tools import ToolModel

if TYPE_CHECKING:
    from blueprints.schema.base import Name
    from blueprints.schema.steps import Steps

    Version = Literal["0.1"]  # ``version: 0.1`` unquoted (a float in YAML) plainly means "0.1" too


@dataclass(frozen=True, kw_only=True)
class BlueprintModel(StrictModel):
    """A whole blueprint file (language version 0.1)."""

    label: ClassVar[str] = "the top level"

    version: Version
    name: Name | None = None
    tools: dict[str, ToolModel] = field(default_factory=dict)
    agents: dict[str, AgentModel] = field(default_factory=dict)
    imports: dict[str, Name] = field(default_factory=dict)
    limits: LimitsModel | None = None
    steps: Steps
