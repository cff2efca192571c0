"""Models of the ``agents:`` and ``limits:`` sections."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from blueprints.schema.base import JsonSchema, StrictModel

if TYPE_CHECKING:
    from blueprints.schema.base import CallablePath, Command, Name, NonNegativeInt, PositiveFloat, PositiveInt


@dataclass(frozen=True, kw_only=True)
class ExampleModel(StrictModel):
    """One worked example of an agent: what the user says and what the agent replies."""

    label: ClassVar[str] = "example"

    user: str
    assistant: str


@dataclass(frozen=True, kw_only=True)
class AgentModel(StrictModel):
    """A reusable agent: a model (``provider:name``, ``scripted``, ``echo``), a python callable or a command."""

    label: ClassVar[str] = "agent"

    model: str | None = None
    system_prompt: str | None = None
    examples: list[ExampleModel] | None = None
    output_schema: JsonSchema | None = None
    model_settings: dict[str, Any] = field(default_factory=dict)
    timeout: PositiveFloat | None = None
    max_retries: NonNegativeInt | None = None
    replies: list[Any] | None = None
    python: CallablePath | None = None
    command: Command | None = None
    context_window: PositiveInt | None = None
    base_url: str | None = None
    # The tools its model may call (names under the top-level tools:), and how (see docs/tools.md). Left out:
    # at most 8 calls per step (core.steps.kinds.DEFAULT_MAX_TOOL_CALLS), the agent's own mode, results cut
    # to 8000 characters (DEFAULT_RESULT_CHARS).
    tools: list[Name] | None = None
    max_tool_calls: PositiveInt | None = None
    tool_mode: Literal["native", "json"] | None = None
    tool_result_chars: PositiveInt | None = None


@dataclass(frozen=True, kw_only=True)
class LimitsModel(StrictModel):
    """The run-wide usage budget."""

    label: ClassVar[str] = "limits"

    max_cost_usd: PositiveFloat | None = None
    max_tokens: PositiveInt | None = None
