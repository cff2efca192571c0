"""Where each value of a blueprint sits in its file: a {path: place} index built from YAML node marks.

A path is the tuple of keys and list indexes leading to a value, as in the constructed data
(``("steps", 1, "loop", "max_loops")``). For a mapping entry the index keeps both the key's mark and the
value's mark, so an unknown key is reported at the key and a bad value at the value. Lines and columns
are 1-based. Block scalars (``|``/``>``) remember their style so a position inside a template's text
(its line N) can be mapped to the file line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core import SourcePosition, source_window

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Place:
    """The marks of one value: its key (None for list items and the root) and its value."""

    key_line: int | None
    key_column: int | None
    line: int
    column: int
    style: str | None = None


class PositionIndex:
    """Maps data paths to file positions."""

    def __init__(self, file: str, lines: Sequence[str]) -> None:
        self.file = file
        self.lines = list(lines)
        self._places: dict[Path, Place] = {}

    def add(self, path: Path, place: Place) -> None:
        self._places.setdefault(path, place)

    def items(self) -> list[tuple[Path, Place]]:
        """Every path with its place, in the order they were added."""
        return list(self._places.items())

    def __contains__(self, path: Path) -> bool:
        return path in self._places

    def place(self, path: Path) -> Place | None:
        return self._places.get(path)

    def value(self, path: Path) -> SourcePosition | None:
        """Where the value at ``path`` starts (None when the path is not in the file)."""
        place = self._places.get(path)
        return None if place is None else SourcePosition(self.file, place.line, place.column)

    def key(self, path: Path) -> SourcePosition | None:
        """Where the key of the entry at ``path`` is; the value's place for list items."""
        place = self._places.get(path)
        if place is None:
            return None
        if place.key_line is None or place.key_column is None:
            return SourcePosition(self.file, place.line, place.column)
        return SourcePosition(self.file, place.key_line, place.key_column)

    def nearest(self, path: Path) -> tuple[Path, SourcePosition]:
        """The longest prefix of ``path`` that is in the file, and where its value starts."""
        for end in range(len(path), -1, -1):
            prefix = path[:end]
            position = self.value(prefix)
            if position is not None:
                return prefix, position
        return (), SourcePosition(self.file, 1, 1)

    def inside(self, path: Path, text_line: int, text_column: int = 1) -> SourcePosition | None:
        """The file position of (line, column) within the text of the scalar at ``path`` (1-based).

        Exact for block scalars and single-line plain or quoted scalars; for multi-line flow scalars the
        line is right and the column is the line's first non-blank character.
        """
        place = self._places.get(path)
        if place is None:
            return None
        if place.style in ("|", ">"):
            line = place.line + text_line
            return SourcePosition(self.file, line, self._indent(line) + text_column)
        if text_line <= 1:
            quote = 1 if place.style in ("'", '"') else 0
            return SourcePosition(self.file, place.line, place.column + quote + text_column - 1)
        line = place.line + text_line - 1
        return SourcePosition(self.file, line, self._indent(line) + 1)

    def _indent(self, line: int) -> int:
        if 1 <= line <= len(self.lines):
            text = self.lines[line - 1]
            return len(text) - len(text.lstrip(" "))
        return 0

    def excerpt(self, position: SourcePosition | None) -> str | None:
        """The source line at ``position`` (a window of it, when long) with a caret under its column."""
        if position is None or not 1 <= position.line <= len(self.lines):
            return None
        text, column = source_window(self.lines[position.line - 1].rstrip("\r\n"), position.column)
        gutter = f"{position.line} | "
        return f"{gutter}{text}\n{' ' * (len(gutter) + column - 1)}^"
