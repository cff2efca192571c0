"""``MemoryStore``: a ``RunStore`` kept in memory, behaving like ``SqliteStore``, for tests and Python users.

Invariants, the same as the SQLite store's: values go through the same JSON round trip (what you read
back is what SQLite would give, and never aliases what you stored); an id prefix finds a run only when
it is unique; a step recorded again at the same path replaces the earlier one and moves to the end;
events are append-only; writing steps or events for an unknown run is a ``StoreError``; a thread is the
runs whose ``thread`` names it, ordered by creation (ties in the order the runs were created), and a run's
thread turns are replaced as a whole.

One deliberate difference: ``close()`` keeps the data, so a test can read a store after a run closed it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from types import TracebackType
from typing import Literal

from core.model import codec
from core.model.errors import StoreError
from core.model.records import (
    PAGE_SIZE,
    PruneResult,
    RowMark,
    RunRecord,
    RunStatus,
    RunUpdate,
    StepRecord,
    ThreadSummary,
    ThreadTurn,
    TraceEvent,
)
from core.store.rows import claims, pruning
from core.store.rows.lookup import MAX_CANDIDATES, NO_RUN_HINT, pick_run_id
from core.text.turns import ConversationTurn


class MemoryStore:
    """A ``RunStore`` in a few dicts. ``update_run`` follows ``SqliteStore.update_run``."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}  # insertion order breaks ties between equal created_at
        # run id → path → step, in the order written (a step written again at its path moves to the end)
        self._steps: dict[str, dict[str, StepRecord]] = {}
        self._step_seqs: dict[str, dict[str, int]] = {}  # run id → path → the step's number (step_page)
        self._seq = 0  # the last number a step was given, in this store (as SQLite's AUTOINCREMENT)
        self._events: dict[str, list[TraceEvent]] = {}
        self._claimed: set[str] = set()  # one process, one store: a claim only has to exclude this store's users
        self._thread_turns: dict[str, list[ThreadTurn]] = {}  # run id → the turns it added to its thread

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Release the claims; the data stays readable."""
        self._claimed.clear()

    async def create_run(self, run: RunRecord) -> None:
        if run.run_id in self._runs:
            raise StoreError(f"run {run.run_id} already exists", hint="every run needs a new id")
        self._runs[run.run_id] = _fresh_run(run)
        self._steps[run.run_id] = {}
        self._step_seqs[run.run_id] = {}
        self._events[run.run_id] = []

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        """Store ``step`` (replacing any earlier step at its path) and its events."""
        self._require(step.run_id, f"record step {step.path!r} of run {step.run_id}")
        stored = _fresh_step(step)
        # Copy the events before changing anything, so a payload that fails leaves no half-recorded step.
        new_events = [_fresh_event(e) for e in events]
        steps = self._steps[step.run_id]  # by path: replacing a step costs the same at any length of the run
        steps.pop(step.path, None)
        steps[step.path] = stored
        self._seq += 1
        self._step_seqs[step.run_id][step.path] = self._seq
        self._events[step.run_id].extend(new_events)

    async def record_events(self, run_id: str, events: Sequence[TraceEvent]) -> None:
        self._require(run_id, f"record events of run {run_id}")
        self._events[run_id].extend(_fresh_event(e) for e in events)

    async def update_run(self, run_id: str, update: RunUpdate) -> None:
        run = self._runs.get(run_id)
        if run is None:
            raise StoreError(f"no run {run_id} to update", hint="create the run first")
        self._runs[run_id] = dataclasses.replace(
            run,
            status=update.status,
            output=run.output if update.output is None else codec.normalize(update.output),
            error=run.error if update.error is None else update.error,
            usage=run.usage if update.usage is None else update.usage,
            finished_at=run.finished_at if update.finished_at is None else update.finished_at,
            pause_path=update.pause_path,
            pause_message=update.pause_message,
            options=run.options if update.options is None else codec.normalize(update.options),
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run ``run_id`` names or is a unique prefix of; StoreError when several runs match."""
        matches = sorted(rid for rid in self._runs if rid.startswith(run_id))[: MAX_CANDIDATES + 1]
        found = pick_run_id(run_id, matches)
        return None if found is None else _fresh_run(self._runs[found])

    async def list_runs(
        self,
        *,
        limit: int = 20,
        status: RunStatus | None = None,
        thread: str | None = None,
        parent_run_id: str | None = None,
        created_after: float | None = None,
        offset: int = 0,
        values: bool = True,
    ) -> list[RunRecord]:
        """Up to ``limit`` runs, newest first, past the ``offset`` newest; only those with ``status`` / in
        ``thread`` / of ``parent_run_id`` / created at ``created_after`` or later when given; without their
        input and output unless ``values``."""
        runs = [
            r
            for r in self._newest_first()
            if (status is None or r.status == status)
            and (thread is None or r.thread == thread)
            and (parent_run_id is None or r.parent_run_id == parent_run_id)
            and (created_after is None or r.created_at >= created_after)
        ]
        start = max(offset, 0)
        listed = runs[start : start + max(limit, 0)]
        if not values:
            return [dataclasses.replace(r, input=None, output=None, options=codec.normalize(r.options)) for r in listed]
        return [_fresh_run(r) for r in listed]

    async def latest_run(self, *, source: str) -> RunRecord | None:
        """The newest top-level run of the blueprint file ``source``; None when there is none."""
        found = (r for r in self._newest_first() if r.source == source and r.parent_run_id is None)
        run = next(found, None)
        return None if run is None else _fresh_run(run)

    async def step_counts(self, run_ids: Sequence[str]) -> dict[str, int]:
        return {run_id: len(self._steps.get(run_id, {})) for run_id in run_ids}

    async def prune_runs(
        self, *, created_before: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> PruneResult:
        """Delete the runs ``core.store.rows.pruning`` chooses, with their child runs; a claimed run is kept."""
        stored = [pruning.StoredRun(r.run_id, r.parent_run_id, r.created_at) for r in self._newest_first()]
        doomed = pruning.choose(stored, created_before=created_before, keep=keep)
        gone = [d for d in doomed if d.run_id not in self._claimed]
        if not dry_run:
            for run_id in (rid for d in gone for rid in (d.run_id, *d.descendants)):
                del self._runs[run_id]
                for table in (self._steps, self._step_seqs, self._events, self._thread_turns):
                    table.pop(run_id, None)
        return PruneResult(
            deleted=tuple(d.run_id for d in gone),
            children=tuple(rid for d in gone for rid in d.descendants),
            live=tuple(d.run_id for d in doomed if d.run_id in self._claimed),
        )

    async def steps(self, run_id: str) -> list[StepRecord]:
        return [_fresh_step(s) for s in self._steps.get(run_id, {}).values()]

    async def events(self, run_id: str, *, kind: str | None = None) -> list[TraceEvent]:
        return [_fresh_event(e) for e in self._events.get(run_id, []) if kind is None or e.kind == kind]

    async def step_page(
        self, run_id: str, *, after: int = 0, until: int | None = None, under: str | None = None, limit: int = PAGE_SIZE
    ) -> list[tuple[int, StepRecord]]:
        """Up to ``limit`` steps of run ``run_id`` numbered after ``after`` (see ``RunStore.step_page``)."""
        seqs = self._step_seqs.get(run_id, {})
        found = [
            (seq, _fresh_step(step))
            for step in self._steps.get(run_id, {}).values()
            if _in_page(seq := seqs[step.path], step.path, after, until, under)
        ]
        return found[: max(limit, 0)]

    async def event_page(
        self, run_id: str, *, after: int = 0, until: int | None = None, under: str | None = None, limit: int = PAGE_SIZE
    ) -> list[tuple[int, TraceEvent]]:
        """Up to ``limit`` events of run ``run_id`` numbered after ``after``: an event's number is its place."""
        events = self._events.get(run_id, [])
        last = len(events) if until is None else min(until, len(events))
        found = [
            (seq, _fresh_event(events[seq - 1]))
            for seq in range(max(after, 0) + 1, last + 1)
            if _in_page(seq, events[seq - 1].path, after, until, under)
        ]
        return found[: max(limit, 0)]

    async def marks(
        self,
        run_id: str,
        of: Literal["steps", "events"],
        *,
        after: int = 0,
        until: int | None = None,
        limit: int = PAGE_SIZE,
    ) -> list[RowMark]:
        """Where ``limit`` steps (or events) of run ``run_id`` numbered after ``after`` are."""
        if of == "steps":
            page = await self.step_page(run_id, after=after, until=until, limit=limit)
            return [RowMark(seq, step.path, step.started_at, step.kind) for seq, step in page]
        found = await self.event_page(run_id, after=after, until=until, limit=limit)
        return [RowMark(seq, event.path, event.ts, event.kind) for seq, event in found]

    async def claim_run(self, run_id: str) -> bool:
        self._require(run_id, f"claim run {run_id}")
        if run_id in self._claimed:
            return False
        self._claimed.add(run_id)
        self._runs[run_id] = dataclasses.replace(self._runs[run_id], owner=claims.process_label())
        return True

    async def release_run(self, run_id: str) -> None:
        self._claimed.discard(run_id)

    async def claimed_runs(self, run_ids: Sequence[str]) -> set[str]:
        return {run_id for run_id in run_ids if run_id in self._claimed}

    async def record_thread_turns(self, run_id: str, turns: Sequence[ConversationTurn]) -> None:
        """Replace the turns run ``run_id`` added to its thread; nothing for a run in no thread."""
        self._require(run_id, f"record the thread turns of run {run_id}")
        if self._runs[run_id].thread is None:
            return
        self._thread_turns[run_id] = [
            ThreadTurn(run_id, index, turn.role, turn.content, turn.tokens, turn.shown)
            for index, turn in enumerate(turns)
        ]

    async def thread_turns(self, thread: str, *, before_run: str | None = None) -> list[ThreadTurn]:
        """The turns of ``thread`` in order (with ``before_run``: of its runs created before that run)."""
        runs = self._thread_runs(thread)
        if before_run is not None:
            order = self._order()
            limit = self._runs.get(before_run)
            if limit is None:
                return []
            runs = [r for r in runs if (r.created_at, order[r.run_id]) < (limit.created_at, order[before_run])]
        return [turn for r in runs for turn in self._thread_turns.get(r.run_id, [])]

    async def get_thread(self, thread: str) -> ThreadSummary | None:
        runs = self._thread_runs(thread)
        if not runs:
            return None
        turns = [turn for r in runs for turn in self._thread_turns.get(r.run_id, [])]
        return ThreadSummary(
            name=thread,
            runs=len(runs),
            turns=len(turns),
            tokens=sum(turn.tokens or 0 for turn in turns),
            first_run_at=min(r.created_at for r in runs),
            last_run_at=max(r.created_at for r in runs),
        )

    async def list_threads(self) -> list[ThreadSummary]:
        """Every thread, the one with the latest run first."""
        names = {r.thread for r in self._runs.values() if r.thread is not None}
        found = [summary for name in names if (summary := await self.get_thread(name)) is not None]
        found.sort(key=lambda summary: summary.name)
        found.sort(key=lambda summary: summary.last_run_at, reverse=True)
        return found

    async def start_thread(self, run: RunRecord, turns: Sequence[ConversationTurn]) -> bool:
        """Create ``run`` with ``turns`` as its thread turns unless a run names its thread already."""
        if any(r.thread == run.thread for r in self._runs.values()):
            return False
        await self.create_run(run)
        await self.record_thread_turns(run.run_id, turns)
        return True

    async def delete_thread(self, thread: str) -> ThreadSummary | None:
        """Delete the turns of ``thread`` and take its runs out of it; what was removed, or None."""
        removed = await self.get_thread(thread)
        for r in self._thread_runs(thread):
            self._thread_turns.pop(r.run_id, None)
            self._runs[r.run_id] = dataclasses.replace(r, thread=None)
        return removed

    def _thread_runs(self, thread: str) -> list[RunRecord]:
        """The runs of ``thread``, oldest first (ties: in the order they were created)."""
        return sorted((r for r in self._runs.values() if r.thread == thread), key=lambda r: r.created_at)

    def _newest_first(self) -> list[RunRecord]:
        order = self._order()
        return sorted(self._runs.values(), key=lambda r: (r.created_at, order[r.run_id]), reverse=True)

    def _order(self) -> dict[str, int]:
        return {rid: i for i, rid in enumerate(self._runs)}

    def _require(self, run_id: str, action: str) -> None:
        if run_id not in self._runs:
            raise StoreError(f"cannot {action}: no such run", hint=NO_RUN_HINT)


# Values are copied through JSON on the way in and on the way out, as the SQLite store does: what a
# caller reads is what SQLite would return, and mutating it never changes the store.


def _in_page(seq: int, path: str, after: int, until: int | None, under: str | None) -> bool:
    return (
        seq > after
        and (until is None or seq <= until)
        and (under is None or path == under or path.startswith(under + "/"))
    )


def _fresh_run(run: RunRecord) -> RunRecord:
    return dataclasses.replace(
        run, input=codec.normalize(run.input), output=codec.normalize(run.output), options=codec.normalize(run.options)
    )


def _fresh_step(step: StepRecord) -> StepRecord:
    return dataclasses.replace(step, input=codec.normalize(step.input), output=codec.normalize(step.output))


def _fresh_event(event: TraceEvent) -> TraceEvent:
    return dataclasses.replace(event, payload=codec.load_payload(codec.dump_payload(event.payload)))
