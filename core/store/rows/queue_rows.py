"""The SQL of the run queue (``flujo submit`` / ``flujo worker``), written once for both stores: SQLite's
``?`` parameters (``core.store.postgres_backend.store`` turns them into ``%s``).

Invariants:

* A run is in ``queue`` from its submission until it ends, pauses or is cancelled; ``taken`` is 1 once a
  worker started it. Which worker executes it now is its claim's business (``core.store.rows.claims`` on SQLite,
  an advisory lock on PostgreSQL), never this table's: a taken run whose claim is gone was left by a dead
  worker and is taken again, to be resumed from its journal.
* Runs of one thread never run at the same time: a run is offered only when no earlier run of its thread is
  still in the queue (``WAITING``), so the second waits until the first has ended or paused; and a worker
  takes a run of a thread only with the thread's claim (``claims.thread_key``), which a ``flujo run
  --thread`` or ``flujo resume`` of the same thread holds while it executes, so the run waits for it too.
  A taken run holds its thread's claim until its own is released.
* A run leaves the queue when it ends, pauses or is cancelled, and when ``flujo resume`` takes it by hand
  (under its claim, before executing it): from then on it is that process's, like any run started with
  ``flujo run``. A row whose run is no longer queued, running or interrupted is never executed again: it is
  taken only to be removed (``MARK_RUNNING`` leaves such a run as it is).
* A run leaves the queue in the transaction that records it ended, paused or was cancelled (``LEAVES``:
  ``update_run`` removes its row with the status), so a worker killed between the two leaves no row behind;
  an interrupted run stays, to be taken again.
* Offers are in submission order. On PostgreSQL the worker locks the rows it looks at with ``FOR UPDATE
  SKIP LOCKED``, so workers never wait on each other's candidates; on SQLite the pick is one ``BEGIN
  IMMEDIATE`` transaction, one worker at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from core.model.records import Journal, RunRecord, RunStatus
from core.store.rows import row_reads
from core.store.rows.row_reads import Queries
from core.store.rows.shared_lists import Fetch

OFFERED = (
    "SELECT q.run_id, q.thread FROM queue q WHERE q.taken = 0 AND q.cancel = 0"
    " AND NOT EXISTS (SELECT 1 FROM queue p WHERE p.thread = q.thread AND p.seq < q.seq)"
    " ORDER BY q.seq LIMIT ?"
)
"""Queued runs a worker may start now, oldest first."""

TAKEN = "SELECT q.run_id, q.cancel, q.thread FROM queue q WHERE q.taken = 1 ORDER BY q.seq LIMIT ?"
"""Runs some worker started: those whose claim is gone are taken again."""

WAITING = "SELECT COUNT(*) FROM queue WHERE taken = 0"
"""How many runs wait to be started (including those behind an earlier run of their thread)."""

INSERT = "INSERT INTO queue (run_id, thread) VALUES (?, ?)"
MARK_TAKEN = "UPDATE queue SET taken = 1 WHERE run_id = ?"
MARK_RUNNING = (
    "UPDATE runs SET status = 'running', owner = ? WHERE run_id = ? AND status IN ('queued', 'running', 'interrupted')"
)
RUNNABLE = ("queued", "running", "interrupted")
"""The statuses of a run a worker executes when it takes it from the queue; any other was settled elsewhere."""
LEAVES: tuple[RunStatus, ...] = ("completed", "failed", "paused", "limit_reached", "aborted", "cancelled")
"""The statuses with which a run leaves the queue (in the transaction that records them)."""
REQUEUE = "UPDATE queue SET taken = 0 WHERE run_id = ?"
REMOVE = "DELETE FROM queue WHERE run_id = ?"
ONE = "SELECT taken FROM queue WHERE run_id = ?"
ASK_CANCEL = "UPDATE queue SET cancel = 1 WHERE run_id = ?"
MARK_CANCELLED = "UPDATE runs SET status = 'cancelled', finished_at = ?, pause_path = NULL WHERE run_id = ?"

BATCH = 16
"""How many candidate rows a worker looks at per pick."""

Cancelled = Literal["cancelled", "requested", "not_queued"]
"""What ``cancel_queued`` did: cancelled the run itself (nobody executes it), asked the worker executing it
to stop, or nothing (the run is not in the queue: it ended, paused, was resumed by hand or never submitted)."""


@dataclass(frozen=True)
class Taken:
    """A run a worker took from the queue (``take_queued``), as the taking transaction read it: ``record``
    with the status it was given then (``running``, when it was runnable; as it was, when it was settled
    elsewhere), and whether it is ``fresh``: queued and never started, so it has no journal, no trace and no
    answered question yet (a run taken again after its worker died, or put back in the queue, is not).
    ``journal``: a run taken again to be executed, what it had recorded (``Journal``), read in the same
    transaction; None for a fresh run and for one settled elsewhere."""

    record: RunRecord
    fresh: bool
    journal: Journal | None = None


def taken(record: RunRecord, owner: str, journal: Journal | None = None) -> Taken:
    """What taking ``record`` (read before it was marked running by ``owner``) gives the worker."""
    if record.status not in RUNNABLE:
        return Taken(record, fresh=False)
    fresh = record.status == "queued"
    return Taken(replace(record, status="running", owner=owner), fresh=fresh, journal=None if fresh else journal)


async def read_taken(row: Sequence[Any], owner: str, queries: Queries, fetch: Fetch) -> Taken:
    """What taking the run of ``row`` (``row_reads.RUN``'s, read before ``MARK_RUNNING``) gives the worker,
    read through the taking transaction's ``queries`` and ``fetch``: the record with its texts and, for a run
    taken again to be executed, its ``Journal``."""
    [record] = await row_reads.runs([row], fetch)
    again = record.status in RUNNABLE and record.status != "queued"
    journal = await row_reads.journal(record.run_id, queries, fetch) if again else None
    return taken(record, owner, journal)
