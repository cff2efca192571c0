"""The part of a long text that a message shows: at most ``EXCERPT_WIDTH`` characters around a place,
each cut end marked with …. A blueprint finding shows the part of its source line around its column; a
rejected answer's error shows the start of the answer. A hostile file's line or a pasted answer can be
megabytes long: a message says where or what, it does not repeat the whole text.
"""

from __future__ import annotations

EXCERPT_WIDTH = 120


def source_window(text: str, column: int, *, width: int = EXCERPT_WIDTH) -> tuple[str, int]:
    """At most ``width`` characters of the line ``text`` around the 1-based ``column``, each cut end marked
    with …, and the column of the same character in what is shown."""
    column = max(column, 1)
    if len(text) <= width:
        return text, column
    start = min(max(column - 1 - width // 2, 0), len(text) - width)
    shown = text[start : start + width]
    before = "…" if start > 0 else ""
    after = "…" if start + width < len(text) else ""
    return before + shown + after, column - start + len(before)
