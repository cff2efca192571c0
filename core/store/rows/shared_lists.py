"""Lists stored once: how the prompt events of an unbounded history stay linear in the conversation.

Every ``agent.prompt`` event records the messages exactly as sent. With an unbounded history the list of
call N is the list of call N-1 plus the turns said since, so storing each list whole (even as references
to shared texts, ``core.store.rows.texts``) grows with the square of the conversation. A store keeps instead a
long list of an event payload (``MIN_ITEMS`` items or more) as a row of its ``texts`` table whose body is
the JSON ``[base, items]``: ``base`` is the id of an earlier stored list of the same run that this one
extends (or null), ``items`` the stored items that follow it. A bounded history slides instead (the
oldest turns leave, the system prompt stays): ``[base, keep, drop, items]`` is the base's first ``keep``
items, then the base after ``drop`` more, then ``items``. The payload holds ``{"$text": [id]}`` in its
place, and reading puts the whole list back.

Invariants:

* Transparent: a payload read back is equal to the payload written (``expand`` and ``texts.join``).
* A list row belongs to its run (``texts.run_id``) and refers only to that run's rows, so pruning a run
  (which deletes its texts) never breaks another run's lists; ``ListMemory`` is keyed by run.
* Items are stored after redaction and after ``texts.split``: a list row holds what the payload held.
* The ids a transaction stores become known to ``ListMemory`` only when it commits (``Pending``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.model import codec
from core.model.errors import StoreError
from core.model.views import ATOMIC, NOT_TEXT
from core.store.rows import texts

MIN_ITEMS = 8
"""Lists of event payloads with at least this many items are stored once and referenced."""

RECENT_LISTS = 8
"""How many of a run's latest lists a store remembers to extend: the last prompt of each agent, in an ensemble
each participant's own point of view (whose list extends its own earlier one, not the other participants')."""

RECENT_RUNS = 64
"""How many runs' lists a store remembers; more are forgotten (they are then stored whole again)."""

_DAMAGED = "the database may be damaged; restore a backup"

Parsed = tuple[int | None, int | None, int, list[Any]]
"""A list row read: its base, how many of the base's first items it keeps (None: all of them), how many
it drops after those, and its own items."""


def reference(list_id: int) -> dict[str, Any]:
    """What a payload holds in place of a stored list."""
    return {texts.TEXT_KEY: [list_id]}


@dataclass(slots=True)
class Pending:
    """What one write transaction stored, made known to the store's caches only once it commits."""

    text_ids: dict[tuple[str, str], int] = field(default_factory=dict)  # (run, text) → id
    lists: list[tuple[str, int, list[Any]]] = field(default_factory=list)  # (run, id, its plain items)
    created_runs: list[str] = field(default_factory=list)  # runs the transaction created (TextCache.complete)


class ListMemory:
    """The latest lists a store wrote per run (id and items as plain data, only lists of texts
    and messages: ``_plain_items``), to find the one a new list extends."""

    def __init__(self) -> None:
        self._recent: dict[str, list[tuple[int, list[Any]]]] = {}

    def base(self, run_id: str, items: list[Any], pending: Pending) -> Base | None:
        """The newest remembered list of ``run_id`` that ``items`` starts with (extended or slid), and how.

        The newest first, and the first found: a conversation's next prompt extends (or slides) its previous
        one, and comparing it with every older list too would cost a list comparison each (an ensemble's
        participants' lists differ from their first item, the system prompt, so those cost nothing)."""
        newest = [(i, known) for run, i, known in reversed(pending.lists) if run == run_id]
        for list_id, known in [*newest, *self._recent.get(run_id, ())]:
            found = _overlap(list_id, known, items)
            if found is not None:
                return found
        return None

    def commit(self, pending: Pending) -> None:
        for run_id, list_id, items in pending.lists:
            recent = self._recent.pop(run_id, [])
            self._recent[run_id] = [(list_id, items), *recent][:RECENT_LISTS]  # latest run last, for eviction
            if len(self._recent) > RECENT_RUNS:
                del self._recent[next(iter(self._recent))]

    def clear(self) -> None:
        """Forget every list (their rows may have been deleted: ``prune``)."""
        self._recent.clear()


@dataclass(frozen=True)
class Base:
    """A stored list whose first ``keep`` items, then its items after ``drop`` more, are the first
    ``covered`` items of a new list."""

    list_id: int
    keep: int
    drop: int
    covered: int
    known: list[Any] = field(compare=False, repr=False)  # the stored list's items (plain)


def _overlap(list_id: int, known: list[Any], items: list[Any]) -> Base | None:
    """How ``items`` starts with ``known`` (extended), or with ``known`` less a run of its items (slid)."""
    size = len(known)
    if not size or not items or items[0] != known[0]:
        return None
    if size <= len(items) and items[size - 1] == known[-1] and items[:size] == known:
        return Base(list_id, size, 0, size, known)
    keep = 1
    while keep < size and keep < len(items) and items[keep] == known[keep]:
        keep += 1
    if keep >= len(items) or keep >= size:
        return None
    try:
        resume = known.index(items[keep], keep + 1)
    except ValueError:
        return None
    rest = size - resume
    if rest > len(items) - keep or items[keep : keep + rest] != known[resume:]:
        return None
    return Base(list_id, keep, resume - keep, keep + rest, known)


def cut(value: Any, run_id: str, memory: ListMemory, pending: Pending) -> Any:
    """``value`` (an event payload as given) as plain data (``codec.plain``), with each list of ``MIN_ITEMS``
    items or more replaced by ``Same`` when it equals a remembered list, else by a ``Cut`` saying what
    its row will store. Costs what is new: a list is compared with the remembered ones as it is given (an
    equal item is not walked, nor made plain), and only the items after the remembered part are made plain.

    Dicts are walked when their keys are all texts and they are not a single reserved key of
    ``core.store.rows.texts`` (those are plain values whole, as ``texts.split`` wraps them); lists shorter than
    ``MIN_ITEMS`` are walked; anything else is made plain whole."""
    kind = type(value)
    if kind is dict:
        # Its keys all texts: the set of their types, made in C (a generator cost a call per key).
        if (len(value) == 1 and not value.keys().isdisjoint(texts.RESERVED_KEYS)) or not {*map(type, value)} <= _TEXT:
            return codec.plain(value)
        return {
            key: item if type(item) in ATOMIC else cut(item, run_id, memory, pending) for key, item in value.items()
        }
    if kind is not list:
        return codec.plain(value)
    if len(value) < MIN_ITEMS:
        return [item if type(item) in ATOMIC else cut(item, run_id, memory, pending) for item in value]
    found = memory.base(run_id, value, pending)
    if found is None:
        items, exact = _plain_items(value)
        return Cut(None, items, items, exact)
    if not found.drop and found.covered == len(value):
        return Same(found.list_id)
    new, exact = _plain_items(value[found.covered :])
    if found.drop:
        return Cut(found, [*found.known[: found.keep], *found.known[found.keep + found.drop :], *new], new, exact)
    return Cut(found, [*found.known, *new], new, exact)


_TEXT = {str}


def _plain_items(items: list[Any]) -> tuple[list[Any], bool]:
    """``codec.plain(items)``, and whether every item is a text or a mapping of texts to texts (a chat
    message): the items a later list can be compared with as it is given, since Python's ``==`` with them
    holds only for what stores the same (not so for numbers: ``True == 1 == 1.0``, three JSON values).

    Such a message is kept as it is, not copied: a payload is never changed once made (``TraceEvent``), and
    the next prompt's list mostly holds the very same dicts (``Redactor.messages`` gives a message object's
    masked dict to every event that sends it), which then compare with it at the cost of a pointer."""
    plain: list[Any] = []
    exact = True
    for item in items:
        kind = type(item)
        if kind is str or (kind is dict and {*map(type, item), *map(type, item.values())} <= _TEXT):
            plain.append(item)
        else:
            plain.append(codec.plain(item))
            exact = False
    return plain, exact


@dataclass(frozen=True)
class Same:
    """A long list of a payload equal to the stored list ``list_id``: stored as its ``reference``."""

    list_id: int


@dataclass(frozen=True, eq=False)
class Cut:
    """A long list of a payload, compared with the run's remembered lists: the remembered one it starts
    with (``base``, or None), the whole list (plain) and the plain items its row stores (those after the
    base's). Once stored it is remembered (later lists may extend it) only if ``exact``: every item one
    that ``==`` compares as its JSON (``_plain_items``)."""

    base: Base | None
    items: list[Any]
    new: list[Any]
    exact: bool


def cuts(value: Any) -> list[Cut]:
    """The ``Cut`` lists in ``value`` (as ``cut`` made it): each one becomes a row when stored."""
    found: list[Cut] = []
    _cuts(value, found)
    return found


def _cuts(value: Any, found: list[Cut]) -> None:
    kind = type(value)
    if kind is Cut:
        found.append(value)
    elif kind is dict:
        for item in value.values():
            if type(item) is not str:
                _cuts(item, found)
    elif kind is list:
        for item in value:
            if type(item) is not str:
                _cuts(item, found)


def finish(
    value: Any,
    run_id: str,
    pending: Pending,
    split: Callable[[Any], Any],
    store: Callable[[str], int],
) -> Any:
    """``value`` (as ``cut`` made it) as stored: each ``Cut`` stored by ``store(body)`` (which returns the
    new row's id) as its base and its new items after ``split`` (``texts.split`` with the transaction's text
    ids), and replaced by its ``reference``; each ``Same`` by its ``reference``; every other part ``split``."""
    kind = type(value)
    if kind is Same:
        return reference(value.list_id)
    if kind is Cut:
        new = split(value.new)
        base = value.base
        if base is None:
            body: list[Any] = [None, new]
        elif base.drop:
            body = [base.list_id, base.keep, base.drop, new]
        else:
            body = [base.list_id, new]
        list_id = store(codec.compact(body))
        if value.exact:
            pending.lists.append((run_id, list_id, value.items))
        return reference(list_id)
    if kind is dict:
        if len(value) == 1 and not value.keys().isdisjoint(texts.RESERVED_KEYS):
            return split(value)  # a plain value whole (``cut`` does not walk it), wrapped as ``texts.split`` does
        return {
            key: item
            if (type(item) is str and len(item) < texts.MIN_SHARED) or type(item) in NOT_TEXT
            else _finished(item, run_id, pending, split, store)
            for key, item in value.items()
        }
    if kind is list:
        return [_finished(item, run_id, pending, split, store) for item in value]
    return split(value)


def _finished(
    value: Any, run_id: str, pending: Pending, split: Callable[[Any], Any], store: Callable[[str], int]
) -> Any:
    """``finish(value, ...)``, a short text or a number, boolean or None without a call (most items)."""
    kind = type(value)
    if kind is str:
        return value if len(value) < texts.MIN_SHARED else split(value)
    if kind in ATOMIC:
        return value
    return finish(value, run_id, pending, split, store)


@dataclass(frozen=True)
class Known:
    """The texts and the lists (whole, as stored items) that some stored values refer to."""

    texts: dict[int, str]
    lists: dict[int, list[Any]]
    # The lists' items joined so far whose values are plain (``texts.join``'s ``flat``): a sliding or
    # growing history repeats most items of one prompt's list in the next, each joined once.
    flat: dict[int, dict[str, Any]] = field(default_factory=dict)

    def join(self, value: Any) -> Any:
        """A stored value as it was written (``texts.join``)."""
        return texts.join(value, self.texts, self.lists, self.flat)


Fetch = Callable[[list[int]], Awaitable[dict[int, str]]]
"""How a store reads the bodies of some ``texts`` rows by id (every one of them, or ``StoreError``)."""


async def gather(values: Iterable[Any], fetch: Fetch, *, recent: ReadLists | None = None) -> Known:
    """What ``values`` (stored) refer to, fetched by ``fetch(ids)`` (the bodies of those ``texts`` rows,
    every one of them, or ``StoreError``): a round for the values, then one for what their lists refer to
    (the earlier lists they extend and the texts of their items), until nothing is missing. ``recent``: lists
    read whole before, which are not fetched again (nor the chain of lists they extend); the lists read
    now join them."""
    text_ids: set[int] = set()
    list_ids: set[int] = set()
    for value in values:
        found, lists = texts.referenced(value)
        text_ids.update(found)
        list_ids.update(lists)
    bodies: dict[int, str] = {}
    parsed: dict[int, Parsed] = {}
    known: dict[int, list[Any]] = {}  # lists ``recent`` holds whole
    while True:
        if recent is not None:
            for list_id in list_ids - parsed.keys() - known.keys():
                hit = recent.get(list_id)
                if hit is not None:
                    known[list_id] = hit.items
                    text_ids.update(hit.text_ids)
                    list_ids.update(hit.list_ids)
        missing = sorted((text_ids | (list_ids - known.keys())) - bodies.keys())
        if not missing:
            break
        bodies.update(await fetch(missing))
        for list_id in sorted(list_ids - parsed.keys() - known.keys()):
            base, _, _, items = parsed[list_id] = _parse(list_id, bodies[list_id])
            if base is not None:
                list_ids.add(base)
            found, lists = texts.referenced(items)
            text_ids.update(found)
            list_ids.update(lists)
    whole = expand(parsed, known)
    if recent is not None:
        for list_id in sorted(parsed):  # the newest last: a chain read back to its start keeps its latest lists
            recent.add(list_id, whole[list_id])
    return Known(texts=bodies, lists=whole)


class ReadLists:
    """The lists a store read last, whole (as stored items), so that reading a run page by page
    (``RunStore.event_page``) reads each of its lists once: a prompt's list extends the one before it, and
    without them every page would read the chain of lists back to the conversation's first. Holds the
    ``RECENT_READ`` latest; ``clear`` after deleting runs (their ids may be given to new rows)."""

    def __init__(self) -> None:
        self._lists: dict[int, _ReadList] = {}

    def get(self, list_id: int) -> _ReadList | None:
        found = self._lists.pop(list_id, None)
        if found is not None:
            self._lists[list_id] = found  # read again: the newest
        return found

    def add(self, list_id: int, items: list[Any]) -> None:
        if list_id in self._lists:
            return
        if len(self._lists) >= RECENT_READ:
            del self._lists[next(iter(self._lists))]  # the oldest read
        self._lists[list_id] = _ReadList(items)

    def clear(self) -> None:
        self._lists.clear()


RECENT_READ = 64
"""How many lists ``ReadLists`` holds: a page's prompts extend the lists of the page before."""


class _ReadList:
    """A list read whole, as stored (its items may still refer to texts and lists), and what they refer to,
    found when first asked for (most lists read are never asked for again)."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self._referenced: tuple[list[int], list[int]] | None = None

    @property
    def text_ids(self) -> list[int]:
        return self._refers()[0]

    @property
    def list_ids(self) -> list[int]:
        return self._refers()[1]

    def _refers(self) -> tuple[list[int], list[int]]:
        if self._referenced is None:
            self._referenced = texts.referenced(self.items)
        return self._referenced


def expand(parsed: Mapping[int, Parsed], known: Mapping[int, list[Any]] | None = None) -> dict[int, list[Any]]:
    """Each list whole (its base's items, then its own), by id, with the lists ``known`` whole already;
    iterative, so a chain of any length reads."""
    whole: dict[int, list[Any]] = dict(known or {})
    for start in parsed:
        chain: list[int] = []
        current: int | None = start
        while current is not None and current not in whole:
            if current in chain or current not in parsed:
                raise StoreError(f"stored list {start} refers to a list that is missing or itself", hint=_DAMAGED)
            chain.append(current)
            current = parsed[current][0]
        for list_id in reversed(chain):
            base, keep, drop, items = parsed[list_id]
            if base is None:
                whole[list_id] = list(items)
            elif keep is None:
                whole[list_id] = [*whole[base], *items]
            else:
                whole[list_id] = [*whole[base][:keep], *whole[base][keep + drop :], *items]
    return whole


def _parse(list_id: int, body: str) -> Parsed:
    try:
        value = json.loads(codec.grow(body))  # SQLite's store writes it shrunk (``codec.pack_json``)
    except json.JSONDecodeError:
        value = None
    if type(value) is list and len(value) in (2, 4) and (value[0] is None or type(value[0]) is int):
        if len(value) == 2 and type(value[1]) is list:
            return value[0], None, 0, value[1]
        if len(value) == 4 and type(value[1]) is int and type(value[2]) is int and type(value[3]) is list:
            return value[0], value[1], value[2], value[3]
    raise StoreError(f"stored list {list_id} is not a list", hint=_DAMAGED)
