"""Which runs ``prune_runs`` deletes: the same choice in every store.

Invariants:

* Only top-level runs are chosen: a run with no parent, or whose parent is no longer in the store. A
  sub-workflow's child run belongs to its parent's trace, so it goes with its parent (and its own children
  with it), never on its own, and a kept run never loses a child.
* ``keep`` counts top-level runs, newest first (``created_at``, then insertion order: the order
  ``list_runs`` uses); ``created_before`` compares ``created_at``. Both given, a run must be beyond the
  newest ``keep`` *and* older; neither given, nothing is chosen.
* A run whose stored start time is not a time (a damaged row) has no age: ``created_before`` keeps it.
* Whether a chosen run is being executed (claimed by a live process) is the store's to check: claims are
  how a store knows it (``core.store.rows.claims``), not part of this choice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core.model import codec
from core.model.errors import StoreError


@dataclass(frozen=True)
class StoredRun:
    """What the choice needs of a run. A sequence of them is given newest first."""

    run_id: str
    parent_run_id: str | None
    created_at: float | None  # None: the stored time is damaged (``created_at``)


@dataclass(frozen=True)
class Doomed:
    """A top-level run chosen for deletion and its descendants (child runs, their children, ...)."""

    run_id: str
    descendants: tuple[str, ...]


def choose(runs: Sequence[StoredRun], *, created_before: float | None, keep: int | None) -> list[Doomed]:
    """The top-level runs of ``runs`` (newest first) to delete, newest first, each with its descendants."""
    if created_before is None and keep is None:
        return []
    known = {run.run_id for run in runs}
    children: dict[str, list[str]] = {}
    for run in runs:
        if run.parent_run_id is not None and run.parent_run_id in known:
            children.setdefault(run.parent_run_id, []).append(run.run_id)
    top = [run for run in runs if run.parent_run_id is None or run.parent_run_id not in known]
    chosen = top[max(keep, 0) :] if keep is not None else top
    if created_before is not None:
        chosen = [run for run in chosen if run.created_at is not None and run.created_at < created_before]
    return [Doomed(run.run_id, tuple(_descendants(run.run_id, children))) for run in chosen]


def created_at(value: Any) -> float | None:
    """A run's stored start time, or None when the store holds something else there (a damaged row, a row
    written by another program): such a run has no age, so ``created_before`` never chooses it, and
    ``keep`` counts it where the store sorts it. Pruning is how a damaged store is cleaned up: it must
    not fail on the rows it is asked to remove."""
    try:
        return codec.timestamp(value, what="start time")
    except StoreError:
        return None


def _descendants(run_id: str, children: dict[str, list[str]]) -> Iterable[str]:
    seen = {run_id}
    queue = list(children.get(run_id, ()))
    while queue:  # breadth first; ``seen`` stops a (damaged) store whose parent links loop
        current = queue.pop(0)
        if current in seen:
            continue
        seen.add(current)
        yield current
        queue.extend(children.get(current, ()))
