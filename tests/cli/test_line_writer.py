"""Lines a run prints as it goes: written directly when nobody sees styles, byte for byte what Rich writes."""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

from core import terminal_safe
from flujo_cli.line_writer import LineWriter, Part

LINES: list[tuple[Part, ...]] = [
    (("bold green", "clarify"), " › ", "Which [bold]matters[/] most? [link=x]y[/link] \\[z]"),
    (("bold cyan", "?"), " ", "Où ça? 東京 🙂 :fire: 10:30:00", " ", ("dim", "(answered)"), " ", "x" * 300),
    ("a bell\x07, a carriage return\r, a form feed\x0c, an escape \x1b[31m shown", ("dim", "")),
    ("tab\tseparated",),
]


def piped(*, soft_wrap: bool = True) -> tuple[Console, StringIO]:
    buffer = StringIO()
    return Console(file=buffer, highlight=False, soft_wrap=soft_wrap, color_system=None), buffer


@pytest.mark.parametrize("parts", LINES)
def test_a_piped_line_is_what_rich_writes(parts: tuple[Part, ...]) -> None:
    fast, fast_out = piped()
    rich, rich_out = piped()
    LineWriter(fast).line(*parts)
    LineWriter(fast).line(*parts, end="")
    text = terminal_safe("".join(p if isinstance(p, str) else p[1] for p in parts))
    rich.print(text, markup=False, emoji=False)
    rich.print(text, markup=False, emoji=False, end="")
    assert fast_out.getvalue() == rich_out.getvalue()


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_no_escape_sequence_of_a_text_reaches_the_terminal(terminal: bool) -> None:
    # A model's reply or a tool's output could set the window's title, write the clipboard (OSC 52) or hide
    # text: each control character is shown as its picture instead.
    buffer = StringIO()
    console = Console(file=buffer, force_terminal=terminal, color_system="standard" if terminal else None,
                      soft_wrap=True, highlight=False)  # fmt: skip
    hostile = "a\x1b]0;pwned\x07b\x1b]52;c;ZXZpbA==\x07c\x00d\x9b31me\x7f\r\n"
    LineWriter(console).line(("bold", "tool"), " → ", hostile, end="")
    out = buffer.getvalue()
    assert "\x1b]" not in out and "\x00" not in out and "\x9b" not in out and "\x07" not in out
    assert "a␛]0;pwned" in out and "b␛]52;c;ZXZpbA==" in out and "c␀d�31me␡\n" in out


def test_a_piped_line_does_not_go_through_rich() -> None:
    class Counting(Console):
        printed = 0

        def print(self, *args: object, **kwargs: object) -> None:
            Counting.printed += 1

    LineWriter(Counting(file=StringIO(), soft_wrap=True, color_system=None)).line(("bold", "plain"), " text")
    assert Counting.printed == 0
    LineWriter(Counting(file=StringIO(), soft_wrap=True, color_system=None)).line("a\ttab")
    assert Counting.printed == 1  # Rich expands tabs by cell width: it writes that one


def test_a_terminal_gets_the_styles_and_the_text_as_written() -> None:
    buffer = StringIO()
    console = Console(file=buffer, force_terminal=True, color_system="standard", soft_wrap=True, highlight=False)
    LineWriter(console).line(("bold green", "clarify"), " › ", "[bold]x[/] :fire:")
    assert buffer.getvalue() == "\x1b[1;32mclarify\x1b[0m › [bold]x[/] :fire:\n"


def test_a_quiet_or_wrapping_console_is_left_to_rich() -> None:
    quiet = Console(file=StringIO(), soft_wrap=True, color_system=None, quiet=True)
    LineWriter(quiet).line("nothing")
    assert quiet.file.getvalue() == ""  # type: ignore[attr-defined]
    wrapping, out = piped(soft_wrap=False)
    LineWriter(wrapping).line("word " * 30)
    assert out.getvalue().count("\n") == 2  # Rich wrapped it at 80 columns
