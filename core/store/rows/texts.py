"""Long texts stored once: how the SQLite store keeps a conversation from growing with its square.

A conversation's turns reappear in many records: as a step's output, as the next step's input, in every
later ``agent.prompt`` event that injects them, in ``agent.reply`` and ``hitl.answer`` events. The SQLite
store keeps each distinct text of ``MIN_SHARED`` characters or more once, in the ``texts`` table, and
writes ``{"$text": id}`` in its place; reading substitutes it back, so callers never see a reference.

Invariants:

* ``split`` and ``join`` are inverses on JSON values: ``join(split(v, ids), texts) == v`` for every value,
  including user data that happens to look like a reference (a mapping whose only key is ``$text`` or
  ``$literal`` is wrapped as ``{"$literal": ...}``).
* A list of many items (a prompt event's messages) may be stored once too, as ``{"$text": [id]}``
  (``core.store.rows.shared_lists``): only event payloads are written so; ``join`` reads it given the lists.
* A text's id is found by its BLAKE2b digest (``digest``; on SQLite ``run_digest``); the body is compared
  too, so a digest collision can never make one text stand for another (``SqliteStore`` stores the second
  text under a new row).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from core.model.views import ATOMIC, NOT_TEXT

MIN_SHARED = 48
"""Texts at least this long are stored once and referenced; shorter ones stay inline."""

TEXT_KEY = "$text"
LITERAL_KEY = "$literal"
_RESERVED = ({TEXT_KEY}, {LITERAL_KEY})
RESERVED_KEYS = frozenset({TEXT_KEY, LITERAL_KEY})
"""A mapping whose only key is one of these is wrapped by ``split`` (``LITERAL_KEY``) so it reads back as data."""


def digest(text: str) -> bytes:
    """A text's digest as PostgreSQL's store (and SQLite's before ``m010_texts_by_hash``) keeps it."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def run_digest(run_id: str, text: str) -> bytes:
    """The digest SQLite's store keeps of ``text`` as a text of run ``run_id``: 8 bytes, of the run and the
    text together, so that its index needs no run id (the same text in two runs has two digests)."""
    found = hashlib.blake2b(run_id.encode("utf-8"), digest_size=8)
    found.update(b"\0")
    found.update(text.encode("utf-8"))
    return found.digest()


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
    if kind is not dict and kind is not list and kind is not str:  # exact types first: each step's write
        kind = str if isinstance(value, str) else list if isinstance(value, list) else dict
        if not isinstance(value, kind):
            return value
    if kind is str:
        return {TEXT_KEY: text_id(value)} if len(value) >= MIN_SHARED else value
    if kind is list:
        return [item if type(item) in NOT_TEXT else split(item, text_id) for item in value]
    if kind is dict:
        mapping = {
            key: (item if len(item) < MIN_SHARED else {TEXT_KEY: text_id(item)})
            if type(item) is str
            else item
            if type(item) in NOT_TEXT
            else split(item, text_id)
            for key, item in value.items()
        }
        return {LITERAL_KEY: mapping} if len(mapping) == 1 and set(mapping) in _RESERVED else mapping
    return value


def references(value: Any) -> Iterator[int]:
    """The text ids a stored value refers to (not the lists it refers to: see ``referenced``)."""
    return iter(referenced(value)[0])


def referenced(value: Any) -> tuple[list[int], list[int]]:
    """The text ids and the list ids (``core.store.rows.shared_lists``) a stored value refers to."""
    found: list[int] = []
    lists: list[int] = []
    _collect(value, found, lists)
    return found, lists


def _collect(value: Any, found: list[int], lists: list[int]) -> None:
    # Hot when a large run is read (hundreds of thousands of values): exact type checks first, no call for a
    # text, number or None, and a length check before the key test rather than a set built per mapping.
    kind = type(value)
    if kind is str:
        return
    if kind is list or isinstance(value, list):
        for item in value:
            if type(item) not in ATOMIC:
                _collect(item, found, lists)
    elif kind is dict or isinstance(value, dict):
        if len(value) == 1:
            if TEXT_KEY in value:
                target = value[TEXT_KEY]
                if isinstance(target, int):
                    found.append(target)
                    return
                if _is_list_ref(target):
                    lists.append(target[0])
                    return
            if LITERAL_KEY in value and isinstance(value[LITERAL_KEY], dict):
                value = value[LITERAL_KEY]
        for item in value.values():
            if type(item) not in ATOMIC:
                _collect(item, found, lists)


def _is_list_ref(target: Any) -> bool:
    # ``{"$text": [id]}``: a list stored once (core.store.rows.shared_lists). ``split`` always wraps user data
    # whose only key is ``$text``, so no store, old or new, holds this form for anything else.
    return type(target) is list and len(target) == 1 and type(target[0]) is int


def join(
    value: Any,
    texts: Mapping[int, str],
    lists: Mapping[int, list[Any]] | None = None,
    flat: dict[int, dict[str, Any]] | None = None,
) -> Any:
    """A stored value with its references replaced by the texts they name, and its list references by
    those lists (``lists``: id → stored items, ``core.store.rows.shared_lists.expand``); ``KeyError`` for a
    missing one. Each list comes back as a new list of new values, never shared between two results.

    ``flat``, when given, remembers the items of ``lists`` already joined into a mapping of plain values (a
    message: its role and its text), by the item's ``id``, for as long as ``lists`` lives: a list that
    holds the item again gets a copy of that mapping (new, its values immutable), not a new join. The prompts
    of a conversation repeat the earlier turns, so most of their messages are read once, then copied."""
    kind = type(value)
    if kind is str:
        return value
    if kind is list or isinstance(value, list):
        return [item if type(item) in ATOMIC else join(item, texts, lists, flat) for item in value]
    if kind is dict or isinstance(value, dict):
        if len(value) == 1:
            if TEXT_KEY in value:
                target = value[TEXT_KEY]
                if isinstance(target, int):
                    return texts[target]
                if _is_list_ref(target):
                    if lists is None:
                        raise KeyError(target[0])
                    items = lists[target[0]]
                    if flat is None:
                        return [item if type(item) in ATOMIC else join(item, texts, lists) for item in items]
                    return [item if type(item) in ATOMIC else _item(item, texts, lists, flat) for item in items]
            if LITERAL_KEY in value and isinstance(value[LITERAL_KEY], dict):
                value = value[LITERAL_KEY]
        return {key: item if type(item) in ATOMIC else join(item, texts, lists, flat) for key, item in value.items()}
    return value


def _item(item: Any, texts: Mapping[int, str], lists: Mapping[int, list[Any]], flat: dict[int, dict[str, Any]]) -> Any:
    """A stored list's item joined (``join``'s ``flat``)."""
    done = flat.get(id(item))
    if done is not None:
        return done.copy()
    joined = join(item, texts, lists, flat)
    if type(joined) is dict and all(type(part) in ATOMIC for part in joined.values()):
        flat[id(item)] = joined.copy()
    return joined
