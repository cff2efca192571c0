"""How ``PostgresStore`` stores values in a write: long texts and long lists once per run, their rows sent
with the statement that refers to them.

A write encodes its values first: each long text (``core.store.rows.texts``) the store's ``TextCache``
knows is referred to by its id; the others are new rows, unless the run is one the cache does not know
whole (``TextCache.complete``: created by another process, or forgotten), whose texts are then looked up by
digest first (one round trip). The new rows (those texts, and the lists of event payloads:
``core.store.rows.shared_lists``) get their ids from ``Ids``, blocks of the ``texts`` id sequence taken a
round trip per block; and they go to the server in the one JSON parameter (``document``) of the statement
that stores the values (``WITH_TEXTS`` begins it), so a step is one statement.

Invariants:

* Ids are unique across every process writing the database: each block is a set of ``nextval`` values of
  the one sequence, and an id is given out once. Ids taken and never used (a process that ends, a write that
  failed) leave gaps, which are harmless; the sequence never goes back, so an id is never given twice,
  after a crash or a restart of the server either.
* A transaction's new ids go to its ``Pending`` and become known to the store's ``TextCache`` only after it
  committed (the caller's business). A text another writer stored meanwhile may be stored twice in its run,
  each row readable by its id: a few bytes more, never a wrong text.
* Values are stored as ``codec`` says, uncompressed (PostgreSQL compresses long values itself). Bodies and
  digests travel in base64 inside the JSON parameter: a text may hold NUL, which no PostgreSQL text (JSON's
  included) can.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, LiteralString

from core.model import codec
from core.store.rows import shared_lists, texts
from core.store.rows.shared_lists import Pending
from core.store.rows.text_cache import TextCache

if TYPE_CHECKING:
    from psycopg import AsyncConnection

_LOOK_UP = "SELECT id, body FROM texts WHERE run_id = %s AND hash = ANY(%s)"
_TAKE_IDS = "SELECT nextval(pg_get_serial_sequence('texts', 'id')) FROM generate_series(1, %s)"

INSERT_TEXTS: LiteralString = (
    "INSERT INTO texts (id, run_id, hash, body) OVERRIDING SYSTEM VALUE SELECT (t->>0)::bigint, w.d->>'run',"
    " decode(t->>1, 'base64'), decode(t->>2, 'base64') FROM w, json_array_elements(w.d->'texts') t"
)
"""Inserts the new texts of a write from its document ``w.d`` (``document``)."""

WITH_TEXTS: LiteralString = f"WITH w AS (SELECT %s::json AS d), new_texts AS ({INSERT_TEXTS})"
"""The start of a write's statement: its one parameter, its document (``document``), and its new texts stored."""


FIRST_BLOCK = 64
"""How many ids ``Ids`` takes at first; each block after is twice the one before, up to ``LAST_BLOCK``."""
LAST_BLOCK = 1024


class Ids:
    """Ids for new ``texts`` rows, taken from the table's sequence a block at a time (one round trip per
    block): a process that writes little takes few, one that writes much a round trip per ``LAST_BLOCK``."""

    def __init__(self) -> None:
        self._free: list[int] = []
        self._block = FIRST_BLOCK

    async def take(self, db: AsyncConnection[Any], count: int) -> list[int]:
        """``count`` ids no one else is given (taking a block from the server when too few are left)."""
        if count > len(self._free):
            wanted = max(self._block, count - len(self._free))
            rows = await (await db.execute(_TAKE_IDS, (wanted,))).fetchall()
            self._free.extend(sorted((int(row[0]) for row in rows), reverse=True))
            self._block = min(self._block * 2, LAST_BLOCK)
        taken = self._free[len(self._free) - count :]
        del self._free[len(self._free) - count :]
        return taken

    def take_one(self) -> int:
        """One id in hand; ``OutOfIds`` when none is left."""
        if not self._free:
            raise _OutOfIds
        return self._free.pop()


class _OutOfIds(Exception):
    """``Ids.take_one`` found no id in hand (``encode``'s walk in one pass gives up)."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """Values as stored, and the rows of the new texts they refer to (id, digest and body in base64)."""

    values: list[str | None]
    texts: list[tuple[int, str, str]]


def document(run_id: str, encoded: Encoded, **parts: Any) -> str:
    """The one parameter of a write's statement (``WITH_TEXTS``): JSON of the run id (``run``), the rows of
    the new texts (``texts``) and ``parts`` (the rows the statement stores): one value to send, made in C,
    where a parameter each would cost psycopg's adaptation each time."""
    return json.dumps({"run": run_id, "texts": encoded.texts, **parts}, separators=(",", ":"))


async def encode(
    db: AsyncConnection[Any],
    cache: TextCache,
    pending: Pending,
    ids: Ids,
    run_id: str,
    values: Sequence[Any],
    *,
    payloads_from: int | None = None,
    new_run: bool = False,
) -> Encoded:
    """``values`` as stored: compact JSON with the long texts stored once for run ``run_id`` and
    referenced, and the long lists of the values from ``payloads_from`` on (event payloads) too; None stays
    None. A look-up of texts (a run not known whole, unless ``new_run``: created by the same write) and a
    block of ids are read on ``db``; nothing is written: the new rows are in ``Encoded.texts``."""
    lists_from = len(values) if payloads_from is None else payloads_from
    if new_run or cache.complete(run_id):
        # No text to look up: one walk, as SQLite's store makes, new ids taken from those in hand as it goes.
        text_ids, lists = dict(pending.text_ids), len(pending.lists)
        try:
            return _encode_known(cache, pending, ids, run_id, values, lists_from)
        except _OutOfIds:  # more new rows than ids in hand: forget the walk and make the two below, which
            pending.text_ids, pending.lists[lists:] = text_ids, []  # take a block (once per block's worth)
    # Plain data; the long lists of payloads cut against the remembered ones (``shared_lists.cut``), so only
    # their new items are walked. Unlike SQLite's, the lists of one write never extend each other: their
    # ids are taken together below.
    plain = [
        None if value is None else shared_lists.cut(value, run_id, cache.lists, pending) if index >= lists_from
        else codec.plain(value)
        for index, value in enumerate(values)
    ]  # fmt: skip
    new_lists = [cut for value in plain[lists_from:] for cut in shared_lists.cuts(value)]
    found: dict[str, int] = {}
    missing: dict[str, bytes] = {}
    for value in [*plain, *(cut.new for cut in new_lists)]:
        for text in texts.shared_texts(value):
            if text not in found and text not in missing:
                known = cache.get(run_id, text, pending)
                if known is None:
                    missing[text] = texts.digest(text)
                else:
                    found[text] = known
    if missing and not new_run and not cache.complete(run_id):
        for text, row_id in (await _look_up(db, run_id, missing)).items():
            del missing[text]
            found[text] = pending.text_ids[(run_id, text)] = row_id
    free = await ids.take(db, len(missing) + len(new_lists)) if missing or new_lists else []
    rows: list[tuple[int, str, str]] = []

    def insert(body: str, digest: bytes) -> int:
        new_id = free.pop()
        rows.append((new_id, _base64(digest), _base64(body.encode("utf-8"))))
        return new_id

    for text, digest in missing.items():
        found[text] = insert(text, digest)
        pending.text_ids[(run_id, text)] = found[text]

    def split(value: Any) -> Any:
        return texts.split(value, found.__getitem__)

    def store_list(body: str) -> int:
        return insert(body, b"")  # found by its id only, never by its digest

    stored = [
        None if value is None else shared_lists.finish(value, run_id, pending, split, store_list) if index >= lists_from
        else split(value)
        for index, value in enumerate(plain)
    ]  # fmt: skip
    return Encoded([None if value is None else codec.compact(value) for value in stored], rows)


def _encode_known(
    cache: TextCache, pending: Pending, ids: Ids, run_id: str, values: Sequence[Any], lists_from: int
) -> Encoded:
    """``encode`` of the values of a run whose texts the cache knows whole: one walk, each new text and list
    given an id in hand as it is met (``_OutOfIds`` when none is left). The same values and rows as the two
    walks of ``encode``, but for which id each new row gets."""
    rows: list[tuple[int, str, str]] = []

    def text_id(text: str) -> int:
        known = cache.get(run_id, text, pending)
        if known is None:
            known = pending.text_ids[(run_id, text)] = ids.take_one()
            rows.append((known, _base64(texts.digest(text)), _base64(text.encode("utf-8"))))
        return known

    def split(value: Any) -> Any:
        return texts.split(value, text_id)

    def store_list(body: str) -> int:
        new_id = ids.take_one()
        rows.append((new_id, _EMPTY, _base64(body.encode("utf-8"))))  # found by its id only, never by its digest
        return new_id

    # The lists of every payload cut first, then stored: as ``encode``'s, they never extend each other.
    plain = [
        None if value is None else shared_lists.cut(value, run_id, cache.lists, pending) if index >= lists_from
        else value
        for index, value in enumerate(values)
    ]  # fmt: skip
    stored = [
        None if value is None else shared_lists.finish(value, run_id, pending, split, store_list) if index >= lists_from
        else split(codec.plain(value))
        for index, value in enumerate(plain)
    ]  # fmt: skip
    return Encoded([None if value is None else codec.compact(value) for value in stored], rows)


async def _look_up(db: AsyncConnection[Any], run_id: str, missing: dict[str, bytes]) -> dict[str, int]:
    """The ids of the texts of ``missing`` (text → digest) that run ``run_id`` has stored already; the body
    is compared too, so a digest collision never makes one text stand for another."""
    rows = await (await db.execute(_LOOK_UP, (run_id, list(set(missing.values()))))).fetchall()
    stored: dict[str, int] = {}
    for row_id, body in rows:
        text = bytes(body).decode("utf-8")
        if text in missing:
            stored[text] = int(row_id)
    return stored


def _base64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


_EMPTY = _base64(b"")
