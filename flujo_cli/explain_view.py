"""Renders an explanation (``blueprints.explain.Explanation``) for people: sections, numbered steps in
reading order, nested steps indented under the step that holds them.

Lines are wrapped here (``textwrap``) rather than by rich, so that a wrapped line keeps its indent and no
line ends in padding spaces; styles apply to the leading label of a line only.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from blueprints import Explanation, Note, StepExplanation, StepGroup

_INDENT = 2


def _say(console: Console, indent: int, text: str, *, lead: str = "", style: str = "") -> None:
    """``lead`` + ``text`` wrapped at the console's width, every line at ``indent``; ``lead`` styled."""
    width = max(40, console.width - indent)
    lines = textwrap.wrap(lead + text, width=width, break_on_hyphens=False, break_long_words=False) or [""]
    pad = " " * indent
    first = lines[0]
    if lead and style and first.startswith(lead):
        head = f"[{style}]{escape(lead)}[/]{escape(first[len(lead) :])}"
    else:
        head = escape(first)
    console.print(pad + head, soft_wrap=True)
    for line in lines[1:]:
        console.print(pad + escape(line), soft_wrap=True)


def _step(console: Console, step: StepExplanation, indent: int) -> None:
    number = step.number if "." in step.number else f"{step.number}."
    where = f"{step.kind}, line {step.line}" if step.line is not None else step.kind
    console.print(
        f"{' ' * indent}{escape(number)} [bold]{escape(step.name)}[/] [dim]({escape(where)})[/]", soft_wrap=True
    )
    body = indent + len(number) + 1
    _say(console, body, step.does)
    for part in step.parts:
        if isinstance(part, Note):
            _say(console, body, part.text, lead=f"{part.label}: ", style="cyan")
        elif isinstance(part, StepGroup):
            _say(console, body, "", lead=f"{part.label}:", style="cyan")
            for inner in part.steps:
                _step(console, inner, body + _INDENT)


def _section(console: Console, title: str, lines: Sequence[str]) -> None:
    console.print()
    console.print(f"[bold]{escape(title)}[/]")
    for text in lines:
        _say(console, _INDENT, text)


def render_explanation(explanation: Explanation, console: Console) -> None:
    console.print(f"[bold]{escape(explanation.name)}[/] [dim]· {escape(explanation.file)}[/]", soft_wrap=True)
    _say(console, 0, explanation.overview)
    if explanation.agents:
        used = {agent.name: ", ".join(agent.used_by) or "no step" for agent in explanation.agents}
        lines = [
            f"{a.name}: {a.what}; used by {used[a.name]}" + (f"; {a.tools.words}" if a.tools is not None else "")
            for a in explanation.agents
        ]
        _section(console, "Agents", lines)
    console.print()
    console.print("[bold]Steps[/]")
    for step in explanation.steps:
        _step(console, step, _INDENT)
    _section(console, "You are asked", explanation.human)
    _section(console, "Returns", (explanation.returns,))
    _section(console, "Cost", explanation.cost)
    if explanation.warnings:
        console.print()
        console.print(f"[yellow]flujo validate reports {explanation.warnings} warning(s) for this file.[/]")
