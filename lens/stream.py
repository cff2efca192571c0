"""The plain trace, line by line: ``flujo lens trace RUN`` into a pipe writes each node as it is laid out.

``trace_view`` (``lens.plain``) is one rich ``Tree``: printing it lays out every node into a buffer before
the first byte is written (seconds for a run of 10,000 events). ``trace_lines`` yields the same lines as
printing that tree with colours off (the tree's guides, each node's block laid out at the width left by its
depth, trailing spaces removed), one node at a time, so the first line comes at once and memory stays flat.

The first lines, the run's own label, need only the run's record: ``run_lines`` gives them from the record
alone, so ``flujo lens trace`` writes them before it reads the run's steps and events (a second for a run of
10,000 events), then the rest with ``trace_lines(..., header=False)``.

Rich's layout of each node (segments, a table per agent call, measuring every cell) was most of the time
of a large trace, so the common parts are laid out here with Rich's own text wrapping (what ``Text.wrap``
gives, without a ``Text`` per line: ``_wrapped``): a label, and an agent call's grid (the roles in a column
as wide as the widest, one space, then each message wrapped at the width left, as Rich's grid lays it out).
Anything else, or a grid too narrow to hold its roles, goes through Rich's renderer.
tests/lens/test_stream.py checks the lines are the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import pairwise

from rich._wrap import divide_line
from rich.cells import cell_len, set_cell_size
from rich.console import Console, RenderableType
from rich.text import Text

import lens.labels as labels
from core import Redactor, RunRecord
from lens.masking import Masker
from lens.plain import CallBlock, Expansion, call_block
from lens.tree import CallNode, Node, RunNode

_FORK, _END, _CONTINUE, _SPACE = "├── ", "└── ", "│   ", "    "
_TRAILING_SPACE = re.compile(r"\s+$")  # what Rich's Text.rstrip_end looks for
# Characters of one cell each (in Rich's measure too): printable ASCII, the marks of labels and agent calls
# and the ellipsis of a shortened text, in the lines that wrap most; a line of these is wrapped by counting.
_ONE_CELL = frozenset(map(chr, range(0x20, 0x7F))) | frozenset("·▸…")
_WORD = re.compile(r"\s*\S+\s*")  # a word and the spaces after it, as Rich's wrapping reads words
_LEFT = (None, "default", "left")
_ASCII = {_FORK: "+-- ", _END: "`-- ", _CONTINUE: "|   ", _SPACE: "    "}


def trace_lines(root: RunNode, console: Console, *, expand: Expansion, header: bool = True) -> Iterator[str]:
    """The lines of ``trace_view(root, expand=expand)`` printed by ``console`` (colours off), without
    trailing spaces and without line ends; without the run's own label (``run_lines``) if not ``header``."""
    guides = (lambda guide: _ASCII[guide]) if console.options.ascii_only else (lambda guide: guide)
    width = console.width  # asks the terminal for its size every time: once is enough
    if header:
        yield from _block(labels.label(root), console, width, "", "")
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
            yield from _block(call_block(node, expand.opening(path), path), console, width, first, rest)
            continue
        yield from _block(labels.label(node), console, width, first, rest)
        if node.children:
            below = _join(prefix, node.path) if isinstance(node, RunNode) else prefix
            stack.append((_with_last(node.children), rest, below))


def run_lines(record: RunRecord, console: Console, *, redactor: Redactor) -> Iterator[str]:
    """The first lines of ``trace_lines`` of the run whose record is ``record`` (as the store holds it: it
    is masked here with ``redactor``, as ``lens.snapshot`` masks it): the run's own label."""
    yield from _block(labels.run_label(Masker(redactor).run(record)), console, console.width, "", "")


def _block(renderable: RenderableType, console: Console, width: int, first: str, rest: str) -> Iterator[str]:
    for number, line in enumerate(_laid_out(renderable, console, width - len(first))):
        yield ((rest if number else first) + line).rstrip()


def _laid_out(renderable: RenderableType, console: Console, width: int) -> list[str]:
    """The lines of ``renderable`` at ``width``, as Rich prints them with colours off."""
    if width >= 1:
        if isinstance(renderable, Text):
            return _text(renderable, console, width)
        if isinstance(renderable, CallBlock) and (grid := _call(renderable, console, width)) is not None:
            return grid
    options = console.options.update(width=width, height=None)
    return ["".join(segment.text for segment in line) for line in console.render_lines(renderable, options, pad=False)]


def _text(text: Text, console: Console, width: int, *, in_cell: bool = False) -> list[str]:
    """``text`` wrapped at ``width``; ``in_cell``: as a table cell, where a word too long is cut with an
    ellipsis (a column's overflow) unless the text says otherwise."""
    plain = text.plain
    if "\n" not in plain and "\t" not in plain and cell_len(plain) <= width:
        return [plain]  # what wrapping would give, without wrapping
    overflow = (text.overflow or "ellipsis") if in_cell else None
    wraps_by = overflow or text.overflow or "fold"  # as Text.wrap reads it
    if "\n" in plain or "\t" in plain or text.no_wrap or wraps_by == "ignore" or text.justify not in _LEFT:
        return [line.plain for line in text.wrap(console, width, overflow=overflow)] or [""]
    return _wrapped(plain, width, wraps_by)


def _wrapped(plain: str, width: int, overflow: str) -> list[str]:
    """What ``Text(plain).wrap(console, width, overflow=overflow)`` gives for one line of text, justified left or
    not at all, without making a ``Text`` per line and its spans (half the time of a large trace went there):
    Rich's own word breaks (``divide_line``), each line's whitespace beyond ``width`` dropped, then cut to
    ``width`` (with an ellipsis when ``overflow`` says so). The spaces Rich pads a left-justified line with
    are not added: every line ends where ``_block`` strips trailing spaces."""
    fold = overflow == "fold"
    breaks = _breaks(plain, width, fold=fold) if _ONE_CELL.issuperset(plain) else None
    bounds = [0, *(divide_line(plain, width, fold=fold) if breaks is None else breaks), len(plain)]
    lines = []
    for start, end in pairwise(bounds):
        line = plain[start:end]
        if len(line) > width and (blank := _TRAILING_SPACE.search(line)) is not None:
            line = line[: len(line) - min(len(blank.group(0)), len(line) - width)]
        if cell_len(line) > width:
            line = set_cell_size(line, width - 1) + "…" if overflow == "ellipsis" else set_cell_size(line, width)
        lines.append(line)
    return lines


def _breaks(plain: str, width: int, *, fold: bool) -> list[int]:
    """Rich's ``divide_line`` for a text of ``_ONE_CELL`` characters, where a character is a cell: the same words
    (``\\s*\\S+\\s*``), the same breaks, a word longer than ``width`` folded into pieces of ``width`` (or
    left whole to be cut), without measuring each word's cells twice (most of the wrapping time)."""
    breaks: list[int] = []
    offset = 0  # cells used on the current line
    for match in _WORD.finditer(plain):
        start, end = match.span()
        length = len(match.group().rstrip())
        if width - offset >= length:
            offset += end - start
        elif length > width:
            pieces = range(start, end, width) if fold else range(start, start + 1)
            breaks.extend(piece for piece in pieces if piece)
            offset = end - pieces[-1]
        elif offset and start:
            breaks.append(start)
            offset = end - start
    return breaks


def _call(block: CallBlock, console: Console, width: int) -> list[str] | None:
    """An agent call laid out as Rich lays out its grid (``CallBlock.__rich__``), or None to leave it to Rich."""
    if not block.grid:
        return _text(block.head, console, width)
    roles = [role.plain for role, _ in block.rows]
    if not roles or any("\n" in role or "\t" in role for role in roles):
        return None
    role_width = max(cell_len(role) for role in roles)
    room = width - role_width - 1  # the grid's one space between the columns
    if room < 1:
        return None
    lines = _text(block.head, console, width)
    blank = " " * (role_width + 1)
    for role, (_, content) in zip(roles, block.rows, strict=True):
        said = _text(content, console, room, in_cell=True)
        lines.append(role + " " * (role_width + 1 - cell_len(role)) + said[0])
        lines.extend(blank + line for line in said[1:])
    if block.note is not None:
        lines.extend(_text(block.note, console, width))
    return lines


def _with_last(nodes: Sequence[Node]) -> Iterator[tuple[bool, Node]]:
    final = len(nodes) - 1
    return ((index == final, node) for index, node in enumerate(nodes))


def _join(prefix: str, path: str) -> str:
    return f"{prefix}/{path}" if prefix and path else prefix or path
