"""The plain (non-interactive) views, as rich renderables: the run list, a run's steps (``show``) and its
span tree with the prompts sent (``trace``).

Prompts are collapsed by default (``Expansion``): each message to its first lines, a long conversation to
its first (system) message and its latest ones, with a note of what is hidden and the ``--expand`` that
shows it. Everything shown comes from a masked snapshot (``lens.masking``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any, Literal

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

import lens.figures as figures
import lens.labels as labels
from core import RunRecord, terminal_safe
from lens.listing import RunRow
from lens.preview import Collapsed, collapse, compact, full_text, one_line
from lens.selection import steps_named
from lens.tree import CallNode, EventNode, MessageNode, Node, RunNode, StepNode

SHOWN_MESSAGES = 6
"""A collapsed call with more messages shows its first (system) message and the latest ones, up to this."""

Mode = Literal["show", "trace"]
Opening = Literal["whole", "collapsed", "none"]
"""How an agent call is shown: every message whole, collapsed to a few lines each, or only its label."""


@dataclass(frozen=True)
class Expansion:
    """Which prompts ``trace`` shows whole: all (``--expand all``), none (``--expand none``: one line per
    call), or those of the steps at or below ``paths`` (a path such as ``chat/3/clarify``, or a step name);
    the others collapsed."""

    everything: bool = False
    nothing: bool = False
    paths: tuple[str, ...] = ()

    @classmethod
    def parse(cls, values: Sequence[str]) -> Expansion:
        return cls(
            everything="all" in values,
            nothing="none" in values,
            paths=tuple(v.strip("/") for v in values if v not in ("all", "none")),
        )

    def opening(self, path: str) -> Opening:
        """How the calls of the step at ``path`` are shown (its last segment unescaped is its name)."""
        name = path.rpartition("/")[2].replace("%2F", "/").replace("%25", "%")
        if self.everything or any(path == p or path.startswith(p + "/") or name == p for p in self.paths):
            return "whole"
        return "none" if self.nothing else "collapsed"

    def resolved(self, root: RunNode) -> tuple[Expansion, list[str]]:
        """This expansion with each step name or path replaced by the full paths of the steps it names in
        ``root`` (``steps_named``: a name as the blueprint writes it, or a path), and the values that name
        no step."""
        paths: list[str] = []
        unknown: list[str] = []
        for value in self.paths:
            found = steps_named(root, value)
            paths.extend(found)
            if not found:
                unknown.append(value)
        return Expansion(everything=self.everything, nothing=self.nothing, paths=tuple(paths)), unknown


def runs_table(rows: Sequence[RunRow], *, tz: tzinfo | None = None) -> Table:
    """``lens list``: one line per run (child runs indented under their parent when both are listed)."""
    threads = any(row.record.thread for row in rows)
    held = any(row.status == "running" for row in rows)  # who executes them (a worker's host and pid)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 1, 0, 0))
    for heading, justify in (
        ("RUN", "left"),
        ("BLUEPRINT", "left"),
        ("STATUS", "left"),
        ("STARTED", "left"),
        ("TOOK", "right"),
        ("STEPS", "right"),
        ("TOKENS", "right"),
        ("COST", "right"),
    ):
        table.add_column(heading, justify=justify, no_wrap=heading != "BLUEPRINT")  # type: ignore[arg-type]
    if threads:
        table.add_column("THREAD")
    if held:
        table.add_column("HELD BY")
    for row in rows:
        record = row.record
        run_id = Text("  " * (row.depth - 1) + "└ " if row.depth else "") + Text(record.run_id, style="cyan")
        blueprint = Text(record.pipeline_name)
        if record.parent_run_id is not None and row.depth == 0:
            blueprint.append(f" (child of {record.parent_run_id})", style="dim")
        cells: list[RenderableType] = [
            run_id,
            blueprint,
            _status_cell(row),
            figures.when(record.created_at, tz, seconds=False),
            figures.duration(labels.run_duration(record)),
            str(row.steps),
            figures.tokens(record.usage),
            figures.cost(record.usage),
        ]
        if threads:
            cells.append(record.thread or "")
        if held:
            cells.append(record.owner or "" if row.status == "running" else "")
        table.add_row(*cells)
    return table


def _status_cell(row: RunRow) -> Text:
    """``… running``, or for a run whose process is gone ``⏹ interrupted (process 4242 is gone)``."""
    text = labels.status_text(row.status)
    if row.note:
        text.append(f" ({row.note})", style="yellow")
    return text


def show_view(root: RunNode, *, tz: tzinfo | None = None, steps: int | None = None) -> RenderableType:
    """``lens show``: the run's facts, then its steps in execution order with their input and output."""
    return Group(run_facts(root.record, tz=tz, steps=steps), Text(), _tree(root, "show", Expansion()))


def trace_view(root: RunNode, *, expand: Expansion = Expansion(), tz: tzinfo | None = None) -> RenderableType:
    """``lens trace``: the span tree, each agent call with the messages it was sent."""
    return _tree(root, "trace", expand)


def run_facts(
    record: RunRecord, *, tz: tzinfo | None = None, steps: int | None = None, previews: bool = True
) -> RenderableType:
    """The head of ``lens show``: status, blueprint, when, how long, usage, input and output (one-line
    previews, unless ``previews`` is False: the caller shows them whole), error, pause point."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    grid.add_row("status", labels.status_text(record.status))
    grid.add_row("blueprint", Text(record.pipeline_name + (f"  ({record.source})" if record.source else "")))
    if record.parent_run_id:
        grid.add_row("child of", Text(f"run {record.parent_run_id} (a sub-workflow)"))
    if record.thread:
        grid.add_row("thread", Text(record.thread))
    started = figures.when(record.created_at, tz)
    took = figures.duration(labels.run_duration(record))
    grid.add_row("started", Text(f"{started} · took {took}" + (f" · {figures.count(steps, 'step')}" if steps else "")))
    grid.add_row("usage", Text(labels.usage_words(record.usage, always=True)))
    if previews:
        grid.add_row("input", _preview(record.input))
        output = _preview(record.output)
        if one_line(record.output) != full_text(record.output) and record.output is not None:
            output.append("  (--final-output prints it whole)", style="dim")
        grid.add_row("output", output)
    replayed = labels.replay_words((record.options or {}).get("replay_report"))
    if replayed is not None:
        grid.add_row("replay of", replayed)
    if record.error:
        grid.add_row("error", Text(record.error, style="red"))
    if record.status == "paused" and record.pause_path:
        grid.add_row("waiting at", Text(f"{record.pause_path}: {record.pause_message or ''}", style="yellow"))
    if record.owner:
        grid.add_row("executed by", Text(record.owner))
    return Group(Text.assemble(("run ", "bold"), (record.run_id, "bold cyan")), grid)


def _preview(value: Any) -> Text:
    return Text("(none)", style="dim") if value is None else Text(one_line(value, 90))


def _tree(root: RunNode, mode: Mode, expand: Expansion) -> Tree:
    tree = Tree(labels.label(root))
    _add(tree, root.children, mode, expand, prefix="")
    return tree


def _add(branch: Tree, nodes: Sequence[Node], mode: Mode, expand: Expansion, *, prefix: str) -> None:
    for node in nodes:
        if mode == "show" and isinstance(node, CallNode | EventNode | MessageNode):
            continue
        if isinstance(node, CallNode):
            full_path = _join(prefix, node.path)
            branch.add(call_block(node, expand.opening(full_path), full_path))
            continue
        if isinstance(node, StepNode) and mode == "show":
            child = branch.add(_step_block(node))
        else:
            child = branch.add(labels.label(node))
        below = _join(prefix, node.path) if isinstance(node, RunNode) else prefix
        _add(child, node.children, mode, expand, prefix=below)


def _join(prefix: str, path: str) -> str:
    return f"{prefix}/{path}" if prefix and path else prefix or path


def _step_block(node: StepNode) -> RenderableType:
    """A step's label, then its input and output on one line each (and its error). Plain lines rather than
    a table: a run of thousands of steps prints in a fraction of the time."""
    record = node.record
    if record is None:
        return labels.label(node)
    shown = labels.tool_loop_values(record)
    if shown is None:
        lines = [labels.label(node), _field("in", _preview(record.input)), _field("out", _preview(record.output))]
    else:  # a tool call: its arguments and result; a model turn: what it said and asked for
        given, said = shown
        lines = [labels.label(node), *([_field("in", _preview(given))] if given is not None else [])]
        lines.append(_field("out", Text(one_line(said, 90))))
    if record.error:
        lines.append(_field("error", Text(record.error, style="red"), wrap=True))
    return Group(*lines)


def _field(name: str, value: Text, *, wrap: bool = False) -> Text:
    line = Text.assemble((f"{name:<5} ", "dim"), value)
    if not wrap:
        line.no_wrap, line.overflow = True, "ellipsis"
    return line


@dataclass(frozen=True)
class CallBlock:
    """An agent call as ``trace`` shows it: its label (``head``), then unless it is shown as one line
    (``grid`` False) a two-column grid of ``rows`` (who, what: each message sent, the text of attempts cut
    off, repairs, the reply) and an optional ``note``. A renderable; ``lens.stream`` lays the parts out
    itself, line by line."""

    head: Text
    grid: bool = False
    rows: tuple[tuple[Text, Text], ...] = ()
    note: Text | None = None

    def __rich__(self) -> RenderableType:
        if not self.grid:
            return self.head
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True)
        table.add_column()
        for row in self.rows:
            table.add_row(*row)
        return Group(self.head, table, *([self.note] if self.note is not None else []))


def call_block(call: CallNode, opened: Opening, path: str) -> CallBlock:
    """An agent call: its label, then (unless ``none``) the messages it sent and the reply it got, each
    whole or collapsed; a collapsed call ends with a note of what is hidden and how to show it."""
    head = labels.label(call)
    hint = f"--expand {path} shows it whole"
    if opened == "none":
        return CallBlock(
            Text.assemble(head, (f"  ({figures.count(len(call.prompt.messages), 'message')} hidden; {hint})", "dim"))
        )
    rows: list[tuple[Text, Text]] = []
    hidden = False
    messages: list[MessageNode | None] = list(call.messages)
    if opened == "collapsed" and len(messages) > SHOWN_MESSAGES:
        first = [messages[0]] if call.messages[0].role == "system" else []
        messages = [*first, None, *messages[len(messages) - (SHOWN_MESSAGES - len(first)) :]]
    for message in messages:
        if message is None:
            count = len(call.messages) - (len(messages) - 1)
            rows.append(
                (Text("…", style="dim"), Text(f"{figures.count(count, 'earlier message')} hidden", style="dim"))
            )
            hidden = True
            continue
        shown, cut = _content(message.content, opened)
        hidden = hidden or cut
        rows.append((Text(message.role, style=labels.role_style(message.role)), shown))
    for stopped in call.cuts:  # what an attempt streamed before it was cut off: never the reply
        shown, cut = _content(stopped.received, opened)
        hidden = hidden or cut
        rows.append((Text("✂ cut off", style="red"), Text.assemble(shown, (f"\n({labels.cut_words(stopped)})", "red"))))
    for repair in call.repairs:
        rows.append((Text("repair", style="yellow"), Text(one_line(repair.error, 90), style="yellow")))
    if call.reply is not None:
        output = call.reply.output
        shown, cut = _content(_reply(call, output, opened), opened)
        hidden = hidden or cut
        rows.append((Text("→ reply", style="bold"), shown))
    note = Text(f"(collapsed: {hint})", style="dim") if hidden else None
    return CallBlock(head, grid=True, rows=tuple(rows), note=note)


def _reply(call: CallNode, output: Any, opened: Opening) -> str:
    """A call's reply as text: a tool loop's turn as what the model said and the calls it asked for."""
    if call.turn:
        return labels.turn_words(output)
    return full_text(output) if opened == "whole" else compact(output)


def _content(text: str, opened: Opening) -> tuple[Text, bool]:
    """A message's text, whole or collapsed, and whether anything of it is hidden."""
    text = terminal_safe(text)  # as a terminal may show it: its escape sequences as pictures
    if opened == "whole":
        return Text(text), False
    shown: Collapsed = collapse(text)
    if shown.complete:
        return Text(shown.shown), False
    note = []
    if shown.hidden_lines:
        note.append(figures.count(shown.hidden_lines, "more line"))
    note.append(f"{figures.count(shown.hidden_chars, 'character')} hidden")
    return Text.assemble(shown.shown, ("\n… " + ", ".join(note), "dim")), True
