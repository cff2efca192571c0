"""``build_runner_tool``: the tools that run something of their own: a ``command:`` (a program per call), a
``workflow:`` (a sub-workflow per call) and an ``mcp:`` server (its tools). The MCP code, and the ``mcp`` SDK
with it, is imported only here, when a blueprint has an ``mcp:`` tool.
"""

from __future__ import annotations

from core.model.errors import ConfigError
from core.ports import Tool, ToolSource
from core.steps.kinds import Pipeline
from core.tools.command_tool import CommandTool
from core.tools.spec import ToolSpec
from core.tools.workflow_tool import WorkflowTool

_MCP_PACKAGES = frozenset({"mcp", "mcp_types"})


def build_runner_tool(spec: ToolSpec, *, workflow: Pipeline | None = None) -> Tool | ToolSource:
    """The tool ``spec`` defines, when it is a ``command:``, ``workflow:`` or ``mcp:`` tool (a ``ToolSource``
    for an MCP server, which the step expands into the server's tools when it runs). ``workflow`` is the
    pipeline ``spec.workflow`` names (the compiler resolves ``imports.X``). ConfigError, one line, when the spec
    cannot be built: an empty command, a workflow not given, MCP without the ``mcp`` package."""
    if spec.command:
        return CommandTool(spec)
    if spec.workflow is not None:
        if workflow is None:
            raise ConfigError(
                f"tools.{spec.name}: the workflow {spec.workflow} is not imported",
                hint="name an entry of the blueprint's imports: workflow: imports.NAME",
            )
        return WorkflowTool(spec, workflow)
    if spec.mcp is not None:
        try:
            from core.tools.mcp_tool import McpSource
        except ModuleNotFoundError as missing:
            if (missing.name or "").partition(".")[0] not in _MCP_PACKAGES:
                raise
            raise ConfigError(
                f"tools.{spec.name} is an MCP server, and MCP needs the mcp package, which is not installed",
                hint="pip install 'flujo-runner[mcp]'",
            ) from None
        return McpSource(spec)
    raise ConfigError(
        f"tools.{spec.name} is not a command:, workflow: or mcp: tool",
        hint="a python: tool is built by core.tools.factory",
    )
