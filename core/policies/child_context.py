"""What a sub-workflow receives from its parent and what it gives back (docs/blueprints.md#sub-workflows).

The parent decides what the child sees: the child starts from a fresh ``RunContext`` holding only the
step's input, placed by ``input_to`` (and a copy of the parent's scratchpad with ``inherit_context``).
It never sees the parent's conversation history, step outputs or HITL answers. When the child completes,
only what the step names comes back: its output (as the step's output), the ``outputs`` mappings, or
with ``updates_context`` and no ``outputs`` the child's scratchpad.

All of this is a pure function of the step's input and the child's final state, so re-entering a child
on resume (its steps replayed from its journal) gives the parent exactly the same values again.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.context import AGENT_COMMAND_KEY, RunContext
from core.model.errors import RunError
from core.policies.context_writes import sink
from core.steps.kinds import CHILD_PATH_ROOTS, WorkflowStep

# The child's stop_when bookkeeping; it belongs to the loops of the run that wrote it.
_PRIVATE_KEYS = (AGENT_COMMAND_KEY,)


@dataclass(frozen=True)
class ChildStart:
    """How a child run starts: its input (the first step's input and its ``initial_prompt``) and scratchpad."""

    prompt: Any
    scratchpad: dict[str, Any] = field(default_factory=dict)


def child_start(step: WorkflowStep, value: Any, parent: RunContext) -> ChildStart:
    """The child's starting input and scratchpad for the step input ``value``."""
    scratchpad: dict[str, Any] = {}
    if step.inherit_context:
        scratchpad = {k: copy.deepcopy(v) for k, v in parent.scratchpad.items() if k not in _PRIVATE_KEYS}
    if step.input_to in ("scratchpad", "both"):
        if isinstance(value, Mapping):
            scratchpad.update(copy.deepcopy(dict(value)))
        else:
            scratchpad[step.input_key] = copy.deepcopy(value)
    prompt = value if step.input_to in ("initial_prompt", "both") else None
    return ChildStart(prompt=prompt, scratchpad=scratchpad)


def give_back(step: WorkflowStep, child: RunContext, output: Any, parent: RunContext) -> None:
    """Write what ``step`` maps back from the finished child into the parent's scratchpad."""
    if step.outputs is not None:
        view = child.view()
        values = [(m.parent, read_child_path(view, output, m.child, step.name)) for m in step.outputs]
        for target, value in values:  # read them all first: a missing one leaves the parent untouched
            sink(parent, target, value)
    elif step.updates_context:
        for key, value in child.scratchpad.items():
            if key not in _PRIVATE_KEYS:
                parent.scratchpad[key] = copy.deepcopy(value)


def read_child_path(view: Mapping[str, Any], output: Any, path: str, step: str) -> Any:
    """The value at ``path`` in the child's final context ``view`` (``output`` is the child's output)."""
    parts = path.split(".")
    if parts[0] == "context":
        parts = parts[1:]
    if not parts or parts[0] not in CHILD_PATH_ROOTS:
        raise RunError(
            f"sub-workflow {step!r}: cannot read {path!r} from the child",
            hint=f"start the path with one of {', '.join(CHILD_PATH_ROOTS)}",
        )
    node: Any = output if parts[0] == "output" else view[parts[0]]
    for depth, part in enumerate(parts[1:], start=2):
        found, node = _child_item(node, part)
        if not found:
            where = ".".join(parts[:depth])
            read = "" if where == path else f" (outputs reads {path})"
            raise RunError(
                f"sub-workflow {step!r} finished without {where}{read}",
                hint="make the imported blueprint set it (e.g. with sink_to), or fix the outputs path",
            )
    return copy.deepcopy(node)


def _child_item(node: Any, part: str) -> tuple[bool, Any]:
    if isinstance(node, Mapping):
        return part in node, node.get(part)
    if isinstance(node, Sequence) and not isinstance(node, str) and part.lstrip("-").isdigit():
        index = int(part)
        if -len(node) <= index < len(node):
            return True, node[index]
    return False, None
