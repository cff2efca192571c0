"""Checks of the ``tools:`` section and of the agents that use tools.

A tool is exactly one of ``python``, ``command``, ``workflow`` or ``mcp``. A ``python:`` function is imported
now and its parameters read as a run would read them (``core.PythonTool``): a function that does not import,
a parameter without a type hint, or two parameters asking for the call's ``ToolCallContext``, is an error at
its line rather than a model told of a tool that cannot be called. An agent's ``tools`` must name tools
defined here, and only a model agent can use them. Where an agent with tools is called some other way (an
ensemble's participant, a simulated person, a summarizer) its tools are not offered, which is said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from blueprints.checking.callables import load_callable
from blueprints.checking.checks.checker import AGENT_TOOL_KEYS, Checker
from blueprints.checking.checks.schemas import check_schema
from blueprints.checking.checks.sites import StepSite
from blueprints.reading.positions import Path
from blueprints.reading.suggestions import did_you_mean
from blueprints.schema import AgentModel, EnsembleStepModel, HitlStepModel, LoopStepModel, ToolModel
from core import BlueprintError, provider_of

# What every provider accepts as a tool's name (OpenAI's rule; Anthropic's is the same).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_tool_definition(checker: Checker, name: str, tool: ToolModel) -> None:
    path = ("tools", name)
    kinds = {"python": tool.python, "command": tool.command, "workflow": tool.workflow, "mcp": tool.mcp}
    chosen = [kind for kind, value in kinds.items() if value is not None]
    if not chosen:
        checker.error(
            "missing-field",
            f"tool {name!r} needs one of python, command, workflow or mcp",
            checker.key_at(path),
            'e.g. python: "calc_tools:add" (a function with type hints), or command: ["python3", "lookup.py"]',
        )
    elif len(chosen) > 1:
        checker.error(
            "bad-value",
            f"tool {name!r} sets {' and '.join(chosen)}; a tool is exactly one of them",
            checker.key_at((*path, chosen[1])),
            "split it into one tool per kind",
        )
    if tool.mcp is None and not _TOOL_NAME.fullmatch(name):
        checker.error(
            "bad-value",
            f"tool name {name!r} cannot be sent to a model: use letters, digits, _ and - (at most 64)",
            checker.key_at(path),
        )
    if tool.input_schema is not None:
        _check_input_schema(checker, (*path, "input_schema"), tool.input_schema)
    if chosen == ["python"]:
        _check_python(checker, name, tool)
    if tool.command:
        check_program(checker, f"tool {name!r}", tool.command, (*path, "command"), tool=True)
    if tool.mcp is not None and tool.mcp.command:
        where = (*path, "mcp", "command")
        check_program(checker, f"the MCP server of tool {name!r}", tool.mcp.command, where, tool=True, env=tool.mcp.env)
    if chosen == ["command"] and tool.description is None:
        checker.warning(
            "missing-field",
            f"tool {name!r} has no description: the model is told only its name",
            checker.key_at(path),
            "add description: ... saying what it does and what it returns",
        )
    if tool.workflow is not None:
        _check_workflow(checker, name, tool.workflow)
    _check_ignored(checker, name, tool)


def check_program(
    checker: Checker,
    owner: str,
    command: Sequence[str],
    path: Path,
    *,
    tool: bool,
    env: Mapping[str, str] | None = None,
) -> None:
    """A warning at the first item of ``command`` when its program cannot be found on this machine: on the
    PATH a run gives it (a tool's: the Python running flujo's folder first; ``env`` on top, an MCP server's),
    or as a path, from the blueprint's folder for a tool (where it runs) and only when absolute for an agent
    (it runs where flujo is started). A warning, not an error: the program may be there by the time the run
    calls it (installed, made by an earlier step, or on the machine of the worker that runs it)."""
    from core.agents import program_problem

    program = command[0] if command else ""
    if not tool and "/" in program and not program.startswith("/"):
        return
    problem = program_problem(program, tool=tool, env=env, cwd=str(checker.folder.resolve()) if tool else None)
    if problem is not None:
        what, hint = problem
        checker.warning(
            "program-not-found",
            f"{owner}: the program {what}; a run cannot start it",
            checker.at((*path, 0)),
            hint,
        )


def _check_input_schema(checker: Checker, path: Path, schema: dict[str, Any]) -> None:
    before = len(checker.findings)
    check_schema(checker, path, schema)
    if len(checker.findings) == before and schema.get("type") != "object":
        checker.error(
            "bad-value",
            "input_schema of a tool describes its arguments, a JSON object: it needs type: object",
            checker.at(path),
            "e.g. {type: object, properties: {id: {type: string}}, required: [id]}",
        )


def _check_python(checker: Checker, name: str, tool: ToolModel) -> None:
    spec = tool.python or ""
    path = ("tools", name, "python")
    try:
        load_callable(spec, position=checker.at(path), search=checker.folder)
    except BlueprintError as exc:
        checker.error("import-failed", exc.message, exc.position, exc.hint)
        return
    from core import ConfigError, PythonTool  # the tool code loads only for blueprints with python tools

    try:
        made = PythonTool(name, spec, description=tool.description, input_schema=tool.input_schema)
    except ConfigError as exc:
        checker.error("bad-value", exc.message, checker.at(path), exc.hint)
        return
    if not made.description:
        checker.warning(
            "missing-field",
            f"tool {name!r} has no description: {spec} has no docstring, so the model is told only its name",
            checker.key_at(("tools", name)),
            "write a docstring saying what it does, or add description: ...",
        )


def _check_workflow(checker: Checker, name: str, workflow: str) -> None:
    alias = workflow.removeprefix("imports.")
    imports = checker.model.imports
    if alias not in imports:
        checker.error(
            "unknown-reference",
            f"tool {name!r} runs import {alias!r}, which is not declared{did_you_mean(alias, imports)}",
            checker.at(("tools", name, "workflow")),
            "declare it under imports: (alias: path/to/blueprint.yaml)",
        )


def _check_ignored(checker: Checker, name: str, tool: ToolModel) -> None:
    path = ("tools", name)
    if tool.include is not None and tool.mcp is None:
        checker.warning(
            "ignored-key",
            f"include has no effect on tool {name!r}; only an mcp tool offers several tools to choose from",
            checker.key_at((*path, "include")),
        )
    if tool.mcp is not None:
        for key in ("description", "input_schema"):
            if key in tool.fields_given:
                checker.warning(
                    "ignored-key",
                    f"{key} has no effect on tool {name!r}: an MCP server describes each of its tools itself",
                    checker.key_at((*path, key)),
                )
    if tool.workflow is not None and tool.timeout is not None:
        checker.warning(
            "ignored-key",
            f"timeout has no effect on tool {name!r}: a sub-workflow runs until it ends (limits bound its cost)",
            checker.key_at((*path, "timeout")),
        )


def check_agent_tools(checker: Checker, name: str, agent: AgentModel) -> None:
    """An agent's ``tools``: each defined, listed once, on an agent whose model can call them."""
    path = ("agents", name)
    if agent.tools is None:
        for key in AGENT_TOOL_KEYS:
            if key in agent.fields_given:
                checker.warning(
                    "ignored-key",
                    f"{key} has no effect on agent {name!r}, which has no tools",
                    checker.key_at((*path, key)),
                    "give it tools: [NAME, ...]",
                )
        return
    if agent.model is None or agent.model == "echo":
        what = (
            "model: echo only repeats its input"
            if agent.model == "echo"
            else f"it is a {'Python function' if agent.python is not None else 'command'}, not a model"
        )
        checker.error(
            "bad-value",
            f"agent {name!r} cannot use tools: {what}",
            checker.key_at((*path, "tools")),
            "give the tools to a model agent (model: scripted to try it offline)",
        )
    defined = list(checker.model.tools)
    seen: set[str] = set()
    for number, tool in enumerate(agent.tools):
        where = checker.at((*path, "tools", number))
        if tool not in checker.model.tools:
            checker.error(
                "unknown-reference",
                f"agent {name!r} lists tool {tool!r}, which is not defined{did_you_mean(tool, defined)}",
                where,
                f"tools defined: {', '.join(defined)}" if defined else "define it under tools: at the top",
            )
        elif tool in seen:
            checker.error("duplicate-name", f"agent {name!r} lists tool {tool!r} twice", where, "list each tool once")
        seen.add(tool)
    row = provider_of(agent.model or "")
    if agent.tool_mode == "native" and row is not None and row.api == "local":
        checker.warning(
            "bad-value",
            f"agent {name!r}: a model on this machine ignores tools offered natively and answers in plain text",
            checker.at((*path, "tool_mode")),
            "leave tool_mode out: model: local is told of its tools in JSON (tool_mode: json)",
        )


def check_tools_reach(checker: Checker, sites: Iterable[StepSite]) -> None:
    """An agent with tools called other than by a ``kind: step`` is not offered them: say so where it is."""
    agents = checker.model.agents

    def without_tools(ref: str | None, path: Path, how: str) -> None:
        name = (ref or "").removeprefix("agents.")
        agent = agents.get(name)
        if agent is not None and agent.tools:
            checker.warning(
                "ignored-key",
                f"agent {name!r} has tools, but {how} calls it without them",
                checker.at(path),
                "give the tools to the agent a kind: step uses",
            )

    for site in sites:
        step = site.step
        if isinstance(step, HitlStepModel) and step.answered_by is not None:
            without_tools(step.answered_by, (*site.path, "answered_by"), f"the simulated person of {step.name!r}")
        elif isinstance(step, LoopStepModel) and step.loop.history_management is not None:
            summarizer = step.loop.history_management.summarizer_agent
            if summarizer is not None:
                here = (*site.path, "loop", "history_management", "summarizer_agent")
                without_tools(f"agents.{summarizer}", here, f"loop {step.name!r}'s summary")
        elif isinstance(step, EnsembleStepModel):
            for number, participant in enumerate(step.ensemble.participants):
                here = (*site.path, "ensemble", "participants", number)
                if participant.answered_by is not None:
                    how = f"the simulated person of participant {participant.name!r}"
                    without_tools(participant.answered_by, (*here, "answered_by"), how)
                elif participant.uses is not None and participant.uses.startswith("agents."):
                    without_tools(participant.uses, (*here, "uses"), f"ensemble participant {participant.name!r}")
