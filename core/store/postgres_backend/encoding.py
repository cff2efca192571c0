"""How ``PostgresStore`` stores values in a write transaction: long texts and long lists once per run, in
one round trip to the server.

The texts a write needs are looked up by digest, and ids for the new rows (texts not stored yet, and the
lists of event payloads: ``core.store.rows.shared_lists``) are taken from the ``texts`` id sequence, both in
the same pipelined round trip; the rows are then inserted with those ids without waiting for a reply, and
the values encoded (each text once) with the ids they refer to. Ids taken and not used leave gaps in the
sequence, which is harmless.

Invariants: a transaction's new ids go to its ``Pending`` and become known to the store's ``TextCache``
only after COMMIT (the caller's business); values are stored as ``codec`` says, uncompressed (PostgreSQL
compresses long values itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.model import codec
from core.store.rows import shared_lists, texts
from core.store.rows.shared_lists import Pending
from core.store.rows.text_cache import TextCache

if TYPE_CHECKING:
    from psycopg import AsyncConnection

_LOOK_UP = "SELECT id, body FROM texts WHERE run_id = %s AND hash = ANY(%s)"
_TAKE_IDS = "SELECT nextval(pg_get_serial_sequence('texts', 'id')) FROM generate_series(1, %s)"
_INSERT = "INSERT INTO texts (id, run_id, hash, body) OVERRIDING SYSTEM VALUE VALUES (%s, %s, %s, %s)"


async def encode(
    db: AsyncConnection[Any],
    cache: TextCache,
    pending: Pending,
    run_id: str,
    values: Sequence[Any],
    *,
    payloads_from: int | None = None,
) -> list[str | None]:
    """``values`` as stored: compact JSON with the long texts stored once for run ``run_id`` and
    referenced, and the long lists of the values from ``payloads_from`` on (event payloads) too; None stays
    None."""
    lists_from = len(values) if payloads_from is None else payloads_from
    # Plain data; the long lists of payloads cut against the remembered ones (``shared_lists.cut``), so only
    # their new items are walked. Unlike SQLite's, the lists of one transaction never extend each other:
    # their ids are taken in the round trip below.
    plain = [
        None if value is None else shared_lists.cut(value, run_id, cache.lists, pending) if index >= lists_from
        else codec.plain(value)
        for index, value in enumerate(values)
    ]  # fmt: skip
    new_lists = [cut for value in plain[lists_from:] for cut in shared_lists.cuts(value)]
    ids: dict[str, int] = {}
    missing: dict[bytes, list[str]] = {}
    wanted = {text for value in [*plain, *(cut.new for cut in new_lists)] for text in texts.shared_texts(value)}
    for text in wanted:
        known = cache.get(run_id, text, pending)
        if known is not None:
            ids[text] = known
        else:
            missing.setdefault(texts.digest(text), []).append(text)
    needed = sum(len(group) for group in missing.values())
    needed += len(new_lists)
    # Both queries go out together (pipeline mode); the first fetch waits for both.
    found = await db.execute(_LOOK_UP, (run_id, list(missing))) if missing else None
    taken = await db.execute(_TAKE_IDS, (needed,)) if needed else None
    if found is not None:
        for row_id, body in await found.fetchall():
            text = bytes(body).decode("utf-8")
            if text in wanted:
                ids[text] = int(row_id)
    free = [int(row[0]) for row in await taken.fetchall()] if taken is not None else []
    rows: list[tuple[int, str, bytes, bytes]] = []

    def insert(text: str, digest: bytes) -> int:
        new_id = free.pop()
        rows.append((new_id, run_id, digest, text.encode("utf-8")))
        return new_id

    for digest, group in missing.items():
        for text in group:
            if text not in ids:
                ids[text] = insert(text, digest)
            pending.text_ids[(run_id, text)] = ids[text]

    def split(value: Any) -> Any:
        return texts.split(value, ids.__getitem__)

    def store_list(body: str) -> int:
        return insert(body, b"")  # found by its id only, never by its digest

    split_values = [
        None if value is None else shared_lists.finish(value, run_id, pending, split, store_list) if index >= lists_from
        else split(value)
        for index, value in enumerate(plain)
    ]  # fmt: skip
    if rows:
        async with db.cursor() as cursor:
            await cursor.executemany(_INSERT, rows)
    return [None if value is None else codec.compact(value) for value in split_values]
