"""The rows of ``flujo lens list``: recent runs, masked, with their step counts, and child runs placed under
the run that started them.

A run the store says is ``running`` is being executed only if a live process holds its claim
(``RunStore.claimed_runs``); otherwise the process that ran it is gone (killed, crashed) and the run is
shown as what it is, ``interrupted`` (``flujo resume`` takes it at once), with the process named.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator, Sequence
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
    since: float | None = None,
    search: str | None = None,
    offset: int = 0,
) -> list[RunRow]:
    """Up to ``limit`` runs, newest first (as the store lists them), masked, with their step counts, past the
    ``offset`` newest of those that match: ``status`` (a ``running`` run no live process executes is
    abandoned, and counts as ``interrupted``), ``thread``, created at ``since`` or later, and whose input or
    output, as masked, holds ``search`` (any case). The search reads the masked texts only, so a secret's
    value never matches; the store is read in pages until enough runs match."""
    if limit <= 0:
        return []
    masker = Masker(redactor)
    needle = search.casefold() if search else None
    direct = needle is None and status not in ("running", "interrupted")
    rows: list[RunRow] = []
    skip = 0 if direct else offset  # a direct read skips them in the store
    first, size = (offset, limit) if direct else (0, max(limit, _PAGE))
    async for records, gone in _pages(store, status=status, thread=thread, since=since, first=first, size=size):
        for record in records:
            masked = masker.run(record)
            if needle is not None and needle not in _searched_text(masked):
                continue
            if skip:
                skip -= 1
                continue
            rows.append(RunRow(masked, 0, abandoned=record.run_id in gone))
            if len(rows) == limit:
                break
        if len(rows) == limit or direct:
            break
    counts = await store.step_counts([row.record.run_id for row in rows])
    return [dataclasses.replace(row, steps=counts.get(row.record.run_id, 0)) for row in rows]


_PAGE = 200  # runs read at a time while looking for runs that match


async def _pages(
    store: RunStore, *, status: RunStatus | None, thread: str | None, since: float | None, first: int, size: int
) -> AsyncIterator[tuple[list[RunRecord], set[str]]]:
    """The runs with ``status`` (as ``recent_runs`` counts it), in ``thread``, created at ``since`` or later,
    newest first from the ``first``, ``size`` at a time, each page with the ids of its abandoned runs."""
    if status == "interrupted":  # stored so, or running with no live process: both lists, merged by age
        running = await _all(store, "running", thread, since)
        gone = await abandoned(store, running)
        stored = await _all(store, "interrupted", thread, since)
        merged = [*stored, *(r for r in running if r.run_id in gone)]
        yield sorted(merged, key=lambda r: r.created_at, reverse=True), gone
        return
    offset = first
    while True:
        page = await store.list_runs(limit=size, offset=offset, status=status, thread=thread, created_after=since)
        gone = await abandoned(store, page)
        yield ([r for r in page if r.run_id not in gone] if status == "running" else page), gone
        if len(page) < size:
            return
        offset += size


async def _all(store: RunStore, status: RunStatus, thread: str | None, since: float | None) -> list[RunRecord]:
    """Every run with ``status`` (as stored), a page at a time: the running and interrupted runs are few."""
    found: list[RunRecord] = []
    while True:
        page = await store.list_runs(limit=_PAGE, offset=len(found), status=status, thread=thread, created_after=since)
        found += page
        if len(page) < _PAGE:
            return found


def _searched_text(record: RunRecord) -> str:
    """What ``--search`` looks in: the run's input and output as masked, as text (anything else as JSON)."""
    return "\n".join(
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        for value in (record.input, record.output)
        if value is not None
    ).casefold()


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
