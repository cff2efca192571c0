"""A call of a ``workflow:`` tool (``core.tools.workflow_tool``): the sub-workflow runs as a child run at the
call's ``P/tool/N`` path (``core.policies.workflow``), on a fresh context, so nothing of it leaks into the
calling step's conversation or scratchpad.

The child run is durable as any sub-workflow's: a resumed run re-enters it and replays what it finished. A
question inside it pauses the run (resume continues inside the child). When it fails, the model is told so
(an error outcome) and the tool loop commits ``P/tool/N`` as a completed call with that outcome, so a resume
never runs the failed child again; the child run's own record stays ``failed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.context import RunContext
from core.model.errors import FlujoError, StoreUnavailable
from core.model.tools import ToolOutcome, result_text
from core.policies.body import BodyRunner
from core.policies.frame import Frame
from core.tools.workflow_tool import WorkflowTool


async def call_workflow_tool(
    tool: WorkflowTool, arguments: Mapping[str, Any], path: str, frame: Frame, body: BodyRunner
) -> ToolOutcome:
    """Run ``tool``'s sub-workflow with ``arguments`` as its input; its output, or its failure, as the outcome.
    Control signals (a pause, a limit, an abort) and a store that stopped answering stop the run as they are."""
    from core.policies.workflow import run_workflow  # with the parts of the conversation a sub-workflow uses

    try:
        output = await run_workflow(tool.step, dict(arguments), RunContext(), path, frame, body)
    except StoreUnavailable:
        raise
    except FlujoError as error:
        return ToolOutcome(f"Error: the workflow {tool.name} failed: {error.message}", error=True)
    return ToolOutcome(result_text(output), output)
