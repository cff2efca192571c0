"""A run's recorded calls in the order its steps ran, sub-workflows included.

``core.load_recording`` lists a run's own calls in the order it made them, then each sub-workflow child
run's calls (their paths under the step that started it). ``in_step_order`` moves each child run's calls
to where that step ran: before the first call of the parent whose step started after the child run did
(its ``ChildRunStarted`` event), so that a changed prompt inside a sub-workflow comes before what its
output changed in the steps after it. A run without child runs costs one small query (its
``ChildRunStarted`` events); one with some, its step records too (when each step started).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core import ChildRunStarted

if TYPE_CHECKING:
    from core import RecordedCall, RunStore


async def in_step_order(store: RunStore, run_id: str, calls: Sequence[RecordedCall]) -> list[RecordedCall]:
    """``calls`` (of run ``run_id`` and its child runs, as ``core.load_recording`` lists them) with each
    child run's calls where its step ran."""
    return await _ordered(store, run_id, "", list(calls))


async def _ordered(store: RunStore, run_id: str, prefix: str, calls: list[RecordedCall]) -> list[RecordedCall]:
    started: dict[str, float] = {}  # a child run's step path (in this run) -> when its first child run started
    child_of: dict[str, str] = {}  # the path -> the child run read there (the last one, as load_recording reads)
    for event in await store.events(run_id, kind=ChildRunStarted.kind):
        if isinstance(event.data, ChildRunStarted):
            started.setdefault(event.path, event.ts)
            child_of[event.path] = event.data.child_run_id
    if not child_of:
        return calls
    own: list[RecordedCall] = []
    blocks: dict[str, list[RecordedCall]] = {path: [] for path in child_of}
    for call in calls:
        inside = [path for path in child_of if call.path.startswith(f"{prefix}{path}/")]
        (blocks[max(inside, key=len)] if inside else own).append(call)
    for path, block in blocks.items():
        blocks[path] = await _ordered(store, child_of[path], f"{prefix}{path}/", block)
    began = {step.path: step.started_at for step in await store.steps(run_id)}
    waiting = sorted(child_of, key=lambda path: started[path])
    ordered: list[RecordedCall] = []
    when = float("-inf")
    for call in own:
        when = _step_start(began, call.path[len(prefix) :], when)
        while waiting and started[waiting[0]] < when:
            ordered.extend(blocks[waiting.pop(0)])
        ordered.append(call)
    for path in waiting:
        ordered.extend(blocks[path])
    return ordered


def _step_start(began: dict[str, float], path: str, previous: float) -> float:
    """When the step of the call at ``path`` started: its own record's, or that of the closest step above it
    with one (a tool loop's turn, a step's summary); else the call before it's (its place is kept)."""
    parts = path.split("/")
    for end in range(len(parts), 0, -1):
        found = began.get("/".join(parts[:end]))
        if found is not None:
            return max(found, previous)
    return previous
