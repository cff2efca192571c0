"""Copying every run from one store into another (``flujo store copy``): SQLite to PostgreSQL and back, or
between any two ``RunStore``s, through the store interface only.

Invariants:

* The source is only read. The target must hold no run yet: a copy never merges two stores' runs.
* Runs are created oldest first (creation time, then the source's order), so every order the stores keep
  (``list_runs``, a thread's turns, a run's steps and events) is the same in the copy; each run keeps its
  id, status, owner, options, parent and thread. A step is recorded, then the run's events in their order;
  texts are shared again by the target as it stores them.
* The copy is checked by counts: runs, steps, events and thread turns, read back from the target, must be
  those of the source, or the copy is a ``StoreError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.model.errors import StoreError
from core.model.records import RunRecord
from core.ports import RunStore
from core.text.turns import ConversationTurn

ALL = 1_000_000_000  # list_runs' limit that means every run


@dataclass(frozen=True)
class Counts:
    """What a store holds, counted the same way in both stores of a copy."""

    runs: int = 0
    steps: int = 0
    events: int = 0
    turns: int = 0


async def copy_runs(
    source: RunStore, target: RunStore, *, progress: Callable[[int, int], None] | None = None
) -> tuple[Counts, Counts]:
    """Copy every run of ``source`` into the empty ``target``; the counts of both, equal. ``progress`` is
    called with (runs copied, runs in all) after each run."""
    if await target.list_runs(limit=1):
        raise StoreError("the store to copy into already holds runs", hint="copy into a new file or an empty database")
    # Oldest first; each run's input and output are read as it is copied, so that one run's values are held
    # at a time, not every run's (a run's may be 40 MB).
    runs = list(reversed(await source.list_runs(limit=ALL, values=False)))
    turns_by_run = await _turns_by_run(source, runs)
    steps = events = turns = 0
    for done, listed in enumerate(runs, start=1):
        run = await source.get_run(listed.run_id)
        if run is None:
            raise StoreError(f"run {listed.run_id} was deleted from the source during the copy", hint="copy again")
        await target.create_run(run)
        for step in await source.steps(run.run_id):
            await target.record_step(step, [])
            steps += 1
        run_events = await source.events(run.run_id)
        if run_events:
            await target.record_events(run.run_id, run_events)
        events += len(run_events)
        said = turns_by_run.get(run.run_id, [])
        if said:
            await target.record_thread_turns(run.run_id, said)
        turns += len(said)
        if progress is not None:
            progress(done, len(runs))
    copied = Counts(runs=len(runs), steps=steps, events=events, turns=turns)
    found = await count(target)
    if found != copied:
        raise StoreError(
            f"the copy does not hold what the source does: {_show(found)} copied, {_show(copied)} in the source",
            hint="the store copied into may have been written meanwhile; empty it and copy again",
        )
    return copied, found


async def count(store: RunStore) -> Counts:
    """Runs, steps, events and thread turns in ``store`` (reads every run's steps and events, one run at a
    time)."""
    runs = await store.list_runs(limit=ALL, values=False)
    steps = sum((await store.step_counts([run.run_id for run in runs])).values())
    events = sum([len(await store.events(run.run_id)) for run in runs])
    turns = sum(len(said) for said in (await _turns_by_run(store, runs)).values())
    return Counts(runs=len(runs), steps=steps, events=events, turns=turns)


async def _turns_by_run(store: RunStore, runs: list[RunRecord]) -> dict[str, list[ConversationTurn]]:
    """The thread turns each run added, by run id."""
    found: dict[str, list[ConversationTurn]] = {}
    for thread in sorted({run.thread for run in runs if run.thread is not None}):
        for turn in await store.thread_turns(thread):
            found.setdefault(turn.run_id, []).append(ConversationTurn(turn.role, turn.content, turn.tokens, turn.shown))
    return found


def _show(counts: Counts) -> str:
    return f"{counts.runs} runs, {counts.steps} steps, {counts.events} events, {counts.turns} thread turns"
