"""``load_tree``: a run from the store to its span tree in one go, with Python's cyclic garbage collector
paused meanwhile.

Reading a run of 10,000 events makes a few hundred thousand objects (records, payloads, nodes), none of
them garbage; with the collector running, it scans them again and again as they pile up, which took about
a third of the time (measured in benchmarks/test_lens.py). Nothing made here forms a reference cycle to
collect, and the collector is back as it was (enabled or not) when ``load_tree`` returns or fails.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from core import Redactor, RunRecord, RunStore
from lens.snapshot import load_run
from lens.tree import RunNode, build_tree


async def load_tree(
    store: RunStore,
    run_id: str,
    *,
    redactor: Redactor,
    record: RunRecord | None = None,
    kinds: Mapping[str, str] | None = None,
) -> RunNode:
    """The span tree of the run ``run_id`` names (a unique prefix is enough), masked with ``redactor``;
    the errors of ``load_run`` when no run or several match. ``record``: the run's record when the caller
    already read it (``load_run``). ``kinds``: its steps' kinds by step path, from its blueprint (``RunSnapshot``)."""
    with _collector_paused():
        return build_tree(await load_run(store, run_id, redactor=redactor, record=record, kinds=kinds))


@contextmanager
def _collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
