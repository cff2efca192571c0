"""Long texts stored once: how the SQLite store keeps a conversation from growing with its square.

A conversation's turns reappear in many records: as a step's output, as the next step's input, in every
later ``agent.prompt`` event that injects them, in ``agent.reply`` and ``hitl.answer`` events. The SQLite
store keeps each distinct text of ``MIN_SHARED`` characters or more once, in the ``texts`` table, and
writes ``{"$text": id}`` in its place; reading substitutes it back, so callers never see a reference.

Invariants:

* ``split`` and ``join`` are inverses on JSON values: ``join(split(v, ids), texts) == v`` for every value,
  including user data that happens to look like a reference (a mapping whose only key is ``$text`` or
  ``$literal`` is wrapped as ``{"$literal": ...}``).
* A text's id is found by its BLAKE2b digest; the body is compared too, so a digest collision can never
  make one text stand for another (``SqliteStore`` stores the second text under a new row).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

MIN_SHARED = 48
"""Texts at least this long are stored once and referenced; shorter ones stay inline."""

TEXT_KEY = "$text"
LITERAL_KEY = "$literal"
_RESERVED = ({TEXT_KEY}, {LITERAL_KEY})


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def shared_texts(value: Any) -> Iterator[str]:
    """The texts in a JSON ``value`` that ``split`` replaces by references."""
    found: list[str] = []
    _gather(value, found)
    return iter(found)


def _gather(value: Any, found: list[str]) -> None:
    # Hot when each step is committed (a prompt event of a hundred messages): exact types first.
    kind = type(value)
    if kind is str or isinstance(value, str):
        if len(value) >= MIN_SHARED:
            found.append(value)
    elif kind is list or isinstance(value, list):
        for item in value:
            _gather(item, found)
    elif kind is dict or isinstance(value, dict):
        for item in value.values():
            if type(item) is str:
                if len(item) >= MIN_SHARED:
                    found.append(item)
            elif item is not None:
                _gather(item, found)


def split(value: Any, text_id: Callable[[str], int]) -> Any:
    """``value`` (plain JSON data) with each long text replaced by ``{"$text": text_id(text)}``."""
    kind = type(value)
    if kind is str or isinstance(value, str):
        return {TEXT_KEY: text_id(value)} if len(value) >= MIN_SHARED else value
    if kind is list or isinstance(value, list):
        return [split(item, text_id) for item in value]
    if kind is dict or isinstance(value, dict):
        mapping = {
            key: (item if len(item) < MIN_SHARED else {TEXT_KEY: text_id(item)})
            if type(item) is str
            else split(item, text_id)
            for key, item in value.items()
        }
        return {LITERAL_KEY: mapping} if len(mapping) == 1 and set(mapping) in _RESERVED else mapping
    return value


def references(value: Any) -> Iterator[int]:
    """The text ids a stored value refers to."""
    found: list[int] = []
    _collect(value, found)
    return iter(found)


def _collect(value: Any, found: list[int]) -> None:
    # Hot when a large run is read (hundreds of thousands of values): exact type checks first, and a
    # length check before the key test rather than a set built per mapping.
    kind = type(value)
    if kind is str:
        return
    if kind is list or isinstance(value, list):
        for item in value:
            if type(item) is not str:
                _collect(item, found)
    elif kind is dict or isinstance(value, dict):
        if len(value) == 1:
            if TEXT_KEY in value and isinstance(value[TEXT_KEY], int):
                found.append(value[TEXT_KEY])
                return
            if LITERAL_KEY in value and isinstance(value[LITERAL_KEY], dict):
                value = value[LITERAL_KEY]
        for item in value.values():
            if type(item) is not str:
                _collect(item, found)


def join(value: Any, texts: Mapping[int, str]) -> Any:
    """A stored value with its references replaced by the texts they name (``KeyError`` for a missing one)."""
    kind = type(value)
    if kind is str:
        return value
    if kind is list or isinstance(value, list):
        return [item if type(item) is str else join(item, texts) for item in value]
    if kind is dict or isinstance(value, dict):
        if len(value) == 1:
            if TEXT_KEY in value and isinstance(value[TEXT_KEY], int):
                return texts[value[TEXT_KEY]]
            if LITERAL_KEY in value and isinstance(value[LITERAL_KEY], dict):
                value = value[LITERAL_KEY]
        return {key: item if type(item) is str else join(item, texts) for key, item in value.items()}
    return value
