"""Renders blueprint findings for people: ``file:line:col: error: message``, the source line, a hint."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from blueprints import Finding
from core import source_window

_STYLE = {"error": "bold red", "warning": "yellow", "note": "cyan"}


def _source_line(path: str, line: int, cache: dict[str, list[str]]) -> str | None:
    if path not in cache:
        try:
            # A byte that is not UTF-8 shows as U+FFFD: the line of a "not UTF-8 text" finding is shown too.
            cache[path] = Path(path).read_bytes().decode("utf-8", errors="replace").splitlines()
        except OSError:
            cache[path] = []
    lines = cache[path]
    return lines[line - 1] if 0 < line <= len(lines) else None


def render_findings(findings: Sequence[Finding], console: Console) -> None:
    cache: dict[str, list[str]] = {}
    for finding in findings:
        where = f"{finding.position}: " if finding.position else ""
        style = _STYLE.get(finding.severity, "bold")
        console.print(f"{escape(where)}[{style}]{finding.severity}[/]: {escape(finding.message)}")
        if finding.position is not None:
            text = _source_line(finding.position.file, finding.position.line, cache)
            if text is not None:
                shown, column = source_window(text, finding.position.column)  # a long line: the part around it
                width = max(4, len(str(finding.position.line)))  # line 11113 of a long file: the caret stays
                console.print(f"  [dim]{finding.position.line:>{width}} |[/] {escape(shown)}")
                gutter = " " * (width + 1)
                console.print(f"  [dim]{gutter}|[/] " + " " * (column - 1) + f"[{style}]^[/]")
        if finding.hint:
            console.print(f"  [dim]hint:[/] {escape(finding.hint)}")
