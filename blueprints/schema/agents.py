"""Models of the ``agents:`` and ``limits:`` sections."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from blueprints.schema.base import CallablePath, JsonSchema, Name, PositiveInt, StrictModel


class ExampleModel(StrictModel):
    """One worked example of an agent: what the user says and what the agent replies."""

    label: ClassVar[str] = "example"

    user: str
    assistant: str


class AgentModel(StrictModel):
    """A reusable agent: a model (``provider:name``, ``scripted``, ``echo``), a python callable or a command."""

    label: ClassVar[str] = "agent"

    model: str | None = None
    system_prompt: str | None = None
    examples: list[ExampleModel] | None = None
    output_schema: JsonSchema | None = None
    model_settings: dict[str, Any] = Field(default_factory=dict)
    timeout: Annotated[float, Field(gt=0)] | None = None
    max_retries: Annotated[int, Field(ge=0)] | None = None
    replies: list[Any] | None = None
    python: CallablePath | None = None
    command: Annotated[list[str], Field(min_length=1)] | None = None
    context_window: PositiveInt | None = None
    base_url: str | None = None
    # The tools its model may call (names under the top-level tools:), and how (see docs/tools.md). Left out:
    # at most 8 calls per step (core.steps.kinds.DEFAULT_MAX_TOOL_CALLS), the agent's own mode, results cut
    # to 8000 characters (DEFAULT_RESULT_CHARS).
    tools: list[Name] | None = None
    max_tool_calls: PositiveInt | None = None
    tool_mode: Literal["native", "json"] | None = None
    tool_result_chars: PositiveInt | None = None


class LimitsModel(StrictModel):
    """The run-wide usage budget."""

    label: ClassVar[str] = "limits"

    max_cost_usd: Annotated[float, Field(gt=0)] | None = None
    max_tokens: PositiveInt | None = None
