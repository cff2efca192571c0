"""JSON written inside a text: the values under chosen keys, found and masked without parsing the text.

A reply ``{"token": "abc"}`` kept as a turn's text, or written again inside another JSON text (a step's
output printed into a prompt: ``{\\"token\\": \\"abc\\"}``), is still a mapping to whoever reads it, but no
longer one to redaction. ``mask_keyed_values`` finds each ``"key": value`` whose key ``sensitive`` picks,
at any level of escaping (the quotes of a JSON text inside a JSON string are ``\\"``, one level deeper
``\\\\\\"``) and with single quotes (a Python mapping printed with ``str``), and puts the mask in the value's
place: a string's characters, or the whole of an object, array or number (as a string: the text stays
JSON). ``null``, ``true``, ``false`` and ``""`` hide nothing and stay.

Invariant: what follows a key and cannot be read as a value is left as it is; a value that is never closed
(a reply cut off by its token cap) is masked to the end of the text: the safe side.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable


# A key in quotes, then the colon; the backslashes before its closing quote are its escaping level (the
# same run must stand before its opening quote: checked by ``_opened_at``). A key is a name-like word, not
# any text: one of the keys this module masks never holds a quote or a line break. The expression starts at
# a quote character, so the regular expression engine skips to the quotes of a text without trying every
# position in between. The patterns are compiled at the first text with a quote the redactor reads
# (``core.text.redaction``): most runs have none, and compiling them at import cost every run 1.5 M instructions.
@functools.cache
def _key() -> re.Pattern[str]:
    return re.compile(r"""(["'])([A-Za-z_][A-Za-z0-9_. -]{0,63}?)(\\*)\1[ \t\r\n]*:[ \t\r\n]*""")


@functools.cache
def _quotes_and_brackets() -> re.Pattern[str]:
    return re.compile(r"""["'{}\[\]]""")


@functools.cache
def _number() -> re.Pattern[str]:
    return re.compile(r"-?[0-9][0-9.eE+-]*")


def mask_keyed_values(text: str, *, sensitive: Callable[[str], bool], mask: str) -> str:
    """``text`` with the value of every ``"key": value`` whose key is ``sensitive`` replaced by ``mask``."""
    pieces: list[str] = []
    done = 0  # text[:done] is in pieces
    for found in _key().finditer(text):
        level = len(found.group(3))
        if found.start() - level < done or not sensitive(found.group(2)) or not _opened_at(text, found, level):
            continue
        quote = found.group(3) + found.group(1)
        start = found.end()
        span = _value_span(text, start, quote)
        if span is None:
            continue
        begin, end, whole = span
        pieces.append(text[done:begin])
        pieces.append(f"{quote}{mask}{quote}" if whole else mask)
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _opened_at(text: str, found: re.Match[str], level: int) -> bool:
    """Whether the key ``found`` opens with as many backslashes before its quote as close it (exactly)."""
    start = found.start()
    if level > start or text[start - level : start] != "\\" * level:
        return False
    return start - level == 0 or text[start - level - 1] != "\\"


def _value_span(text: str, start: int, quote: str) -> tuple[int, int, bool] | None:
    """Where the value at ``start`` lies, as (begin, end, whole): the characters of a string (whole False:
    its quotes stay) or a whole value (True: replaced with a quoted mask). None: nothing to mask."""
    if text.startswith(quote, start):
        begin = start + len(quote)
        close = _closing_quote(text, begin, quote)
        end = len(text) if close is None else close
        return None if end == begin else (begin, end, False)
    if start < len(text) and text[start] in "{[":
        closed = _closing_bracket(text, start, quote)
        return start, len(text) if closed is None else closed, True
    number = _number().match(text, start)
    if number is not None:
        return start, number.end(), True
    return None  # null, true, false, or not JSON at all


def _level(quote: str) -> int:
    return len(quote) - 1  # backslashes before the quote character


def _is_delimiter(text: str, at: int, floor: int, level: int) -> bool:
    """Whether the quote character at ``at`` opens or closes a string of escaping level ``level``.

    Escaping a JSON text once more doubles each backslash and puts one before each quote: a quote that
    delimits a string of level n has a run of r backslashes before it with r ≡ n modulo 2(n + 1) (0 mod 2
    at level 0, 1 mod 4 at level 1, ...); a quote inside the string, escaped once more than its delimiters,
    never does."""
    run = 0
    while at - run - 1 >= floor and text[at - run - 1] == "\\":
        run += 1
    return run % (2 * (level + 1)) == level


def _closing_quote(text: str, begin: int, quote: str) -> int | None:
    """Where the string whose characters start at ``begin`` ends (the start of its closing ``quote``)."""
    char, level = quote[-1], _level(quote)
    at = text.find(char, begin)
    while at != -1:
        if _is_delimiter(text, at, begin, level):
            return at - level
        at = text.find(char, at + 1)
    return None


def _closing_bracket(text: str, start: int, quote: str) -> int | None:
    """Just past the bracket that closes the object or array opening at ``start`` (brackets inside its
    strings do not count)."""
    level, depth, in_string = _level(quote), 0, ""
    for found in _quotes_and_brackets().finditer(text, start):
        char, at = found.group(), found.start()
        if char in "\"'":
            if _is_delimiter(text, at, start, level):
                if not in_string:
                    in_string = char
                elif in_string == char:
                    in_string = ""
        elif in_string:
            continue
        elif char in "{[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return at + 1
    return None
