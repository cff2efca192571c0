"""A line typed at a terminal, with the line editing people expect from a shell prompt.

GNU readline (Python's ``readline`` module) does the editing: Left/Right, Home/End, Backspace/Delete,
Ctrl-A/E/U/W, and Up/Down through the lines this ``LineInput`` remembers (the answers given earlier in the
same run, including those of a resumed run's earlier attempts). Nothing here reads escape codes itself.
Where Python has no ``readline`` module (Windows), ``input()`` reads a plain line.

Readline draws the prompt and the line being edited on the standard output, and edits only when standard
input and output are both terminals. When standard output is redirected (``flujo run --json > out.json``)
but standard error is a terminal, file descriptor 1 points at standard error for the length of one read:
the prompt is edited at the terminal and never lands in the results.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

from rich.console import Console
from rich.markup import escape

from flujo_cli.messages import results_stdout

# Readline must be told which characters of a prompt take no room on screen (\001 ... \002), or the
# cursor lands in the wrong column after the first edit.
_MARKER_COLOURED = "\x01\x1b[1;36m\x02?\x01\x1b[0m\x02"


def _readline() -> ModuleType | None:
    try:
        import readline
    except ImportError:  # no GNU readline or libedit in this Python
        return None
    return readline


class LineInput:
    """Reads answers at a terminal; ``remember`` adds a line to what Up/Down recall."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._history: list[str] = []

    @property
    def history(self) -> list[str]:
        """The lines Up recalls, oldest first."""
        return list(self._history)

    def remember(self, line: str) -> None:
        """Add ``line`` to the history (not an empty line, nor the same line twice in a row)."""
        if line.strip() and (not self._history or self._history[-1] != line):
            self._history.append(line)

    def read(self, question: str, *, default: str = "") -> str:
        """Ask ``question`` (``? `` before its first line) and return the line typed, without its newline.

        ``default`` is shown in brackets and returned for an empty line. Raises EOFError (Ctrl-D) and
        KeyboardInterrupt (Ctrl-C)."""
        lines = question.rstrip().split("\n") or [""]
        if default:
            lines[-1] += f" ({default})"
        if len(lines) > 1:
            self._console.print(f"[bold cyan]?[/] {escape(lines[0])}", highlight=False)
            for line in lines[1:-1]:
                self._console.print(line, markup=False, highlight=False)
            prompt, marked = lines[-1] + " ", False
        else:
            prompt, marked = f"? {lines[0]} ", True
        typed = self._input(prompt, marked=marked)
        self.remember(typed)
        return typed if typed else default

    def _input(self, prompt: str, *, marked: bool) -> str:
        """One line; ``marked``: ``prompt`` starts with the ``?`` marker (coloured where colour is on)."""
        if not sys.stdin.isatty():  # piped: no editing, and the question goes where the messages go
            self._console.print(escape(prompt), end="", highlight=False)
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n").rstrip("\r")
        if marked and self._console.color_system is not None:
            prompt = _MARKER_COLOURED + prompt[1:]
        readline = _readline()
        if readline is not None:
            # A text pasted with several lines is one answer: Python turns bracketed paste off (for its REPL),
            # which made each pasted line answer a question of its own. Back on, the lines stay in the answer.
            readline.parse_and_bind("set enable-bracketed-paste on")
            readline.set_auto_history(False)  # this run's answers only, added by remember()
            readline.clear_history()
            for line in self._history:
                readline.add_history(line)
        self._console.file.flush()
        with results_stdout():  # input() edits the line only on the real stdout (a run diverts it: messages.py)
            sys.stdout.flush()
            if not os.isatty(1) and os.isatty(0) and os.isatty(2):
                saved = os.dup(1)
                os.dup2(2, 1)
                try:
                    return input(prompt)
                finally:
                    os.dup2(saved, 1)
                    os.close(saved)
            return input(prompt)
