"""The writes of ``SqliteStore`` that store values, each done in one call on the connection's thread.

A step is recorded in one transaction; sent statement by statement through aiosqlite, each statement
is a round trip between the event loop and the connection's thread (look up the texts, insert the new
ones, replace the step, insert the events, commit). ``Batch`` does the whole transaction on that thread
in one call instead (``transaction.in_one_call``): the values are encoded there, once, with the text ids
the same transaction looks up.

Invariants:

* A ``Batch`` lives for one transaction; the text and list ids it stores go to its ``Pending`` and become
  known to the store (``TextCache.commit``) only after COMMIT.
* Values are stored as ``codec`` says (JSON, compressed when long); the long texts of every value are
  stored once per run (``core.store.rows.texts``); the long lists of event payloads too
  (``core.store.rows.shared_lists``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from core.model import codec
from core.model.errors import StoreError
from core.model.records import RunRecord, RunUpdate, StepRecord, TraceEvent
from core.store.rows import queue_rows, shared_lists, texts, thread_rows
from core.store.rows.lookup import NO_RUN_HINT
from core.store.rows.shared_lists import Pending
from core.store.rows.text_cache import TextCache

_INSERT_RUN = f"INSERT INTO runs ({codec.RUN_COLUMNS}) VALUES ({', '.join('?' * len(codec.RUN_COLUMNS.split(',')))})"
_REPLACE_STEP = (
    f"INSERT OR REPLACE INTO steps ({codec.STEP_COLUMNS})"
    f" VALUES ({', '.join('?' * len(codec.STEP_COLUMNS.split(',')))})"
)
_INSERT_EVENT = "INSERT INTO events (run_id, path, kind, ts, payload) VALUES (?, ?, ?, ?, ?)"
_INSERT_TEXT = "INSERT INTO texts (run_id, hash, body) VALUES (?, ?, ?)"
# ``hash != x''`` lets SQLite use the partial index ``texts_by_hash`` (m010); the second digest finds a text
# stored before it, by its digest of then (``texts.digest``).
_FIND_TEXT = "SELECT id, body FROM texts WHERE hash IN (?, ?) AND hash != x'' AND run_id = ?"
_UPDATE_RUN = f"UPDATE runs SET {codec.UPDATE_RUN_SET.format('?')} WHERE run_id = ?"


class Batch:
    """One write transaction's statements on ``conn`` (the caller began it and commits it)."""

    def __init__(self, conn: sqlite3.Connection, cache: TextCache, pending: Pending) -> None:
        self._conn = conn
        # One cursor for the statements a step's write makes (Connection.execute makes a cursor per statement).
        self._writes = conn.cursor()
        self._cache = cache
        self._pending = pending

    def create_run(self, run: RunRecord) -> None:
        # The run's long texts are inserted before its row, which they reference: check at COMMIT.
        self._conn.execute("PRAGMA defer_foreign_keys = ON")
        input, output = self.encode(run.run_id, [run.input, run.output])
        cursor = self._conn.execute(_INSERT_RUN + " ON CONFLICT (run_id) DO NOTHING", codec.run_row(run, input, output))
        if cursor.rowcount == 0:
            raise StoreError(f"run {run.run_id} already exists", hint="every run needs a new id")
        self._pending.created_runs.append(run.run_id)

    def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        input, output, *payloads = self.encode(
            step.run_id, [step.input, step.output, *_payloads(events)], payloads_from=2
        )
        # REPLACE deletes a row at the same (run_id, path) before inserting: the new row gets a new seq.
        self._writes.execute(_REPLACE_STEP, codec.step_row(step, input, output, coded=True))
        self._insert_events(step.run_id, events, payloads)

    def record_events(self, run_id: str, events: Sequence[TraceEvent]) -> None:
        self._insert_events(run_id, events, self.encode(run_id, _payloads(events), payloads_from=0))

    def update_run(self, run_id: str, update: RunUpdate) -> None:
        [encoded_output] = self.encode(run_id, [update.output])
        values = codec.update_row(update, encoded_output)
        cursor = self._conn.execute(_UPDATE_RUN, (*values, run_id))
        if cursor.rowcount == 0:
            raise StoreError(f"no run {run_id} to update", hint="create the run first")
        if update.status in queue_rows.LEAVES:  # settled: out of the queue with it (core.store.rows.queue_rows)
            cursor.execute(queue_rows.REMOVE, (run_id,))

    def queue_runs(self, runs: Sequence[RunRecord]) -> None:
        self._conn.execute("PRAGMA defer_foreign_keys = ON")
        for run in runs:
            input, output = self.encode(run.run_id, [run.input, run.output])
            self._conn.execute(_INSERT_RUN, codec.run_row(run, input, output))
            self._conn.execute(queue_rows.INSERT, (run.run_id, run.thread))

    def start_thread(self, run: RunRecord, roles: Sequence[tuple[str, Any, int | None, str | None]]) -> bool:
        """Create ``run`` with ``roles`` as its thread turns when no run names its thread yet; False when one does."""
        if self._conn.execute(thread_rows.THREAD_TAKEN, (run.thread,)).fetchall():
            return False
        self.create_run(run)
        self.record_thread_turns(run.run_id, roles)
        return True

    def record_thread_turns(self, run_id: str, roles: Sequence[tuple[str, Any, int | None, str | None]]) -> None:
        """Replace run ``run_id``'s thread turns by ``roles`` (role, content, tokens, shown); nothing for a run
        in no thread."""
        found = self._conn.execute(thread_rows.RUN_THREAD, (run_id,)).fetchall()
        if not found:
            raise StoreError(f"cannot record the thread turns of run {run_id}: no such run", hint=NO_RUN_HINT)
        if found[0][0] is None:
            return
        stored = self.encode(run_id, [content for _, content, _, _ in roles] + [shown for *_, shown in roles])
        contents, shown = stored[: len(roles)], stored[len(roles) :]
        self._conn.execute(thread_rows.DELETE_RUN_TURNS, (run_id,))
        self._conn.executemany(
            thread_rows.INSERT_TURN,
            [
                (run_id, index, role, content, tokens, text)
                for index, ((role, _, tokens, _), content, text) in enumerate(zip(roles, contents, shown, strict=True))
            ],
        )

    def encode(
        self, run_id: str, values: Sequence[Any], *, payloads_from: int | None = None
    ) -> list[str | bytes | None]:
        """``values`` as stored: compact JSON with the long texts stored once for run ``run_id`` and
        referenced, and the long lists of the values from ``payloads_from`` on (event payloads) too,
        compressed when long (None stays None)."""
        ids: dict[str, int] = {}

        def text_id(text: str) -> int:
            # Looked up as the value is split, one walk: on this thread a statement costs no round trip.
            found = ids.get(text)
            if found is None:
                found = ids[text] = self._text_id(run_id, text)
            return found

        def split(value: Any) -> Any:
            return texts.split(value, text_id)

        memory, store, lists_from = self._cache.lists, self._store_list(run_id), payloads_from
        encoded: list[str | bytes | None] = []
        for index, value in enumerate(values):
            if value is None:
                encoded.append(None)
                continue
            if lists_from is not None and index >= lists_from:
                # Cut, then stored at once: a later payload of this transaction may extend this one's lists.
                cut = shared_lists.cut(value, run_id, memory, self._pending)
                stored = shared_lists.finish(cut, run_id, self._pending, split, store)
            else:
                stored = split(codec.plain(value))
            encoded.append(codec.pack_json(codec.compact(stored)))
        return encoded

    def _store_list(self, run_id: str) -> Callable[[str], int]:
        def store(body: str) -> int:
            # Found by its id only, never by its digest: an empty one keeps it out of text look-ups.
            cursor = self._writes.execute(_INSERT_TEXT, (run_id, _BLOB(), codec.pack_json(body)))
            assert cursor.lastrowid is not None
            return cursor.lastrowid

        return store

    def _text_id(self, run_id: str, text: str) -> int:
        """The id of ``text`` among run ``run_id``'s texts, inserting it when it is not stored yet."""
        known = self._cache.get(run_id, text, self._pending)
        if known is not None:
            return known
        digest = texts.run_digest(run_id, text)
        found = None if self._cache.complete(run_id) else self._find_text(run_id, text, digest)
        if found is None:
            cursor = self._writes.execute(_INSERT_TEXT, (run_id, _BLOB(digest), codec.pack(text)))
            assert cursor.lastrowid is not None
            found = cursor.lastrowid
        self._pending.text_ids[(run_id, text)] = found
        return found

    def _find_text(self, run_id: str, text: str, digest: bytes) -> int | None:
        found = self._conn.execute(_FIND_TEXT, (_BLOB(digest), _BLOB(texts.digest(text)), run_id))
        for row_id, body in found:
            if codec.unpack(body) == text:  # the body too: a digest collision never swaps two texts
                return int(row_id)
        return None

    def _insert_events(self, run_id: str, events: Sequence[TraceEvent], payloads: Sequence[str | bytes | None]) -> None:
        if events:
            self._writes.executemany(
                _INSERT_EVENT,
                [(run_id, e.path, _KIND_CODE(e.kind), e.ts, p) for e, p in zip(events, payloads, strict=True)],
            )


# A digest is bound as a bytearray, the same BLOB: sqlite3 passes a bytes parameter through its adaptation
# protocol first, which costs a formatted AttributeError (``PrepareProtocol.__adapt__``) every time.
_BLOB = bytearray
_KIND_CODE = codec.kind_code  # an event's kind as one character (m011)


def _payloads(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    return [dict(event.payload) for event in events]
