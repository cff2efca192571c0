"""``ToolSpec``: the definition of a tool, independent of YAML (the blueprint compiler fills it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.model.tools import Approve, ToolDef
from core.ports import ToolSessions


@dataclass(frozen=True)
class McpServerSpec:
    """An MCP server over stdio: the command that starts it, extra environment, the directory it runs in."""

    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    @property
    def key(self) -> str:
        """One server per distinct command line and environment in a run."""
        return "\x00".join(self.command) + "\x01" + "\x00".join(f"{k}={v}" for k, v in sorted(self.env.items()))


@dataclass(frozen=True)
class ToolSpec:
    """What a tool is. Exactly one of ``python``, ``command``, ``workflow`` or ``mcp`` is set.

    ``python`` is ``package.module:function`` (sync or async); its arguments' schema comes from the
    signature's type hints and its description from the docstring unless given here. ``command`` is an argv
    list: the arguments go to its stdin as JSON, its stdout is the result (JSON when it parses). ``workflow``
    names an imported workflow (``imports.triage``): it runs as a sub-workflow with the arguments as its input.
    ``mcp`` is a stdio MCP server: the tool is each of its tools (``include`` limits them), named as the server
    names them. ``approve`` None is the default: ``never``, except an MCP tool the server marks destructive,
    which asks. ``timeout`` (seconds) bounds one call of a ``python``, ``command`` or ``mcp`` tool
    (300 s for a command or an MCP server when not given)."""

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    approve: Approve | None = None
    python: str | None = None
    command: tuple[str, ...] = ()
    workflow: str | None = None
    mcp: McpServerSpec | None = None
    include: tuple[str, ...] = ()
    timeout: float | None = None
    cwd: str | None = None  # where a command: tool runs (the blueprint's folder); None: flujo's own directory


class DefinedTool:
    """What the tools whose definition is known when they are made share (the ``core.ports.Tool`` members but
    ``call``): a subclass sets ``_definition`` and ``_approve`` in its ``__init__``."""

    _definition: ToolDef
    _approve: Approve

    @property
    def name(self) -> str:
        return self._definition.name

    @property
    def approve(self) -> Approve:
        return self._approve

    async def definition(self, sessions: ToolSessions) -> ToolDef:
        return self._definition


def spec_definition(spec: ToolSpec, description: str) -> ToolDef:
    """The definition of the tool ``spec`` describes: its description (else ``description``) and its
    ``input_schema`` (else any object)."""
    said = spec.description or description
    return ToolDef(spec.name, said, spec.input_schema) if spec.input_schema is not None else ToolDef(spec.name, said)
