"""Tools for the tests of tool loops over real providers (the fake server, the local model): an ``add`` tool
that counts its calls, and the pipeline of one agent step that may use it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core import AgentStep, Pipeline
from core.model.tools import Approve, ToolCallContext, ToolDef, ToolMode, ToolOutcome
from core.ports import Agent, ToolSessions
from core.steps.kinds import ToolUse

ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
ADD = ToolDef("add", "Add two integers", ADD_SCHEMA)


class AddTool:
    """Adds ``a`` and ``b``; keeps the arguments of each call (a visible side effect)."""

    def __init__(self) -> None:
        self.calls: list[Mapping[str, Any]] = []

    @property
    def name(self) -> str:
        return "add"

    @property
    def approve(self) -> Approve:
        return "never"

    async def definition(self, sessions: ToolSessions) -> ToolDef:
        return ADD

    async def call(self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions) -> ToolOutcome:
        self.calls.append(dict(arguments))
        total = arguments["a"] + arguments["b"]
        return ToolOutcome(str(total), total)


def tool_pipeline(agent: Agent, tool: AddTool, *, max_calls: int = 8, mode: ToolMode | None = None) -> Pipeline:
    """One step, ``answer``, whose agent (``helper`` in the messages) may call ``tool``."""
    use = ToolUse(tools=(tool,), max_tool_calls=max_calls, mode=mode, agent="helper")
    return Pipeline(steps=(AgentStep(name="answer", agent=agent, tools=use),))
