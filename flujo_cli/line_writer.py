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
written): parts are given as plain text, each with an optional style.
"""

from __future__ import annotations

from rich.console import Console
from rich.control import strip_control_codes
from rich.markup import escape

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
                console.file.write(strip_control_codes(text) + end)
                console.file.flush()
                return
        console.print("".join(_markup(part) for part in parts), end=end, emoji=False)


def _markup(part: Part) -> str:
    return escape(part) if isinstance(part, str) else f"[{part[0]}]{escape(part[1])}[/]"
