"""Lines a run prints as it goes (each agent reply, each question and its answer), written cheaply when
nobody sees their styles.

Rich lays out every line through markup, segments and wrapping: about 0.7 ms for the reply and the
question of one conversational iteration on the project's machine, paid on every iteration
(docs/performance.md). When the console is not a terminal, has no colours and does not wrap (output piped
or redirected, as in runs answered with ``--answers``), what Rich writes is the plain text, so the line is
written as it is, with the control codes Rich strips (BEL, BS, VT, FF, CR) stripped too; a line holding a
tab (which Rich expands by cell width) still goes through Rich. At a terminal, or with colours forced, Rich
prints it with its styles.

Texts are never read as Rich markup or emoji codes (``[bold]``, ``:fire:`` in an agent's reply stay as
written): parts are given as plain text, each with an optional style. Nor are they read by the terminal: a
reply or a tool's output holding an escape sequence (``ESC ]0;title BEL``, colours, a clipboard write) or
another control character is shown with the character's picture (``␛``, ``␀``), never sent raw; the codes
Rich strips are stripped, and line breaks and tabs are kept.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from core import terminal_safe

# A part of a line: plain text, or (Rich style, plain text).
Part = str | tuple[str, str]


class LineWriter:
    """Writes lines made of plain-text parts to ``console``; see the module docstring."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._plain = not console.is_terminal and console.color_system is None and console.soft_wrap

    def line(self, *parts: Part, end: str = "\n") -> None:
        console = self.console
        if console.quiet:
            return
        if self._plain:
            text = "".join(part if isinstance(part, str) else part[1] for part in parts)
            if "\t" not in text:
                console.file.write(terminal_safe(text) + end)
                console.file.flush()
                return
        console.print("".join(_markup(part) for part in parts), end=end, emoji=False)


def _markup(part: Part) -> str:
    return escape(terminal_safe(part)) if isinstance(part, str) else f"[{part[0]}]{escape(terminal_safe(part[1]))}[/]"
