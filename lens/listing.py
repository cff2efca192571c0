"""The rows of ``flujo lens list``: recent runs, masked, with their step counts, and child runs placed under
the run that started them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from core.ports import RunStore
from core.records import RunRecord, RunStatus
from core.redaction import Redactor
from lens.masking import Masker


@dataclass(frozen=True)
class RunRow:
    """A run as ``lens list`` shows it. ``depth`` is 1 for a child run shown under its parent; a child
    run whose parent is not in the list stays at depth 0 (its ``parent_run_id`` says whose it is)."""

    record: RunRecord
    steps: int
    depth: int = 0


async def recent_runs(
    store: RunStore,
    *,
    redactor: Redactor,
    limit: int = 20,
    status: RunStatus | None = None,
    thread: str | None = None,
) -> list[RunRow]:
    """Up to ``limit`` runs, newest first (as the store lists them), masked, with their step counts."""
    records = await store.list_runs(limit=limit, status=status, thread=thread)
    counts = await store.step_counts([r.run_id for r in records])
    masker = Masker(redactor)
    return [RunRow(masker.run(r), counts.get(r.run_id, 0)) for r in records]


def nested(rows: Sequence[RunRow]) -> list[RunRow]:
    """``rows`` in display order: each run followed by its child runs that are in ``rows`` (oldest first,
    at depth 1, then their own children deeper), the others in their order."""
    listed = {row.record.run_id for row in rows}
    children: dict[str, list[RunRow]] = {}
    for row in rows:
        parent = row.record.parent_run_id
        if parent is not None and parent in listed:
            children.setdefault(parent, []).append(row)
    ordered: list[RunRow] = []

    def place(row: RunRow, depth: int) -> None:
        ordered.append(dataclasses.replace(row, depth=depth))
        for child in sorted(children.get(row.record.run_id, []), key=lambda r: r.record.created_at):
            if depth < 16:  # parent links that loop (a damaged store) must not recurse forever
                place(child, depth + 1)

    for row in rows:
        parent = row.record.parent_run_id
        if parent is None or parent not in listed:
            place(row, 0)
    return ordered
