"""An agent's tools in words, for ``flujo explain``: which it may call, which ask the person first, the most calls
in one step, and how its model is told of them (``tool_mode``: ``native``, or ``json`` for ``model: local`` and
where the blueprint says so)."""

from __future__ import annotations

from blueprints.checking.loader import Blueprint
from blueprints.explain.model import AgentTools
from blueprints.schema import AgentModel, ToolModel
from core import provider_of

# core.steps.kinds.DEFAULT_MAX_TOOL_CALLS: the bound of an agent that sets no max_tool_calls.
DEFAULT_MAX_TOOL_CALLS = 8


def tool_mode(agent: AgentModel) -> tuple[str, str]:
    """How the agent's model is told of its tools, and why (``tool_mode: json``, ``the default of model: local``)."""
    if agent.tool_mode is not None:
        return agent.tool_mode, f"tool_mode: {agent.tool_mode}"
    row = provider_of(agent.model or "")
    if row is not None and row.api == "local":
        return "json", "tool_mode: json, the default of model: local"
    return "native", "tool_mode: native"


def _label(name: str, tool: ToolModel, blueprint: Blueprint) -> str:
    said: list[str] = []
    if tool.workflow is not None:
        file = blueprint.model.imports.get(tool.workflow.removeprefix("imports."), tool.workflow)
        said.append(f"runs {file} as a sub-workflow")
    if tool.mcp is not None:
        only = f", only {', '.join(tool.include)}" if tool.include else ""
        said.append(f"the tools of the MCP server {' '.join(tool.mcp.command)}{only}")
    if tool.approve == "ask":
        said.append("asks you first")
    elif tool.mcp is not None and tool.approve is None:
        said.append("one it marks destructive asks you first")
    return f"{name} ({'; '.join(said)})" if said else name


def agent_tools(agent: AgentModel, blueprint: Blueprint) -> AgentTools | None:
    """The tools ``agent`` may call, None when it has none."""
    if not agent.tools:
        return None
    names = tuple(dict.fromkeys(agent.tools))
    tools = blueprint.model.tools
    labels = [_label(name, tools[name], blueprint) for name in names if name in tools]
    ask = tuple(name for name in names if name in tools and tools[name].approve == "ask")
    most = agent.max_tool_calls or DEFAULT_MAX_TOOL_CALLS
    mode, why = tool_mode(agent)
    told = (
        "told of them through its provider's tool API"
        if mode == "native"
        else "told of them in its system prompt and replying in JSON"
    )
    words = f"may call {', '.join(labels)}; at most {most} tool calls per step; {told} ({why})"
    may_ask = tuple(
        name for name in names if name in tools and tools[name].mcp is not None and tools[name].approve is None
    )
    return AgentTools(names, ask, most, mode, words, may_ask)


def step_words(name: str, tools: AgentTools) -> str:
    """What a step using agent ``name`` does with its tools."""
    return (
        f"Before it answers, {name} may call its tools ({', '.join(tools.names)}), at most {tools.max_tool_calls} "
        "calls; only its answer is the step's output"
    )
