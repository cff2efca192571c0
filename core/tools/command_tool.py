"""``command:`` tools: a program run once per call, its arguments as JSON on its stdin, its stdout the result.

The same rules as ``command:`` agents (``core.agents.child_process.run_command``): the program runs in a
process group of its own with a parent-death signal (Linux), bounded in time (``timeout``, else 300 s) and in
output (the setting ``bounds.agent_output_max_bytes``), in flujo's environment with ``FLUJO_RUN_ID``,
``FLUJO_STEP_PATH`` (the call's ``P/tool/N`` path) and ``FLUJO_ATTEMPT`` on top; its process group is recorded
(an ``agent.process`` event) so that a resumed run ends what is left of it. Its stdout is parsed as JSON when it
parses, else kept as text. A program that cannot start, exits with a status other than 0, runs out of time or
prints too much gives the model an error outcome saying so (with the tail of its stderr), never a raise.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from core.agents.child_process import CommandFailed, parse_output, run_command
from core.agents.script import DEFAULT_COMMAND_TIMEOUT_S
from core.model.errors import ConfigError
from core.model.tools import Approve, ToolCallContext, ToolOutcome, result_text
from core.ports import ToolSessions
from core.settings.config import tool_environment
from core.tools.spec import DefinedTool, ToolSpec, spec_definition


class CommandTool(DefinedTool):
    """A ``command:`` tool (``core.ports.Tool``)."""

    def __init__(self, spec: ToolSpec) -> None:
        if not spec.command:
            raise ConfigError(
                f"tools.{spec.name}: command is empty", hint='give an argv list, e.g. ["python3", "lookup.py"]'
            )
        self.argv = tuple(spec.command)
        self.timeout = spec.timeout if spec.timeout is not None else DEFAULT_COMMAND_TIMEOUT_S
        self.cwd = spec.cwd
        self._approve: Approve = spec.approve or "never"
        self._definition = spec_definition(spec, f"Runs {shlex.join(self.argv)}")

    async def call(self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions) -> ToolOutcome:
        facts = {"FLUJO_RUN_ID": where.run_id, "FLUJO_STEP_PATH": where.path, "FLUJO_ATTEMPT": str(where.attempt)}
        try:
            stdout = await run_command(
                self.argv,
                json.dumps(dict(arguments), ensure_ascii=False).encode(),
                owner=f"tools.{self.name}",
                env=tool_environment(facts),
                timeout=self.timeout,
                started=where.process_started,
                cwd=self.cwd,
            )
        except CommandFailed as failed:  # the tool's own failure: the model reads it and decides what next
            return ToolOutcome(f"Error: {failed.message}", error=True)
        value = parse_output(stdout)
        return ToolOutcome(result_text(value), value)
