"""Building the tools a blueprint's agents use: a ``ToolSpec`` per entry of ``tools:``, its tools made by core's
``build_tools`` (each entry once, shared by every agent that lists it), and each agent's ``ToolUse``, which
every step that uses the agent carries.

The tool code is imported only when a blueprint has tools: a run without them loads none of it. A
``python:`` tool's module is imported as a ``python:`` agent's is (the blueprint's folder, then the current
directory); a ``workflow:`` tool is handed its import compiled, as a ``uses: imports.X`` step is. A
ConfigError from making a tool is re-raised with the tool's file:line:col first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from blueprints.checking.callables import load_callable
from blueprints.checking.loader import Blueprint
from blueprints.schema import AgentModel, ToolModel
from core import ConfigError, Pipeline

if TYPE_CHECKING:
    from core import Tool, ToolSource, ToolSpec, ToolUse


def tool_spec(name: str, tool: ToolModel, folder: str | None = None) -> ToolSpec:
    """The ToolSpec of a ``tools:`` entry. A ``command:`` tool and an MCP server run in ``folder`` (the
    blueprint's), as a ``python:`` tool is imported from it: the files a blueprint names sit beside it."""
    from core import McpServerSpec, ToolSpec

    mcp = McpServerSpec(command=tuple(tool.mcp.command), env=dict(tool.mcp.env or {}), cwd=folder) if tool.mcp else None
    return ToolSpec(
        name=name,
        description=tool.description,
        input_schema=tool.input_schema,
        approve=tool.approve,
        python=tool.python,
        command=tuple(tool.command or ()),
        workflow=tool.workflow,
        mcp=mcp,
        include=tuple(tool.include or ()),
        timeout=tool.timeout,
        cwd=folder if tool.command else None,
    )


def tool_use(name: str, agent: AgentModel, tools: tuple[Tool | ToolSource, ...]) -> ToolUse:
    """What a step using agent ``name`` is given: ``tools`` and the agent's bounds, the defaults where it sets
    none (``core.steps.kinds.ToolUse``)."""
    from core import ToolUse

    given: dict[str, Any] = {
        "max_tool_calls": agent.max_tool_calls,
        "mode": agent.tool_mode,
        "result_chars": agent.tool_result_chars,
    }
    return dataclasses.replace(
        ToolUse(tools=tools, agent=name), **{key: value for key, value in given.items() if value is not None}
    )


class ToolBuilder:
    """Builds (and caches) the tools of one blueprint, and each agent's ``ToolUse``."""

    def __init__(self, blueprint: Blueprint, imported: Callable[[str], Pipeline]) -> None:
        self.blueprint = blueprint
        self.imported = imported  # the Pipeline of imports.<alias>
        self._tools: dict[str, tuple[Tool | ToolSource, ...]] = {}
        self._uses: dict[str, ToolUse | None] = {}

    def for_agent(self, name: str) -> ToolUse | None:
        """The tools agent ``name`` may call (None when it has none), built on first use."""
        if name not in self._uses:
            agent = self.blueprint.model.agents[name]
            if not agent.tools:
                self._uses[name] = None
            else:
                tools = tuple(tool for listed in dict.fromkeys(agent.tools) for tool in self.tools(listed))
                self._uses[name] = tool_use(name, agent, tools)
        return self._uses[name]

    def tools(self, name: str) -> tuple[Tool | ToolSource, ...]:
        """The tools of entry ``name`` of ``tools:`` (one, or an MCP server's several)."""
        built = self._tools.get(name)
        if built is not None:
            return built
        from core import build_tools

        model = self.blueprint.model.tools[name]
        path = ("tools", name)
        if model.python is not None:
            load_callable(
                model.python, position=self.blueprint.position((*path, "python")), search=self.blueprint.path.parent
            )
        workflows = {model.workflow: self.imported(model.workflow.removeprefix("imports."))} if model.workflow else None
        try:
            built = build_tools(tool_spec(name, model, str(self.blueprint.path.parent)), workflows=workflows)
        except ConfigError as exc:
            raise ConfigError(f"{self.blueprint.key_position(path)}: {exc.message}", hint=exc.hint) from exc
        self._tools[name] = built
        return built
