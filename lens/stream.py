"""The plain trace, line by line: ``flujo lens trace RUN`` into a pipe writes each node as it is laid out.

``trace_view`` (``lens.plain``) is one rich ``Tree``: printing it lays out every node into a buffer before
the first byte is written (seconds for a run of 10,000 events). ``trace_lines`` yields the same lines as
printing that tree with colours off (the tree's guides, each node's block laid out at the width left by its
depth, trailing spaces removed), one node at a time, so the first line comes at once and memory stays flat.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.console import Console, RenderableType

from lens import labels
from lens.plain import Expansion, call_block
from lens.tree import CallNode, Node, RunNode

_FORK, _END, _CONTINUE, _SPACE = "├── ", "└── ", "│   ", "    "
_ASCII = {_FORK: "+-- ", _END: "`-- ", _CONTINUE: "|   ", _SPACE: "    "}


def trace_lines(root: RunNode, console: Console, *, expand: Expansion) -> Iterator[str]:
    """The lines of ``trace_view(root, expand=expand)`` printed by ``console`` (colours off), without
    trailing spaces and without line ends."""
    guides = (lambda guide: _ASCII[guide]) if console.options.ascii_only else (lambda guide: guide)
    yield from _block(labels.label(root), console, console.width, "", "")
    stack: list[tuple[Iterator[tuple[bool, Node]], str, str]] = [(_with_last(root.children), "", "")]
    while stack:
        children, indent, prefix = stack[-1]
        step = next(children, None)
        if step is None:
            stack.pop()
            continue
        last, node = step
        first = indent + guides(_END if last else _FORK)
        rest = indent + guides(_SPACE if last else _CONTINUE)
        if isinstance(node, CallNode):
            path = _join(prefix, node.path)
            yield from _block(call_block(node, expand.opening(path), path), console, console.width, first, rest)
            continue
        yield from _block(labels.label(node), console, console.width, first, rest)
        if node.children:
            below = _join(prefix, node.path) if isinstance(node, RunNode) else prefix
            stack.append((_with_last(node.children), rest, below))


def _block(renderable: RenderableType, console: Console, width: int, first: str, rest: str) -> Iterator[str]:
    options = console.options.update(width=width - len(first), height=None)
    for number, line in enumerate(console.render_lines(renderable, options, pad=False)):
        yield ((rest if number else first) + "".join(segment.text for segment in line)).rstrip()


def _with_last(nodes: Sequence[Node]) -> Iterator[tuple[bool, Node]]:
    final = len(nodes) - 1
    return ((index == final, node) for index, node in enumerate(nodes))


def _join(prefix: str, path: str) -> str:
    return f"{prefix}/{path}" if prefix and path else prefix or path
