"""Lazy, read-only views of run state for templates, expressions, hooks and agents.

A view is a snapshot taken when it is made (cheap: shallow copies of append-only lists, a deep copy of
the small mutable scratchpad) whose entries are turned into plain data only when something reads them.
So a template that reads ``steps.clarify.output`` never pays for copying a long conversation history,
and per-iteration cost does not grow with the length of the run.

Invariants:
- Reading an entry returns a private copy: no reader (a Python hook, an agent) can change run state
  through a view, and a value read twice is the same object within one view.
- ``plain(value)`` turns any view inside ``value`` into ordinary dicts and lists (for JSON, Python
  agents, storage). ``json_default`` does the same for ``json.dumps``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_UNREAD = object()  # an entry not computed yet


class LazyView(Mapping[str, Any]):
    """A read-only mapping whose entries are computed (copied) on first access and then kept."""

    __slots__ = ("_cache", "_compute", "_keys")

    def __init__(self, keys: tuple[str, ...], compute: Callable[[str], Any]) -> None:
        self._keys = keys
        self._compute = compute
        self._cache: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        value = self._cache.get(key, _UNREAD)  # not try/except: most entries a view gives are read once
        if value is _UNREAD:
            if key not in self._keys:
                raise KeyError(key)
            value = self._cache[key] = self._compute(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def materialize(self) -> dict[str, Any]:
        """Every entry as plain data (a fresh dict; nested views materialized too)."""
        return {key: plain(self[key]) for key in self._keys}

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(self.materialize(), memo)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._keys)!r})"


def plain(value: Any) -> Any:
    """``value`` with every LazyView in it materialized (other values are returned as they are)."""
    kind = type(value)  # told apart by its type first: ``isinstance`` on a view asks the ABC machinery
    if kind in ATOMIC:
        return value
    if kind is not dict and kind is not list and isinstance(value, LazyView):
        return value.materialize()
    if isinstance(value, dict):
        if any(_composite(item) for item in value.values()):
            return {key: plain(item) for key, item in value.items()}
        return value
    if isinstance(value, list):
        if any(_composite(item) for item in value):
            return [plain(item) for item in value]
        return value
    return value


def _composite(item: Any) -> bool:
    """Whether ``plain`` must look inside ``item``: texts and numbers are told by their type first, as
    ``isinstance`` on ``LazyView`` (a ``Mapping``) asks the ABC machinery for each of a long list's items."""
    return type(item) not in ATOMIC and isinstance(item, (LazyView, dict, list))


def json_default(value: Any) -> Any:
    """``default=`` for ``json.dumps``: views and other mappings as objects, anything else as its str."""
    if isinstance(value, LazyView):
        return value.materialize()
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def snapshot_of(mapping: Mapping[str, Any]) -> LazyView:
    """A view of ``mapping`` (whose values are never mutated in place) copying each value on access."""
    frozen = dict(mapping)
    return LazyView(tuple(frozen), lambda key: copied(frozen[key]))


ATOMIC = frozenset({str, int, float, bool, type(None)})
"""Exact types whose JSON round trip (and deep copy) is themselves: plain data that needs no walk."""
NOT_TEXT = ATOMIC - {str}
"""The same without ``str``: numbers, booleans and None, kept as they are where a text would be looked at."""
_MAX_DEPTH = 64  # deeper than run data goes: past it, copy.deepcopy (which also handles a cycle)


class _NotPlainData(Exception):
    """Raised inside ``copied`` on a value that is not plain JSON-like data."""


def copied(value: Any) -> Any:
    """A deep copy of ``value``, as ``copy.deepcopy`` makes, in a fraction of its time when ``value`` is plain
    data (dicts with text, number, boolean or None keys, lists, texts, numbers, booleans, None: what run
    state holds; views of it, copied as dicts of their entries). Anything else goes to ``copy.deepcopy``
    whole. Hot: state is copied for every scope a template or hook reads, several times an iteration.
    Unlike deepcopy, a list or dict that appears twice inside ``value`` is copied twice (JSON has no shared
    references either)."""
    if type(value) in ATOMIC:
        return value
    try:
        return _plain_copy(value, 0)
    except _NotPlainData:
        return copy.deepcopy(value)


def _plain_copy(value: Any, depth: int) -> Any:
    kind = type(value)
    if depth > _MAX_DEPTH:
        raise _NotPlainData
    if kind is list:
        return [item if type(item) in ATOMIC else _plain_copy(item, depth + 1) for item in value]
    # A view is copied as deepcopy makes it (``__deepcopy__``: a dict of its entries) without making them
    # plain first and then deep-copying that: a loop with ``propagation: context`` copies a view of the
    # context into every iteration's input.
    if kind is dict or isinstance(value, LazyView):
        made: dict[Any, Any] = {}
        for key, item in value.items():
            if type(key) not in ATOMIC:
                raise _NotPlainData
            made[key] = item if type(item) in ATOMIC else _plain_copy(item, depth + 1)
        return made
    raise _NotPlainData
