"""``build_tools``: the ``core.ports.Tool`` s one ``ToolSpec`` gives, each kind made by its own module.

One spec is one tool, except an MCP server's, which is each of the tools it offers (``include`` limits them).
The blueprint compiler calls this once per entry of ``tools:``; a Python program can too, or make the tool
classes itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.model.errors import ConfigError
from core.ports import Tool, ToolSource
from core.steps.kinds import Pipeline
from core.tools.kinds import build_runner_tool
from core.tools.python_tool import PythonTool
from core.tools.spec import ToolSpec


def build_tools(spec: ToolSpec, *, workflows: Mapping[str, Pipeline] | None = None) -> tuple[Tool | ToolSource, ...]:
    """The tools ``spec`` describes. ``workflows`` holds the compiled Pipeline of each ``workflow:`` a spec may
    name (``imports.triage``). ConfigError (starting with ``tools.NAME``) when one cannot be made. An MCP
    server is a ``ToolSource``: the step that offers it expands it into the server's tools when it runs."""
    return (build_tool(spec, workflows=workflows),)


def build_tool(spec: ToolSpec, *, workflows: Mapping[str, Pipeline] | None = None) -> Tool | ToolSource:
    """The one tool (or MCP server) ``spec`` describes."""
    approve = spec.approve or "never"
    if spec.python is not None:
        return PythonTool(
            spec.name,
            spec.python,
            description=spec.description,
            input_schema=spec.input_schema,
            approve=approve,
            timeout=spec.timeout,
        )
    kind = "command" if spec.command else "workflow" if spec.workflow else "mcp" if spec.mcp else None
    if kind is None:
        raise ConfigError(
            f"tools.{spec.name}: says neither python, command, workflow nor mcp",
            hint="give the tool exactly one of python, command, workflow or mcp",
        )
    workflow = (workflows or {}).get(spec.workflow) if spec.workflow is not None else None
    return build_runner_tool(spec, workflow=workflow)
