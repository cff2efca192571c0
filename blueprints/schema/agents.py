"""Models of the ``agents:`` and ``limits:`` sections."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from blueprints.schema.base import CallablePath, JsonSchema, PositiveInt, StrictModel


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


class LimitsModel(StrictModel):
    """The run-wide usage budget."""

    label: ClassVar[str] = "limits"

    max_cost_usd: Annotated[float, Field(gt=0)] | None = None
    max_tokens: PositiveInt | None = None
