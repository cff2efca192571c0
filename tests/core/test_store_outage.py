"""A run store that becomes unavailable mid-run (``StoreUnavailable``: here a SQLite file another process keeps
locked past ``busy_timeout_s``) stops the run with nothing recorded, never as a failed step or a failed run,
wherever the step was (a loop, a parallel that ignores failed branches, a conditional, a map, a
sub-workflow); the store refuses writes until it reconnects, and the run then resumes from its journal."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core import (
    AgentStep,
    ConditionalStep,
    Engine,
    Expression,
    LoopStep,
    MapStep,
    ParallelStep,
    Pipeline,
    Step,
    StoreUnavailable,
    WorkflowStep,
)
from core.store import SqliteStore
from core.testing import FuncAgent


class Locker:
    """Another process's write lock on the store's file, taken by the step ``grab`` the first time it runs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.holder: sqlite3.Connection | None = None
        self.calls: dict[str, int] = {}

    def agent(self, name: str, *, grab: bool = False) -> FuncAgent:
        def call(value: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            if grab and self.holder is None and self.calls[name] == 1:
                self.holder = sqlite3.connect(self.path, isolation_level=None)
                self.holder.execute("BEGIN IMMEDIATE")
            return f"{name}({value})"

        return FuncAgent(call)

    def let_go(self) -> None:
        if self.holder is not None:
            self.holder.execute("ROLLBACK")
            self.holder.close()


Shape = Callable[[Step], Step]

SHAPES: dict[str, Shape] = {
    "top level": lambda step: step,
    "loop": lambda step: LoopStep(name="loop", body=(step,), max_loops=1),
    "parallel ignoring failed branches": lambda step: ParallelStep(
        name="fan", branches=(("a", (step,)), ("b", (AgentStep(name="idle"),))), on_branch_failure="ignore"
    ),
    "conditional": lambda step: ConditionalStep(
        name="route", condition=lambda scope: True, branches=(("true", (step,)),)
    ),
    "map": lambda step: MapStep(name="each", over=Expression("[1]"), body=(step,)),
    "sub-workflow": lambda step: WorkflowStep(name="sub", pipeline=Pipeline(steps=(step,), name="inner")),
}


@pytest.fixture
def locker(tmp_path: Path) -> Iterator[Locker]:
    held = Locker(tmp_path / "flujo.db")
    yield held
    with contextlib.suppress(sqlite3.Error):
        held.let_go()


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_a_store_locked_past_its_wait_stops_the_run_unrecorded_and_it_resumes(shape: str, locker: Locker) -> None:
    def pipeline() -> Pipeline:
        grabbing = AgentStep(name="grab", agent=locker.agent("grab", grab=True))
        return Pipeline(steps=(SHAPES[shape](grabbing), AgentStep(name="after", agent=locker.agent("after"))))

    async with SqliteStore(locker.path, busy_timeout_s=0.2) as store:
        with pytest.raises(StoreUnavailable, match="is locked"):
            await Engine(store=store).run(pipeline(), "hi", run_id="r1")
        locker.let_go()
        record = await store.get_run("r1")
        assert record is not None and (record.status, record.error) == ("running", None)  # as a crash leaves it
        assert [s for s in await store.steps("r1") if s.status == "failed"] == []
        assert [run for run in await store.list_runs() if run.status == "failed"] == []  # no child failed either
        with pytest.raises(StoreUnavailable, match="unavailable since an earlier write"):
            await Engine(store=store).resume(pipeline(), "r1")  # refused until the store reconnects
        await store.reconnect()
        outcome = await Engine(store=store).resume(pipeline(), "r1")
    assert outcome.status == "completed", outcome.error
    # The step whose result could not be committed ran again (at least once, as after a crash); the rest once.
    assert locker.calls == {"grab": 2, "after": 1}
