"""The rows of ``flujo lens list``: recent runs, masked, with their step counts, and child runs placed under
the run that started them.

A run the store says is ``running`` is being executed only if a live process holds its claim
(``RunStore.claimed_runs``); otherwise the process that ran it is gone (killed, crashed) and the run is
shown as what it is, ``interrupted`` (``flujo resume`` takes it at once), with the process named.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core import Redactor, RunRecord, RunStatus, RunStore
from lens.masking import Masker


@dataclass(frozen=True)
class RunRow:
    """A run as ``lens list`` shows it. ``depth`` is 1 for a child run shown under its parent; a child
    run whose parent is not in the list stays at depth 0 (its ``parent_run_id`` says whose it is)."""

    record: RunRecord
    steps: int
    depth: int = 0
    abandoned: bool = False  # stored as running, but no live process holds its claim: its process is gone

    @property
    def status(self) -> RunStatus:
        """The run's status as shown: ``interrupted`` for an abandoned run, else the stored one."""
        return "interrupted" if self.abandoned else self.record.status

    @property
    def note(self) -> str | None:
        """``process 4242 is gone`` for an abandoned run (from its owner, ``pid 4242 on build-01``)."""
        if not self.abandoned:
            return None
        pid = re.match(r"pid (\d+)\b", self.record.owner or "")
        return f"process {pid.group(1)} is gone" if pid else "its process is gone"


async def recent_runs(
    store: RunStore,
    *,
    redactor: Redactor,
    limit: int = 20,
    status: RunStatus | None = None,
    thread: str | None = None,
) -> list[RunRow]:
    """Up to ``limit`` runs, newest first (as the store lists them), masked, with their step counts. A
    ``running`` run no live process executes is abandoned, and counts as ``interrupted`` for ``status``."""
    if status in ("running", "interrupted"):
        running = await store.list_runs(limit=limit, status="running", thread=thread)
        gone = await abandoned(store, running)
        if status == "running":
            records = [r for r in running if r.run_id not in gone]
        else:
            stopped = await store.list_runs(limit=limit, status="interrupted", thread=thread)
            picked = [*stopped, *(r for r in running if r.run_id in gone)]
            records = sorted(picked, key=lambda r: r.created_at, reverse=True)[:limit]
    else:
        records = await store.list_runs(limit=limit, status=status, thread=thread)
        gone = await abandoned(store, records)
    counts = await store.step_counts([r.run_id for r in records])
    masker = Masker(redactor)
    return [RunRow(masker.run(r), counts.get(r.run_id, 0), abandoned=r.run_id in gone) for r in records]


async def as_shown(store: RunStore, record: RunRecord) -> RunRecord:
    """``record`` as ``lens show`` and ``lens trace`` show it: ``interrupted`` when it is a ``running`` run
    whose process is gone (as ``lens list`` shows it)."""
    if await abandoned(store, [record]):
        return dataclasses.replace(record, status="interrupted")
    return record


async def abandoned(store: RunStore, records: Sequence[RunRecord]) -> set[str]:
    """The ids of the ``running`` runs of ``records`` that no live process executes. A run never claimed (no
    owner: the moment between its creation and its claim) is not judged."""
    running = [r.run_id for r in records if r.status == "running" and r.owner is not None]
    if not running:
        return set()
    return set(running) - await store.claimed_runs(running)


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
