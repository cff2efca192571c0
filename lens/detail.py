"""A node whole: what the TUI's right-hand pane shows for the selected node, and the text its search
looks in (``search_text``)."""

from __future__ import annotations

import json
from datetime import tzinfo
from typing import assert_never

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

import lens.figures as figures
import lens.labels as labels
from lens.plain import call_block, run_facts
from lens.preview import compact, full_text
from lens.tree import CallNode, EventNode, GroupNode, MessageNode, Node, RunNode, StepNode


def detail(node: Node, *, tz: tzinfo | None = None) -> RenderableType:
    """Everything lens knows of ``node``, nothing collapsed."""
    if isinstance(node, RunNode):
        record = node.record
        parts: list[RenderableType] = [run_facts(record, tz=tz, previews=False)]
        for title, value in (("input", record.input), ("output", record.output)):
            parts += [Text(), Text(title, style="bold"), Text(full_text(value) if value is not None else "(none)")]
        return Group(*parts)
    if isinstance(node, StepNode):
        return _step(node, tz)
    if isinstance(node, GroupNode):
        return Group(Text(node.title, style="bold"), Text(f"{figures.count(len(node.children), 'step')} ran in it"))
    if isinstance(node, CallNode):
        return call_block(node, "whole", node.path)
    if isinstance(node, MessageNode):
        return Group(
            Text.assemble((node.role, f"bold {labels.role_style(node.role)}"), f"  message {node.index + 1}"),
            Text(),
            Text(node.content),
        )
    if isinstance(node, EventNode):
        payload = json.dumps(dict(node.event.payload), indent=2, ensure_ascii=False, default=str)
        return Group(labels.label(node), Text(), Text(figures.when(node.event.ts, tz), style="dim"), Text(payload))
    assert_never(node)


def _step(node: StepNode, tz: tzinfo | None) -> RenderableType:
    record = node.record
    head = labels.label(node)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    grid.add_row("path", node.path)
    if record is None:
        grid.add_row("status", f"{node.status} (no result is recorded for this step)")
        return Group(head, Text(), grid)
    grid.add_row("kind", record.kind)
    grid.add_row("started", f"{figures.when(record.started_at, tz)} · took {figures.duration(record.duration_s)}")
    grid.add_row("usage", labels.usage_words(node.usage, always=True))
    if record.error:
        grid.add_row("error", Text(record.error, style="red"))
    parts: list[RenderableType] = [head, Text(), grid]
    for title, value in (("input", record.input), ("output", record.output)):
        parts += [Text(), Text(title, style="bold"), Text(full_text(value) if value is not None else "(none)")]
    return Group(*parts)


def search_text(node: Node) -> str:
    """The text a search looks in: the node's label and, for messages, events and steps, their content."""
    words = labels.label(node).plain
    if isinstance(node, MessageNode):
        return f"{words}\n{node.content}"
    if isinstance(node, EventNode):
        return f"{words}\n{compact(dict(node.event.payload))}"
    if isinstance(node, StepNode) and node.record is not None:
        return f"{words}\n{node.path}\n{compact(node.record.input)}\n{compact(node.record.output)}"
    if isinstance(node, CallNode) and node.reply is not None:
        return f"{words}\n{compact(node.reply.output)}"
    return words
