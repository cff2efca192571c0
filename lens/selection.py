"""Which steps of a run's span tree a ``--step`` or ``--expand`` value names.

A value names steps by any of: a step's name as the blueprint writes it (``clarify``; ``chat/1`` for the step
whose path segment is ``chat%2F1``), a run path (``chat/3/clarify``: the step in iteration 3; the path of a
composite step or of an iteration names all below it), or a step path (``chat/clarify``: the names of the
steps that enclose it and its own, without iterations, items or branch keys: the step in every iteration).
A step may share its name with a loop, map or parallel step it is inside, so a name alone can name two steps
(``clarify`` and ``clarify/clarify``): ``step_paths_named`` lists them, for the caller to ask which.

Paths inside a child run are prefixed with the path of the step that started it (``review/critique``). The
turns and calls of an agent step's tool loop are below it by their names (``answer/lookup``: every call of
``lookup`` in step ``answer``), so a tool called twice is not two steps of one name.
"""

from __future__ import annotations

import dataclasses

import core
from lens.tree import GroupNode, Node, RunNode, StepNode


def focus(root: RunNode, step: str) -> RunNode | None:
    """A copy of ``root`` that keeps the steps ``step`` names with everything below them, and the iterations,
    branches and runs leading to them; None when no step matches."""
    wanted = step.strip("/")
    kept = _kept_children(root, wanted, prefix="", names="")
    return dataclasses.replace(root, children=kept) if kept else None


def steps_named(root: RunNode, step: str) -> list[str]:
    """The full run paths of the steps ``step`` names, matched as ``focus`` matches them. Empty when it names
    no step."""
    wanted = step.strip("/")
    found: list[str] = []
    stack: list[tuple[Node, str, str]] = [(root, "", "")]
    while stack:
        node, prefix, names = stack.pop()
        for child in node.children:
            below, below_names = _below(child, prefix, names)
            if isinstance(child, StepNode):
                full = f"{prefix}/{child.path}" if prefix else child.path
                if _names(child, full, below_names, wanted):
                    found.append(full)
                    continue
            if isinstance(child, StepNode | GroupNode | RunNode):
                stack.append((child, below, below_names))
    return sorted(found)


def step_paths_named(root: RunNode, name: str) -> list[str]:
    """The step paths (``clarify``, ``clarify/clarify``) of the steps whose name is ``name`` in one run (one
    blueprint: the run's own, or a sub-workflow's child run), each once, when there are several; else empty.
    Steps of one name in different runs are not ambiguous: the name names them all, as before."""
    found: dict[int, set[str]] = {}  # id(run) -> step paths
    stack: list[tuple[Node, str, str, RunNode]] = [(root, "", "", root)]
    while stack:
        node, prefix, names, run = stack.pop()
        for child in node.children:
            below, below_names = _below(child, prefix, names)
            if isinstance(child, StepNode) and child.name == name:
                found.setdefault(id(run), set()).add(below_names)
            if isinstance(child, StepNode | GroupNode | RunNode):
                stack.append((child, below, below_names, child if isinstance(child, RunNode) else run))
    return next((sorted(paths) for paths in found.values() if len(paths) > 1), [])


def _below(child: Node, prefix: str, names: str) -> tuple[str, str]:
    """The run-path prefix and the step path of what is below ``child``: a child run's steps are prefixed
    with the path of the step that started it; a step adds its own segment to the step path."""
    if isinstance(child, RunNode):
        return (f"{prefix}/{child.path}" if prefix else child.path), names
    if isinstance(child, StepNode):
        segment = child.path.rpartition("/")[2]
        if child.record is not None and child.record.kind in core.TOOL_LOOP_KINDS:
            segment = child.name  # no step of the blueprint: a tool's calls in a step are one, by its name
        return prefix, f"{names}/{segment}" if names else segment
    return prefix, names


def _names(step: StepNode, full: str, step_path: str, wanted: str) -> bool:
    return step.name == wanted or full == wanted or full.startswith(wanted + "/") or step_path == wanted


def _kept_children(node: Node, wanted: str, *, prefix: str, names: str) -> list[Node]:
    kept: list[Node] = []
    for child in node.children:
        below, below_names = _below(child, prefix, names)
        if isinstance(child, StepNode):
            full = f"{prefix}/{child.path}" if prefix else child.path
            if _names(child, full, below_names, wanted):
                kept.append(child)
                continue
        if isinstance(child, StepNode | GroupNode | RunNode):
            inner = _kept_children(child, wanted, prefix=below, names=below_names)
            if inner:
                kept.append(dataclasses.replace(child, children=inner))
    return kept
