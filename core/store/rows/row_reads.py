"""Records read back from rows, the same for ``SqliteStore`` and ``PostgresStore``: each decodes the JSON of
its values, then fetches the shared texts and lists they refer to (``core.store.rows.shared_lists.gather``, with
the store's own ``fetch``) in as few queries as it can, and puts them back.

Invariants: a record read is equal to the record written (``codec`` and ``shared_lists`` say how values are
stored); the rows are those of ``codec.RUN_COLUMNS``, ``codec.STEP_COLUMNS``, events' ``kind, path,
payload, ts`` and ``thread_rows``' turns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, LiteralString

from core.model import codec
from core.model.records import (
    RESUME_EVENT_KINDS,
    Journal,
    RowMark,
    RunRecord,
    StepRecord,
    ThreadTurn,
    TraceEvent,
)
from core.store.rows import shared_lists, thread_rows
from core.store.rows.shared_lists import Fetch, ReadLists

RUN = f"SELECT {codec.RUN_COLUMNS} FROM runs WHERE run_id = ?"
STEPS = f"SELECT {codec.STEP_COLUMNS} FROM steps WHERE run_id = ? ORDER BY seq"
EVENTS = "SELECT kind, path, payload, ts FROM events WHERE run_id = ? ORDER BY seq"
# A kind is looked for as its code (a SQLite store's since m011) and as itself (before it, and PostgreSQL's).
EVENTS_OF_KIND = "SELECT kind, path, payload, ts FROM events WHERE run_id = ? AND kind IN (?, ?) ORDER BY seq"
RESUME_EVENTS = (
    "SELECT kind, path, payload, ts FROM events WHERE run_id = ?"
    f" AND kind IN ({', '.join('?' for _ in range(2 * len(RESUME_EVENT_KINDS)))}) ORDER BY seq"
)
"""A run's events of ``RESUME_EVENT_KINDS``: the run id, then each kind as its code and as itself."""
RESUME_EVENT_PARAMS: tuple[str, ...] = (
    *(codec.kind_code(kind) for kind in RESUME_EVENT_KINDS),
    *RESUME_EVENT_KINDS,
)
CHILDREN = f"SELECT {codec.RUN_COLUMNS} FROM runs WHERE parent_run_id = ? ORDER BY created_at, rowid"
"""The child runs of a run (its sub-workflows'), oldest first."""
LATEST_OF_SOURCE = (
    f"SELECT {codec.RUN_COLUMNS} FROM runs WHERE source = ? AND parent_run_id IS NULL"
    " ORDER BY created_at DESC, rowid DESC LIMIT 1"
)
"""The queries whose rows these functions read (by run id; the latest top-level run of a blueprint file by its
source), with SQLite's ``?`` (PostgreSQL's store turns it into ``%s``, and ``rowid`` into ``seq``)."""

# Pages of a run's rows (``RunStore.step_page``, ``event_page``, ``marks``): run id, after, until, [the path
# and the prefix of the paths below it, ``UNDER``'s three values], limit. Each row ends with its ``seq``. A
# step's ``+run_id`` keeps SQLite from reading the steps through their (run_id, path) index and sorting
# them all for each page: it reads them by ``seq`` (its rowid), as they are numbered (PostgreSQL's store
# drops the ``+``).
_PAGE: LiteralString = " AND seq > ? AND seq <= ?{under} ORDER BY seq LIMIT ?"
UNDER: LiteralString = " AND (path = ? OR substr(path, 1, ?) = ?)"
STEP_PAGE = f"SELECT {codec.STEP_COLUMNS}, seq FROM steps WHERE +run_id = ?" + _PAGE
EVENT_PAGE = "SELECT kind, path, payload, ts, seq FROM events WHERE run_id = ?" + _PAGE
STEP_MARKS = "SELECT seq, path, started_at, kind FROM steps WHERE +run_id = ?" + _PAGE.format(under="")
EVENT_MARKS = "SELECT seq, path, ts, kind FROM events WHERE run_id = ?" + _PAGE.format(under="")
LAST_SEQ = 2**63 - 1
"""``until`` when a page is not bounded: the largest number either database stores."""


def page_query(
    query: LiteralString, run_id: str, after: int, until: int | None, under: str | None, limit: int
) -> tuple[LiteralString, tuple[Any, ...]]:
    """``query`` (``STEP_PAGE`` or ``EVENT_PAGE``) and its parameters for one page."""
    bounds = (run_id, after, LAST_SEQ if until is None else until)
    if under is None:
        return query.format(under=""), (*bounds, limit)
    return query.format(under=UNDER), (*bounds, under, len(under) + 1, under + "/", limit)


def marks(rows: Sequence[Any]) -> list[RowMark]:
    return [RowMark(int(row[0]), row[1], float(row[2]), codec.kind_name(row[3])) for row in rows]


Queries = Callable[[Sequence[tuple[str, tuple[Any, ...]]]], Awaitable[list[list[Any]]]]
"""How a store sends some queries (SQLite's, with their parameters) in the transaction in progress and gives
back the rows of each, in order (PostgreSQL's sends them in one round trip)."""


async def journal(run_id: str, queries: Queries, fetch: Fetch) -> Journal:
    """What run ``run_id`` had recorded (``Journal``), read through ``queries`` and ``fetch``: its steps, its
    events of ``RESUME_EVENT_KINDS`` and its child runs in one round, their texts in one more (and those of
    any lists they refer to), then each child's own."""
    wanted = [(STEPS, (run_id,)), (RESUME_EVENTS, (run_id, *RESUME_EVENT_PARAMS)), (CHILDREN, (run_id,))]
    step_rows, event_rows, child_rows = await queries(wanted)
    values = [[codec.load(row[5]), codec.load(row[6])] for row in step_rows]
    payloads = [codec.load_payload(row[2]) for row in event_rows]
    children = [codec.run_from_row(row) for row in child_rows]
    known = await shared_lists.gather([*values, *payloads, *([run.input, run.output] for run in children)], fetch)
    steps = tuple(
        codec.step_from_row(row, known.join(input), known.join(output))
        for row, (input, output) in zip(step_rows, values, strict=True)
    )
    events = tuple(
        TraceEvent(kind=_KIND_NAME(row[0]), path=row[1], payload=known.join(payload), ts=row[3])
        for row, payload in zip(event_rows, payloads, strict=True)
    )
    records = [dataclasses.replace(run, input=known.join(run.input), output=known.join(run.output)) for run in children]
    nested = tuple([(run, await journal(run.run_id, queries, fetch)) for run in records])
    return Journal(steps=steps, events=events, children=nested)


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


async def events(rows: Sequence[Any], fetch: Fetch, *, recent: ReadLists | None = None) -> list[TraceEvent]:
    payloads = [codec.load_payload(row[2]) for row in rows]
    known = await shared_lists.gather(payloads, fetch, recent=recent)
    return [
        TraceEvent(kind=_KIND_NAME(row[0]), path=row[1], payload=known.join(payload), ts=row[3])
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


_KIND_NAME = codec.kind_name
