"""A run as the store holds it, read once and masked: its record, steps, events and sub-workflow child runs.

Invariants: everything in a snapshot went through ``lens.masking`` (so no view can show an unmasked
text); steps and events keep the store's order; a child run is loaded once even if several events name
it, and never more than ``MAX_DEPTH`` levels deep (a damaged store whose parent links loop cannot make
lens loop).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from core import ChildRunStarted, Redactor, RunError, RunRecord, RunStore, StepRecord, TraceEvent
from lens.masking import Masker

MAX_DEPTH = 16
_ALL_CHILDREN = 100_000  # a map over thousands of items may start one child run per item


@dataclass(frozen=True)
class RunSnapshot:
    """One run: ``children`` maps each child run's id to its snapshot; ``child_paths`` maps it to the path
    of the step that started it (from its ``ChildRunStarted`` event, or the run's pause point), when known."""

    record: RunRecord
    steps: tuple[StepRecord, ...]
    events: tuple[TraceEvent, ...]
    children: Mapping[str, RunSnapshot] = field(default_factory=dict)
    child_paths: Mapping[str, str] = field(default_factory=dict)
    # The kind of each step by step path (``chat/clarify``), from the run's blueprint when the caller read it:
    # what says a step is a loop before it records itself (when it ends). Empty: the records alone say.
    kinds: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Not the dataclass's repr of every step and event (megabytes, for a large run): asyncio.run computes
        # the repr of its task's result when it ends (0.3 s for 10,000 events, to be thrown away).
        return f"RunSnapshot({self.record.run_id!r}, steps={len(self.steps)}, events={len(self.events)})"


async def load_run(
    store: RunStore,
    run_id: str,
    *,
    redactor: Redactor,
    record: RunRecord | None = None,
    kinds: Mapping[str, str] | None = None,
) -> RunSnapshot:
    """The run ``run_id`` names (a unique prefix is enough) with its child runs; ``RunError`` when no run
    matches, ``StoreError`` when the prefix matches several (the error names them). ``record``: the run's
    record as the caller already read it (``store.get_run(run_id)``), so that what it showed of it and the
    snapshot agree (a running run changes between two reads); the store is not asked again. ``kinds``: the
    kinds of its steps by step path, from its blueprint (``RunSnapshot.kinds``)."""
    if record is None:
        record = await store.get_run(run_id)
    if record is None:
        raise RunError(f"no run matches {run_id!r}", hint="list the runs with: flujo lens list")
    snapshot = await load_record(store, record, Masker(redactor), seen={record.run_id}, depth=0)
    return dataclasses.replace(snapshot, kinds=kinds) if kinds is not None else snapshot


async def load_record(store: RunStore, record: RunRecord, masker: Masker, *, seen: set[str], depth: int) -> RunSnapshot:
    """The run of ``record`` (as stored) at ``depth`` below the run lens reads, masked with ``masker``, with
    its child runs that are not in ``seen`` (which it adds them to)."""
    steps = tuple(masker.step(s) for s in await store.steps(record.run_id))
    events = tuple(masker.event(e) for e in await store.events(record.run_id))
    masked = masker.run(record)
    if depth >= MAX_DEPTH:
        return RunSnapshot(masked, steps, events)
    paths = {e.data.child_run_id: e.path for e in events if isinstance(e.data, ChildRunStarted)}
    found = {child.run_id: child for child in await store.list_runs(parent_run_id=record.run_id, limit=_ALL_CHILDREN)}
    for child_id in paths:
        if child_id not in found and (child := await store.get_run(child_id)) is not None:
            found[child_id] = child
    children: dict[str, RunSnapshot] = {}
    for child in sorted(found.values(), key=lambda r: r.created_at):
        if child.run_id in seen:
            continue
        seen.add(child.run_id)
        children[child.run_id] = await load_record(store, child, masker, seen=seen, depth=depth + 1)
        if child.run_id not in paths:
            where = paused_inside(masked, children[child.run_id].record)
            if where is not None:
                paths[child.run_id] = where
    return RunSnapshot(masked, steps, events, children, {k: v for k, v in paths.items() if k in children})


def paused_inside(parent: RunRecord, child: RunRecord) -> str | None:
    """The path of the step that started ``child`` when the parent is paused inside it: the parent's pause
    point is that path followed by the child's (``review/approve`` = ``review`` + ``approve``)."""
    if parent.pause_path is None or child.pause_path is None:
        return None
    suffix = "/" + child.pause_path
    return parent.pause_path[: -len(suffix)] if parent.pause_path.endswith(suffix) else None
