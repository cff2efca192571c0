"""How a step's output lands in the context: step outputs by name, ``sink_to`` and ``updates_context``.

These are pure functions of the output, so replaying a committed output on resume reproduces the same
context exactly. What lands in the scratchpad is a copy: a later write into the scratchpad (``sink_to:
cfg.extra``, a map's ``init`` append) must never change a step's output, which stays as it was produced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.context import RunContext
from core.conversation import is_context
from core.model.errors import RunError
from core.model.views import copied


def record_output(ctx: RunContext, name: str, output: Any) -> None:
    """Make ``output`` available as ``steps.<name>.output``.

    An output that is the context itself (a step passing along, or an agent echoing, the context a loop
    propagates) holds ``steps``, among them the output this record replaces. Were that one a context too,
    every pass would nest the earlier ones inside the next (growing exponentially with two such steps). So
    the step outputs inside a recorded context that are themselves a context are kept without their own
    ``steps``: a recorded context nests at most one level, and the context grows with what was said.
    """
    if is_context(output) and isinstance(output["steps"], Mapping):
        output = {**output, "steps": {key: _flat(record) for key, record in output["steps"].items()}}
    ctx.steps[name] = {"output": output}


def _flat(record: Any) -> Any:
    """A ``steps.<name>`` record whose output, if it is a context, is kept without its ``steps``."""
    if isinstance(record, Mapping) and is_context(record.get("output")):
        return {**record, "output": {k: v for k, v in record["output"].items() if k != "steps"}}
    return record


def scratchpad_slot(ctx: RunContext, target: str) -> tuple[dict[str, Any], str]:
    """The mapping and key that ``target`` names, creating missing levels on the way.

    Every target lives in the scratchpad: ``goal``, ``scratchpad.goal`` and ``context.scratchpad.goal``
    mean the same place.
    """
    parts = target.split(".")
    if parts[0] == "context":
        parts = parts[1:]
    if parts and parts[0] == "scratchpad":
        parts = parts[1:]
    if not parts or not all(parts):
        raise RunError(f"cannot write to {target!r}", hint="use a path like scratchpad.goal")
    node = ctx.scratchpad
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    return node, parts[-1]


def sink(ctx: RunContext, target: str, value: Any) -> None:
    """Write ``value`` at ``target`` (see ``scratchpad_slot``)."""
    node, key = scratchpad_slot(ctx, target)
    node[key] = copied(value)


def update_context(ctx: RunContext, step: str, output: Any) -> None:
    """``updates_context: true``: merge a mapping output into the scratchpad.

    A key ``scratchpad`` inside the output is merged itself (Flujo's shape); other keys go to the
    scratchpad directly.
    """
    if not isinstance(output, Mapping):
        raise RunError(
            f"step {step!r} has updates_context: true but its output is {type(output).__name__}, not a mapping",
            hint="give its agent an output_schema of type object, or remove updates_context",
        )
    for key, value in output.items():
        if key == "scratchpad" and isinstance(value, Mapping):
            ctx.scratchpad.update(copied(dict(value)))
        else:
            ctx.scratchpad[key] = copied(value)


def note_agent_command(ctx: RunContext, output: Any) -> None:
    """Keep the last agent output that carries an ``action`` as ``ctx.agent_command``
    (``scratchpad.last_agent_command``).

    This is what ``stop_when: agent_finished`` reads (``...last_agent_command.action == 'finish'``).
    """
    if (type(output) is dict or isinstance(output, Mapping)) and "action" in output:  # a dict without the ABC check
        ctx.agent_command = copied(dict(output))


def agent_finished(ctx: RunContext) -> bool:
    """True when the last agent command (see ``note_agent_command``) is ``{"action": "finish", ...}``."""
    command = ctx.agent_command
    return (type(command) is dict or isinstance(command, Mapping)) and command.get("action") == "finish"
