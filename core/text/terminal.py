"""Text as a terminal may be given it: nothing in it that the terminal would act on.

A model's reply, a tool's output or an answer can hold an escape sequence (``ESC ]0;title BEL`` sets the
window's title, ``ESC ]52;c;...`` writes the clipboard, colours can hide text) or another control character.
Where flujo shows such a text (a run's lines, ``flujo lens``), each is shown as the character's picture
instead (``␛``, ``␀``): C0 controls as U+2400 onwards, DEL as ``␡``, C1 controls as ``�``. BEL, BS, VT, FF and
CR are removed, as Rich removes them; line feeds and tabs are kept. What is stored, exported or printed as
a run's output is never changed.
"""

from __future__ import annotations

_SHOWN: dict[int, str | None] = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_SHOWN.update({0x07: None, 0x08: None, 0x0B: None, 0x0C: None, 0x0D: None, 0x7F: "\u2421"})
_SHOWN.update({code: "\ufffd" for code in range(0x80, 0xA0)})


def terminal_safe(text: str) -> str:
    """``text`` with nothing a terminal acts on (see the module docstring)."""
    return text.translate(_SHOWN)
