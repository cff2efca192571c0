"""How threads are kept in SQLite (table ``thread_turns``, migration ``m005_threads``): the queries and
the conversion of their rows, for ``SqliteStore``.

Invariants:

* A thread is the runs whose ``runs.thread`` names it; a turn belongs to the run that said it
  (``thread_turns(run_id, idx, role, content, tokens, shown)``; ``shown`` since ``m009_thread_turn_text``).
  Order: run creation (``created_at``, then ``rowid``, the order ``list_runs`` uses), then ``idx``.
* ``content`` is stored as the run's other values are: JSON text whose long strings are references to the
  run's ``texts`` rows (``core.store.rows.texts``), so a turn's text, already stored for the step that said it,
  is not stored again. Reading substitutes the texts back. ``shown`` (NULL: as ``content``) is stored the
  same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.model.errors import StoreError
from core.model.records import ThreadSummary, ThreadTurn

_SUMMARY = """
    SELECT r.thread, COUNT(*), COALESCE(SUM(t.turns), 0), COALESCE(SUM(t.tokens), 0),
           MIN(r.created_at), MAX(r.created_at)
    FROM runs AS r
    LEFT JOIN (
        SELECT run_id, COUNT(*) AS turns, SUM(COALESCE(tokens, 0)) AS tokens FROM thread_turns GROUP BY run_id
    ) AS t ON t.run_id = r.run_id
    WHERE r.thread IS NOT NULL {where}
    GROUP BY r.thread
    ORDER BY MAX(r.created_at) DESC, r.thread
"""
ALL_SUMMARIES = _SUMMARY.format(where="")
ONE_SUMMARY = _SUMMARY.format(where="AND r.thread = ?")

_TURNS = """
    SELECT t.run_id, t.idx, t.role, t.content, t.tokens, t.shown
    FROM thread_turns AS t JOIN runs AS r ON r.run_id = t.run_id
    WHERE r.thread = ? {where}
    ORDER BY r.created_at, r.rowid, t.idx
"""
TURNS = _TURNS.format(where="")
# Row values: the runs created before the given one, in the order above (unknown run: NULL, no rows).
TURNS_BEFORE = _TURNS.format(
    where="AND (r.created_at, r.rowid) < (SELECT created_at, rowid FROM runs WHERE run_id = ?)"
)

RUN_THREAD = "SELECT thread FROM runs WHERE run_id = ?"
THREAD_TAKEN = "SELECT 1 FROM runs WHERE thread = ? LIMIT 1"  # a thread exists once a run names it
DELETE_RUN_TURNS = "DELETE FROM thread_turns WHERE run_id = ?"
INSERT_TURN = "INSERT INTO thread_turns (run_id, idx, role, content, tokens, shown) VALUES (?, ?, ?, ?, ?, ?)"
DELETE_THREAD_TURNS = "DELETE FROM thread_turns WHERE run_id IN (SELECT run_id FROM runs WHERE thread = ?)"
LEAVE_THREAD = "UPDATE runs SET thread = NULL WHERE thread = ?"


def summary_from_row(row: Sequence[Any]) -> ThreadSummary:
    return ThreadSummary(
        name=str(row[0]),
        runs=int(row[1]),
        turns=int(row[2]),
        tokens=int(row[3]),
        first_run_at=float(row[4]),
        last_run_at=float(row[5]),
    )


def turn_from_row(row: Sequence[Any], content: Any, shown: Any) -> ThreadTurn:
    """A turn from its row and its decoded ``content`` and ``shown`` (texts substituted back)."""
    role = row[2]
    if role not in ("user", "assistant") or not isinstance(content, str) or not isinstance(shown, str | None):
        raise StoreError(
            f"a stored turn of run {row[0]} is not a user or assistant text", hint="the database may be damaged"
        )
    return ThreadTurn(run_id=str(row[0]), index=int(row[1]), role=role, content=content, tokens=row[4], shown=shown)
