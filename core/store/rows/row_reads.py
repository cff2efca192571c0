"""Records read back from rows, the same for ``SqliteStore`` and ``PostgresStore``: each decodes the JSON of
its values, then fetches the shared texts and lists they refer to (``core.store.rows.shared_lists.gather``, with
the store's own ``fetch``) in as few queries as it can, and puts them back.

Invariants: a record read is equal to the record written (``codec`` and ``shared_lists`` say how values are
stored); the rows are those of ``codec.RUN_COLUMNS``, ``codec.STEP_COLUMNS``, events' ``kind, path,
payload, ts`` and ``thread_rows``' turns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from core.model import codec
from core.model.records import RunRecord, StepRecord, ThreadTurn, TraceEvent
from core.store.rows import shared_lists, thread_rows
from core.store.rows.shared_lists import Fetch

RUN = f"SELECT {codec.RUN_COLUMNS} FROM runs WHERE run_id = ?"
STEPS = f"SELECT {codec.STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY seq"
EVENTS = "SELECT kind, path, payload, ts FROM events WHERE run_id = ? ORDER BY seq"
EVENTS_OF_KIND = "SELECT kind, path, payload, ts FROM events WHERE run_id = ? AND kind = ? ORDER BY seq"
LATEST_OF_SOURCE = (
    f"SELECT {codec.RUN_COLUMNS} FROM runs WHERE source = ? AND parent_run_id IS NULL"
    " ORDER BY created_at DESC, rowid DESC LIMIT 1"
)
"""The queries whose rows these functions read (by run id; the latest top-level run of a blueprint file by its
source), with SQLite's ``?`` (PostgreSQL's store turns it into ``%s``, and ``rowid`` into ``seq``)."""


async def runs(rows: Sequence[Any], fetch: Fetch) -> list[RunRecord]:
    found = [codec.run_from_row(row) for row in rows]
    known = await shared_lists.gather([[run.input, run.output] for run in found], fetch)
    return [dataclasses.replace(run, input=known.join(run.input), output=known.join(run.output)) for run in found]


async def steps(rows: Sequence[Any], fetch: Fetch) -> list[StepRecord]:
    values = [[codec.load(row[5]), codec.load(row[6])] for row in rows]
    known = await shared_lists.gather(values, fetch)
    return [  # built once, with its long texts back (not built, then copied with dataclasses.replace)
        codec.step_from_row(row, known.join(input), known.join(output))
        for row, (input, output) in zip(rows, values, strict=True)
    ]


async def events(rows: Sequence[Any], fetch: Fetch) -> list[TraceEvent]:
    payloads = [codec.load_payload(row[2]) for row in rows]
    known = await shared_lists.gather(payloads, fetch)
    return [
        TraceEvent(kind=row[0], path=row[1], payload=known.join(payload), ts=row[3])
        for row, payload in zip(rows, payloads, strict=True)
    ]


async def turns(rows: Sequence[Any], fetch: Fetch) -> list[ThreadTurn]:
    contents = [codec.load(row[3]) for row in rows]
    shown = [codec.load(row[5]) for row in rows]
    known = await shared_lists.gather([*contents, *shown], fetch)
    return [
        thread_rows.turn_from_row(row, known.join(content), known.join(text))
        for row, content, text in zip(rows, contents, shown, strict=True)
    ]
