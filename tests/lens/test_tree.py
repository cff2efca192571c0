"""How lens builds a run's span tree from what the store holds, including what a real run leaves half-done:
steps with no recorded result, a summary that failed, events outside any step, child runs missing or linked
in a loop. (The finished shapes are in the golden tests, tests/lens/test_plain.py.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from core import Redactor, ReplyReceived, RunRecord, RunUpdate, StepRecord, TraceEvent
from core.store import MemoryStore, open_store
from flujo_cli import exit_codes
from lens import CallNode, EventNode, GroupNode, Node, RunNode, StepNode, build_tree, load_run, walk
from lens.labels import history_badge
from tests.support.cli_helpers import EXAMPLES, flujo, flujo_process


def shape(node: Node, depth: int = 0) -> list[str]:
    """One line per container node: ``kind path`` (runs: ``run id``), indented."""
    if isinstance(node, RunNode):
        line = f"run {node.run_id}"
    elif isinstance(node, StepNode):
        line = f"step {node.path} [{node.status}]"
    elif isinstance(node, GroupNode):
        line = f"{node.word} {node.key}"
    elif isinstance(node, CallNode):
        line = f"call {node.index}"
    elif isinstance(node, EventNode):
        line = f"event {node.event.kind}"
    else:
        return []
    return ["  " * depth + line] + [ln for child in node.children for ln in shape(child, depth + 1)]


def event(kind: str, path: str, ts: float, **payload: Any) -> TraceEvent:
    return TraceEvent(kind, path, payload, ts)


async def tree_of(store: MemoryStore, run_id: str) -> RunNode:
    return build_tree(await load_run(store, run_id, redactor=Redactor()))


def test_a_map_run_is_grouped_by_item(state_db: Path) -> None:
    code, out, err = flujo(["run", str(EXAMPLES / "map.yaml"), "--input", '["apples", "pears"]', "--json"])
    assert code == 0, err

    async def read() -> RunNode:
        async with await open_store(str(state_db), mode="read") as store:
            return build_tree(await load_run(store, json.loads(out)["run_id"], redactor=Redactor()))

    root = asyncio.run(read())
    assert shape(root)[1:] == [
        "  step describe_each [completed]",
        "    item 0",
        "      step describe_each/0/describe [completed]",
        "        call 0",
        "    item 1",
        "      step describe_each/1/describe [completed]",
        "        call 0",
    ]


async def test_steps_without_a_result_take_their_runs_state() -> None:
    store = MemoryStore()
    await store.create_run(RunRecord("r", "demo", "running", created_at=1.0))
    await store.record_step(StepRecord("r", "chat/1/ask", "ask", "step", "completed", started_at=2.0), [])
    await store.record_step(StepRecord("r", "chat/2/ask", "ask", "step", "completed", started_at=3.0), [])
    root = await tree_of(store, "r")
    assert shape(root)[1:] == [
        "  step chat [running]",  # the loop records itself when it ends: until then it is running
        "    iteration or branch 1",
        "      step chat/1/ask [completed]",
        "    iteration or branch 2",
        "      step chat/2/ask [completed]",
    ]
    await store.update_run("r", RunUpdate(status="interrupted"))
    assert "step chat [interrupted]" in shape(await tree_of(store, "r"))[1]
    await store.update_run("r", RunUpdate(status="failed"))
    assert "step chat [not recorded]" in shape(await tree_of(store, "r"))[1]


async def test_a_loop_not_recorded_yet_has_iterations_when_its_blueprint_says_it_is_a_loop() -> None:
    store = MemoryStore()
    await store.create_run(RunRecord("r", "demo", "paused", created_at=1.0, pause_path="chat/2/ask"))
    await store.record_step(StepRecord("r", "chat/1/ask", "ask", "hitl", "completed", started_at=2.0), [])
    snapshot = await load_run(store, "r", redactor=Redactor(), kinds={"chat": "loop", "chat/ask": "hitl"})
    assert shape(build_tree(snapshot))[1:] == [
        "  step chat [paused]",
        "    iteration 1",
        "      step chat/1/ask [completed]",
        "    iteration 2",
        "      step chat/2/ask [paused]",
    ]


def test_lens_labels_a_paused_loops_iterations_from_the_runs_blueprint(state_db: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "clarify.yaml"
    blueprint.write_text((EXAMPLES / "clarify.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = flujo(["run", str(blueprint), "--answer", "ship v1", "--answer", "devs", "--no-input", "--json"])
    assert code == exit_codes.PAUSED, err  # in the loop's second iteration, at its question
    run_id = json.loads(out)["run_id"]
    for command in ("show", "trace"):
        code, out, err = flujo(["lens", command, run_id])
        assert code == 0, err
        assert "iteration 1" in out and "iteration 2" in out and "iteration or branch" not in out, out
    code, out, err = flujo(["lens", "trace", run_id, "--json"])  # the whole run, written as it is read
    assert code == 0, err
    assert '"iteration"' in out and "iteration or branch" not in out, out
    blueprint.write_text(blueprint.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    code, out, err = flujo(["lens", "show", run_id])  # not the blueprint the run started with: not read
    assert code == 0 and "iteration or branch 2" in out, err


def test_lens_reads_a_runs_blueprint_only_for_a_container_not_recorded_yet(state_db: Path, tmp_path: Path) -> None:
    """Reading the blueprint imports the modules its callables are in: a paused run whose every container is
    recorded (here, none) is shown from its records alone, and its module is not imported by lens."""
    (tmp_path / "marks_import.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('imported').touch()\ndef answer(text):\n    return 'ok'\n",
        encoding="utf-8",
    )
    blueprint = tmp_path / "ask.yaml"
    blueprint.write_text(
        'version: "0.1"\nagents:\n  a: {python: "marks_import:answer"}\nsteps:\n'
        "  - {name: first, uses: agents.a}\n  - {kind: hitl, name: ask, message: Tell me more}\n",
        encoding="utf-8",
    )
    code, out, err = flujo(["run", str(blueprint), "--input", "x", "--no-input", "--json"])
    assert code == exit_codes.PAUSED, err
    marker = tmp_path / "imported"
    assert marker.exists()  # the run imported it
    marker.unlink()
    run_id = json.loads(out)["run_id"]
    for command in ("show", "trace"):  # a process of its own: this one has imported the module already
        shown = flujo_process(["lens", command, run_id], cwd=tmp_path)
        assert shown.returncode == 0 and "first" in shown.stdout, shown.stderr
    assert not marker.exists()


async def test_a_summary_with_no_agent_step_recorded_stays_below_that_step() -> None:
    # A usage limit stopped the call after its summary was made: no record for chat/1/ask, nor for chat.
    store = MemoryStore()
    await store.create_run(RunRecord("r", "demo", "limit_reached", created_at=1.0))
    await store.record_step(StepRecord("r", "chat/1/ask/summarize", "chat.summarize", "summarize", "completed"), [])
    assert shape(await tree_of(store, "r"))[1:] == [
        "  step chat [not recorded]",
        "    iteration or branch 1",
        "      step chat/1/ask [not recorded]",
        "        step chat/1/ask/summarize [completed]",
    ]


async def test_a_failed_summary_is_said_on_the_call_it_served() -> None:
    store = MemoryStore()
    await store.create_run(RunRecord("r", "demo", "completed", created_at=1.0))
    history = {"conversation": "chat", "turns": 3, "dropped": 2, "mode": "messages"}
    await store.record_step(
        StepRecord("r", "chat/4/ask", "ask", "step", "completed", started_at=2.0),
        [
            event("agent.prompt", "chat/4/ask/summarize", 2.1, agent="s", messages=[], purpose="summarize"),
            event("history.summarize_failed", "chat/4/ask/summarize", 2.2, error="boom", consecutive_failures=3,
                  fallback="summarizer disabled for the rest of the run; history is truncated instead"),
            event("agent.prompt", "chat/4/ask", 2.3, agent="m", messages=[{"role": "user", "content": "hi"}],
                  history_injected=True, history=history),
            event("agent.reply", "chat/4/ask", 2.4, output="one"),
            event("agent.reply", "chat/4/ask", 2.5, output="two"),  # a second reply to one prompt
        ],
    )  # fmt: skip
    await store.record_events("r", [event("run.note", "", 3.0, text="at the run's level")])
    root = await tree_of(store, "r")
    assert shape(root)[1:] == [
        "  step chat [not recorded]",
        "    iteration or branch 4",
        "      step chat/4/ask [completed]",
        "        step chat/4/ask/summarize [not recorded]",
        "          call 0",
        "          event history.summarize_failed",
        "        call 0",
        "        event agent.reply",
        "  event run.note",
    ]
    call = next(n for n in walk(root) if isinstance(n, CallNode) and n.path == "chat/4/ask")
    assert call.reply == ReplyReceived(output="one")
    assert history_badge(call) == (
        "conversation injected: 3 turns of chat (as messages) · 2 older turns dropped to fit the bound"
        " · summary failed: summarizer disabled for the rest of the run; history is truncated instead"
    )
    assert [e.kind for e in root.events] == ["run.note"]


async def test_child_runs_missing_or_linked_in_a_loop_do_not_stop_lens() -> None:
    store = MemoryStore()
    await store.create_run(RunRecord("p", "parent", "completed", created_at=1.0, parent_run_id="c"))
    await store.create_run(RunRecord("c", "child", "completed", created_at=2.0, parent_run_id="p"))
    await store.record_step(
        StepRecord("p", "sub", "sub", "workflow", "completed", started_at=1.5),
        [event("workflow.child", "sub", 1.6, child_run_id="c", pipeline="child")],
    )
    await store.record_step(
        StepRecord("p", "gone", "gone", "workflow", "completed", started_at=3.0),
        [event("workflow.child", "gone", 3.1, child_run_id="deleted0000000000", pipeline="x")],
    )
    root = await tree_of(store, "p")
    assert shape(root) == [
        "run p",
        "  step sub [completed]",
        "    run c",  # and not "p" again below it, although the store says p's parent is c
        "  step gone [completed]",
        "    event workflow.child",  # its child run is not in the store: the event says which it was
    ]


async def test_a_composite_step_sums_the_usage_of_what_ran_in_it() -> None:
    from datetime import UTC
    from io import StringIO

    from rich.console import Console

    from core import ZERO_USAGE, Redactor
    from core.store import MemoryStore
    from lens.detail import detail
    from tests.support.lens_runs import DEMO, record_demo

    store = MemoryStore()
    await record_demo(store)
    root = build_tree(await load_run(store, DEMO, redactor=Redactor()))
    [loop] = [
        node
        for node in walk(root)
        if isinstance(node, StepNode) and node.record is not None and node.record.kind == "loop"
    ]
    assert loop.record is not None and loop.record.usage == ZERO_USAGE  # the loop's own record holds none
    leaves = [node for node in walk(loop) if isinstance(node, StepNode) and node is not loop]
    total = sum((node.record.usage for node in leaves if node.record is not None), ZERO_USAGE)
    assert total.requests == 4 and loop.usage == total
    console = Console(file=StringIO(), width=100, color_system=None)
    console.print(detail(loop, tz=UTC))
    assert "usage    4 requests · 464 tokens" in console.file.getvalue()  # type: ignore[attr-defined]


async def test_a_snapshot_and_its_nodes_have_a_short_repr() -> None:
    """asyncio.run computes the repr of its task's result: a large run's must not be the repr of every step
    and event."""
    store = MemoryStore()
    await store.create_run(RunRecord("short000", "p", "completed", created_at=1.0))
    for i in range(200):
        await store.record_step(
            StepRecord("short000", f"s{i}", f"s{i}", "step", "completed", output="x" * 50, started_at=1.0 + i),
            [TraceEvent("agent.reply", f"s{i}", {"output": "y" * 50}, 1.5 + i)],
        )
    snapshot = await load_run(store, "short000", redactor=Redactor())
    assert repr(snapshot) == "RunSnapshot('short000', steps=200, events=200)"
    assert repr(build_tree(snapshot)) == "RunNode('short000', children=200)"
