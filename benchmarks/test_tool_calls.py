"""What flujo itself spends per tool call (issue 32): the engine, the journal and the trace of an agent step's
tool loop, with a model and a tool that take no time.

Each round is one run of one agent step whose scripted model asks for ``CALLS`` calls of a trivial tool,
then answers: one call per turn (``CALLS + 1`` turns, each journaled at ``P/model/K``, and ``CALLS`` calls at
``P/tool/N``), or all the calls in one turn (two turns). The floor, measured in the same sitting: ``CALLS``
plain agent steps of the same scripted model, one after the other. Against SQLite (a file in WAL mode, as
``flujo run`` uses it) and in memory (the engine without the store's work). Run with ``make bench``
(``-k tool_calls``); figures in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import sizes
from core import AgentStep, Engine, Pipeline, RunStore
from core.agents import ScriptedAgent
from core.steps.kinds import ToolUse
from core.store import MemoryStore, open_store
from tests.support.tool_loops import FunctionTool

CALLS = sizes.size(50, 3)
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _tool_loop(*, per_turn: bool) -> Pipeline:
    tool = FunctionTool("noop", lambda arguments: arguments["n"], schema=SCHEMA)
    asked = [{"name": "noop", "arguments": {"n": n}} for n in range(CALLS)]
    replies: list[Any] = [{"tool_calls": [call]} for call in asked] if per_turn else [{"tool_calls": asked}]
    use = ToolUse(tools=(tool,), max_tool_calls=CALLS, agent="bench")
    return Pipeline(steps=(AgentStep(name="work", agent=ScriptedAgent([*replies, "done"]), tools=use),), name="bench")


def _plain_steps() -> Pipeline:
    steps = tuple(AgentStep(name=f"step{n}", agent=ScriptedAgent(["done"])) for n in range(CALLS))
    return Pipeline(steps=steps, name="bench")


SHAPES: dict[str, Callable[[], Pipeline]] = {
    "one_call_per_turn": lambda: _tool_loop(per_turn=True),
    "all_calls_in_one_turn": lambda: _tool_loop(per_turn=False),
    "plain_agent_steps": _plain_steps,  # the floor: as many steps as calls, each one model call
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_tool_calls(benchmark: BenchmarkFixture, tmp_path: Path, backend: str, shape: str) -> None:
    runs = itertools.count()
    loop = asyncio.new_event_loop()
    store: RunStore = MemoryStore()
    if backend == "sqlite":
        store = loop.run_until_complete(open_store(str(tmp_path / "flujo.db")))

    async def run(pipeline: Pipeline) -> tuple[str, Any]:
        outcome = await Engine(store=store).run(pipeline, "go", run_id=f"bench-{next(runs)}")
        return outcome.status, outcome.output

    try:
        result = benchmark.pedantic(
            lambda pipeline: loop.run_until_complete(run(pipeline)),
            setup=lambda: ((SHAPES[shape](),), {}),  # a fresh scripted model each round: its replies start again
            rounds=sizes.size(15, 1),
            warmup_rounds=sizes.size(2, 0),
        )
        steps = len(loop.run_until_complete(store.steps(f"bench-{next(runs) - 1}")))
    finally:
        loop.run_until_complete(store.close())
        loop.close()
    assert result == ("completed", "done")
    expected = {"one_call_per_turn": 2 * CALLS + 2, "all_calls_in_one_turn": CALLS + 3, "plain_agent_steps": CALLS}
    assert steps == expected[shape]  # the records each run commits
    benchmark.extra_info["calls"] = CALLS
    benchmark.extra_info["records"] = steps
