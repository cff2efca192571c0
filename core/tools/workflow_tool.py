"""``workflow:`` tools: a sub-workflow (``imports.X``) a model may call, the call's arguments its input.

The tool holds the sub-workflow as a ``WorkflowStep``; an agent step's tool loop runs it
(``core.policies.tool_workflow``) as a child run at the call's ``P/tool/N`` path, on a context of its own, so
nothing of it reaches the calling step's conversation or scratchpad. The arguments (a JSON object) are the
child's initial prompt and are merged into its scratchpad (``input_to: both``), so its templates can read
``context.<argument>``; the child's output is the tool's result. The model is told of it by the ``description``
and ``input_schema`` the blueprint gives, else a generic description and any JSON object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.errors import ConfigError
from core.model.tools import Approve, ToolCallContext, ToolOutcome
from core.ports import ToolSessions
from core.steps.kinds import Pipeline, WorkflowStep
from core.tools.spec import DefinedTool, ToolSpec, spec_definition


class WorkflowTool(DefinedTool):
    """A ``workflow:`` tool (``core.ports.Tool``); ``step`` is what the tool loop runs."""

    def __init__(self, spec: ToolSpec, pipeline: Pipeline) -> None:
        if not spec.workflow:
            raise ConfigError(f"tools.{spec.name} is not a workflow: tool", hint="give it workflow: imports.NAME")
        self.step = WorkflowStep(name=spec.name, pipeline=pipeline, input_to="both")
        self._approve: Approve = spec.approve or "never"
        self._definition = spec_definition(spec, f"Runs the workflow {spec.workflow} with these arguments as its input")

    async def call(self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions) -> ToolOutcome:
        """Only an agent step's tool loop can run a sub-workflow (it needs the run): called elsewhere, the call
        fails, saying so."""
        return ToolOutcome(f"Error: the workflow tool {self.name} runs only in an agent step's tool loop", error=True)
