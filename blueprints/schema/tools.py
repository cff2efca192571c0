"""Models of the ``tools:`` section: what an agent's model may call.

    tools:
      add:    {python: "calc_tools:add"}
      lookup: {command: ["python3", "lookup.py"], description: "...", input_schema: {...}, approve: ask}
      triage: {workflow: imports.triage}
      files:  {mcp: {command: ["python3", "fs_server.py"]}, include: [read_file]}

A tool is exactly one of ``python``, ``command``, ``workflow`` or ``mcp`` (checked by
``blueprints.checking.checks.tools``, where the finding can point at the second one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from blueprints.schema.base import JsonSchema, StrictModel

if TYPE_CHECKING:
    from blueprints.schema.base import CallablePath, Command, ImportRef, Name, PositiveFloat


@dataclass(frozen=True, kw_only=True)
class McpModel(StrictModel):
    """An MCP server over stdio: the command that starts it and extra environment."""

    label: ClassVar[str] = "mcp server"

    command: Command
    env: dict[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class ToolModel(StrictModel):
    """One tool: what runs it, what the model is told of it, whether the person is asked first."""

    label: ClassVar[str] = "tool"

    python: CallablePath | None = None
    command: Command | None = None
    workflow: ImportRef | None = None
    mcp: McpModel | None = None
    include: list[Name] | None = None
    description: str | None = None
    input_schema: JsonSchema | None = None
    approve: Literal["never", "ask"] | None = None
    timeout: PositiveFloat | None = None
