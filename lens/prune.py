"""What ``flujo lens prune`` says: the words and the JSON document of a prune (its ``--older-than`` is read by
``lens.ages``).

Lens only reads: the deleting, the choice of runs and the claims that protect a run being executed are the
store's (``RunStore.prune_runs``), which the CLI calls; this module turns its command line and its result
into words.
"""

from __future__ import annotations

from typing import Any

import lens.figures as figures
from core import PruneResult


def summary(result: PruneResult, *, dry_run: bool) -> list[str]:
    """What was deleted (or would be), what was kept because it is being executed, and the space."""
    runs = figures.count(len(result.deleted), "run")
    children = f" and {figures.count(len(result.children), 'child run')}" if result.children else ""
    if dry_run:
        lines = [f"would delete {runs}{children}" + (": " + ", ".join(result.deleted) if result.deleted else "")]
    else:
        lines = [f"deleted {runs}{children} with their steps, events and thread turns"]
    if result.live:
        lines.append(f"kept {figures.count(len(result.live), 'run')} being executed now: {', '.join(result.live)}")
    if not dry_run and result.deleted and result.size_before is not None and result.size_after is not None:
        space = f"run store {_size(result.size_before)} → {_size(result.size_after)}"
        if not result.vacuumed:
            space += " (another process is using it: the free space is reused by new runs)"
        lines.append(space)
    return lines


def document(result: PruneResult, *, dry_run: bool) -> dict[str, Any]:
    """``{"dry_run", "deleted", "children", "live", "size_before", "size_after", "vacuumed"}``."""
    return {
        "dry_run": dry_run,
        "deleted": list(result.deleted),
        "children": list(result.children),
        "live": list(result.live),
        "size_before": result.size_before,
        "size_after": result.size_after,
        "vacuumed": result.vacuumed,
    }


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / (1024 * 1024):.1f} MB"
