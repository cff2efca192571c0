"""Values as text: whole (for details and ``--expand``), on one line (for previews), or collapsed to a few
lines with a count of what is hidden (for long prompts in ``flujo lens trace``). All as a terminal may show
them: a stored text's escape sequences are shown as pictures (``core.text.terminal``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core import terminal_safe

ONE_LINE_WIDTH = 72
COLLAPSED_LINES = 3
LINE_CHARS = 200
"""A collapsed text shows at most ``COLLAPSED_LINES`` lines, each cut at ``LINE_CHARS`` characters."""


def full_text(value: Any) -> str:
    """``value`` whole: a text as it is, anything else as indented JSON; as a terminal may show it."""
    if isinstance(value, str):
        return terminal_safe(value)
    return terminal_safe(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def compact(value: Any) -> str:
    """``value`` as a text: as it is, or compact JSON on one line; as a terminal may show it."""
    if isinstance(value, str):
        return terminal_safe(value)
    return terminal_safe(json.dumps(value, ensure_ascii=False, default=str))


def one_line(value: Any, width: int = ONE_LINE_WIDTH) -> str:
    """``value`` on one line of at most ``width`` characters: line breaks shown as ``⏎``, cut with ``…``."""
    text = " ⏎ ".join(line.strip() for line in compact(value).strip().splitlines())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


@dataclass(frozen=True)
class Collapsed:
    """The first lines of a text, and how much of it they leave out."""

    shown: str
    hidden_lines: int
    hidden_chars: int

    @property
    def complete(self) -> bool:
        return self.hidden_chars == 0


def collapse(text: str, *, lines: int = COLLAPSED_LINES, line_chars: int = LINE_CHARS) -> Collapsed:
    """The first ``lines`` lines of ``text``, each cut at ``line_chars`` characters (``…`` marks a cut)."""
    all_lines = text.splitlines() or [""]
    if len(all_lines) == lines + 1:  # hiding one line saves nothing: show it
        lines += 1
    head, tail = all_lines[:lines], all_lines[lines:]
    kept = [line if len(line) <= line_chars else line[: line_chars - 1] + "…" for line in head]
    cut = sum(len(line) - (line_chars - 1) for line in head if len(line) > line_chars)
    hidden_chars = cut + sum(len(line) + 1 for line in tail)  # a hidden line with its line break
    return Collapsed("\n".join(kept), len(tail), hidden_chars)
