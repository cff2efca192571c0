"""Conversations inside conversations: a ``conversation: true`` loop (or an ensemble, or a sub-workflow)
in the body of another never opens with the context the outer loop propagates (docs/conversation.md,
"Nested loops, pause and resume, limits" and "The current message").

The inner loop's first user turn is the message its first body step would be sent where it stands: at the
outer loop's first iteration the outer seed, then the outer conversation's newest turn (the outer agent's
last reply, or the answer just given). The nested runs go through the real CLI (``flujo run``, then
``flujo lens trace --json``) with scripted agents.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from blueprints import load_pipeline
from core import Engine, RunOutcome, Settings
from core.policies.workflow import child_run_id
from core.store import MemoryStore
from core.testing import ScriptedHuman
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

CONTEXT_KEYS = ("scratchpad", "conversation_history", "steps", "initial_prompt")
LEVELS = ("outer", "middle", "inner")  # depth 2 is outer → inner; depth 3 puts middle between them
PROPAGATIONS = ("context", "previous_output", "auto")


def nested_blueprint(depth: int, propagation: str) -> str:
    """Loops nested ``depth`` deep, every one ``conversation: true`` with ``propagation``; the innermost
    body is one agent step (``talk``), every other body is the next loop and then its own agent
    (``<loop>_say``)."""
    names = (*LEVELS[: depth - 1], LEVELS[-1])
    agents = {"talk": [f"t{n}" for n in range(1, 2**depth + 1)]}
    for level, name in enumerate(names[:-1]):
        agents[f"{name}_say"] = [f"{name[0]}{n}" for n in range(1, 2 ** (level + 1) + 1)]

    def loop(level: int) -> dict[str, Any]:
        name = names[level]
        body: list[dict[str, Any]] = [{"kind": "step", "name": "talk", "uses": "agents.talk"}]
        if level + 1 < len(names):
            body = [loop(level + 1), {"kind": "step", "name": f"{name}_say", "uses": f"agents.{name}_say"}]
        settings = {"conversation": True, "max_loops": 2, "propagation": propagation, "body": body}
        return {"kind": "loop", "name": name, "loop": {**settings, "output": {"text": "conversation_history"}}}

    blueprint = {
        "version": "0.1",
        "name": "nested",
        "agents": {name: {"model": "scripted", "replies": replies} for name, replies in agents.items()},
        "steps": [loop(0)],
    }
    return json.dumps(blueprint, indent=2)  # JSON is YAML


def spans(nodes: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in nodes:
        if node.get("type") == "step":
            yield node
        yield from spans(node.get("children", []))


def prompt_of(span: dict[str, Any]) -> list[tuple[str, str]]:
    (payload,) = [e["payload"] for e in span["events"] if e["kind"] == "agent.prompt"]
    return [(m["role"], m["content"]) for m in payload["messages"]]


def seed_of(transcript: str) -> str:
    """A loop's first user turn, from its ``output: {text: conversation_history}``."""
    first = transcript.splitlines()[0]
    assert first.startswith("User: "), transcript
    return first.removeprefix("User: ")


def traced(tmp_path: Path, text: str, data: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """Run the blueprint through ``flujo run``; its output and its spans by path, from ``lens trace --json``."""
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = flujo(["run", str(path), "--input", data, "--json"])
    assert code == exit_codes.OK, err
    result = json.loads(out)
    code, out, err = flujo(["lens", "trace", result["run_id"], "--json"])
    assert code == exit_codes.OK, err
    return result["output"], {span["path"]: span for span in spans(json.loads(out)["spans"])}


@pytest.mark.parametrize("propagation", PROPAGATIONS)
@pytest.mark.parametrize("depth", [2, 3])
def test_nested_conversations_open_with_the_enclosing_turn_never_the_context(
    state_db: Path, tmp_path: Path, depth: int, propagation: str
) -> None:
    output, by_path = traced(tmp_path, nested_blueprint(depth, propagation), "hello")
    names = (*LEVELS[: depth - 1], LEVELS[-1])

    # No prompt holds the context (its history, its scratchpad, the step outputs) as text.
    prompts = {path: prompt_of(span) for path, span in by_path.items() if span["kind"] == "step"}
    assert len(prompts) == 2**depth + sum(2 ** (level + 1) for level in range(depth - 1))
    for path, messages in prompts.items():
        for _, content in messages:
            assert not any(key in content for key in CONTEXT_KEYS), (path, content)

    # The outermost conversation keeps its own turns only: its seed and its own agent's replies.
    assert output == "User: hello\nAssistant: o1\nAssistant: o2"

    def check(parent: str, level: int) -> None:
        """The loop ``names[level]`` in the iterations of the loop at ``parent`` (that loop's span path)."""
        outer, inner = names[level - 1], names[level]
        outer_seed = seed_of(by_path[parent]["output"])
        for iteration in (1, 2):
            here = f"{parent}/{iteration}"
            loop = by_path[f"{here}/{inner}"]
            # Iteration 1: the outer seed; iteration 2: the outer agent's reply at iteration 1 (its newest turn).
            expected = outer_seed if iteration == 1 else by_path[f"{parent}/1/{outer}_say"]["output"]
            assert seed_of(loop["output"]) == expected
            # The outer agent after the inner loop gets the loop's output as its input, the message after
            # its own conversation (never as one of its turns).
            say = by_path[f"{here}/{outer}_say"]
            assert say["input"] == loop["output"]
            assert prompt_of(say)[-1] == ("user", loop["output"])
            own = [content for _, content in prompt_of(say)[:-1]]
            assert own == [outer_seed, by_path[f"{parent}/1/{outer}_say"]["output"]][:iteration]
            if level + 1 < len(names):
                check(f"{here}/{inner}", level + 1)
            else:  # the innermost agent is sent the seed, then its own last reply as the message
                first, second = (by_path[f"{here}/{inner}/{n}/talk"] for n in (1, 2))
                assert prompt_of(first) == [("user", expected)]
                assert prompt_of(second) == [("user", expected), ("user", first["output"])]

    check(names[0], 1)
    # Concretely: the first nested loop opens with the run's input, then with the outer agent's first reply.
    assert seed_of(by_path[f"outer/1/{names[1]}"]["output"]) == "hello"
    assert seed_of(by_path[f"outer/2/{names[1]}"]["output"]) == "o1"


# --- what else the inner loop can open with -------------------------------------------------------------


async def run_text(tmp_path: Path, text: str, data: Any, answers: Sequence[str] = ()) -> tuple[RunOutcome, MemoryStore]:
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    store = MemoryStore()
    outcome = await Engine(store=store, human=ScriptedHuman(answers)).run(load_pipeline(path, Settings()), data)
    assert outcome.status == "completed", outcome.error
    return outcome, store


async def outputs(store: MemoryStore, run_id: str) -> dict[str, Any]:
    return {step.path: step.output for step in await store.steps(run_id)}


async def prompts(store: MemoryStore, run_id: str) -> dict[str, list[tuple[str, str]]]:
    return {
        e.path: [(m["role"], m["content"]) for m in e.payload["messages"]]
        for e in await store.events(run_id)
        if e.kind == "agent.prompt"
    }


def no_context_in(calls: dict[str, list[tuple[str, str]]]) -> None:
    for path, messages in calls.items():
        for _, content in messages:
            assert not any(key in content for key in CONTEXT_KEYS), (path, content)


ANSWERED = """\
version: "0.1"
agents:
  talk: {model: scripted, replies: [t1, t2]}
  say: {model: scripted, replies: [o1, o2]}
steps:
  - kind: loop
    name: outer
    loop:
      conversation: true
      max_loops: 2
      body:
        - kind: loop
          name: inner
          loop:
            conversation: true
            max_loops: 1
            body: [{kind: step, name: talk, uses: agents.talk}]
            output: {text: conversation_history}
        - {kind: step, name: say, uses: agents.say}
        - {kind: hitl, name: answer, message: "{{ steps.say.output }}"}
      output: {text: conversation_history}
"""


async def test_after_an_answer_the_inner_loop_opens_with_the_answer(tmp_path: Path) -> None:
    outcome, store = await run_text(tmp_path, ANSWERED, "hello", ["a1", "a2"])
    steps = await outputs(store, outcome.run_id)
    assert steps["outer/1/inner"] == "User: hello\nAssistant: t1"
    assert steps["outer/2/inner"] == "User: a1\nAssistant: t2"  # the newest outer turn: the answer to o1
    assert outcome.output == "User: hello\nAssistant: o1\nUser: a1\nAssistant: o2\nUser: a2"
    calls = await prompts(store, outcome.run_id)
    no_context_in(calls)
    assert calls["outer/2/inner/1/talk"] == [("user", "a1")]


START_WITH = """\
version: "0.1"
agents:
  brief: {model: scripted, replies: [the brief]}
  talk: {model: scripted, replies: [t1, t2]}
  say: {model: scripted, replies: [o1, o2]}
steps:
  - {kind: step, name: make_brief, uses: agents.brief}
  - kind: loop
    name: outer
    loop:
      conversation: true
      max_loops: 2
      body:
        - kind: loop
          name: inner
          loop:
            conversation: true
            max_loops: 1
            init: {history: {start_with: {from_step: make_brief, prefix: "Brief: "}}}
            body: [{kind: step, name: talk, uses: agents.talk}]
            output: {text: conversation_history}
        - {kind: step, name: say, uses: agents.say}
      output: {text: conversation_history}
"""


async def test_start_with_wins_over_the_enclosing_turn(tmp_path: Path) -> None:
    outcome, store = await run_text(tmp_path, START_WITH, "hello")
    steps = await outputs(store, outcome.run_id)
    assert steps["outer/1/inner"] == "User: Brief: the brief\nAssistant: t1"
    assert steps["outer/2/inner"] == "User: Brief: the brief\nAssistant: t2"
    no_context_in(await prompts(store, outcome.run_id))


ENSEMBLE = """\
version: "0.1"
agents:
  writer: {model: scripted, replies: [w1, w2]}
  say: {model: scripted, replies: [o1, o2]}
steps:
  - kind: loop
    name: outer
    loop:
      conversation: true
      max_loops: 2
      body:
        - kind: ensemble
          name: review
          ensemble:
            participants:
              - {name: writer, uses: agents.writer, max_turns: 1, triggers_conversation: true}
            max_total_turns: 1
        - {kind: step, name: say, uses: agents.say}
      output: {text: conversation_history}
"""


async def test_an_ensemble_in_a_conversation_opens_with_the_newest_turn(tmp_path: Path) -> None:
    outcome, store = await run_text(tmp_path, ENSEMBLE, "hello")
    calls = await prompts(store, outcome.run_id)
    no_context_in(calls)
    assert calls["outer/1/review/1/writer"] == [("user", "hello")]
    assert calls["outer/2/review/1/writer"] == [("user", "o1")]


CHILD = """\
version: "0.1"
agents:
  helper: {model: scripted, replies: [c1, c2]}
steps:
  - {kind: step, name: help, uses: agents.helper}
"""
PARENT = """\
version: "0.1"
imports:
  child: child.yaml
agents:
  say: {model: scripted, replies: [o1, o2]}
steps:
  - kind: loop
    name: outer
    loop:
      conversation: true
      max_loops: 2
      body:
        - {kind: step, name: sub, uses: imports.child}
        - {kind: step, name: say, uses: agents.say}
      output: {text: conversation_history}
"""


async def test_a_sub_workflow_in_a_conversation_is_given_the_newest_turn(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text(CHILD, encoding="utf-8")
    outcome, store = await run_text(tmp_path, PARENT, "hello")
    children = [await store.get_run(child_run_id(outcome.run_id, f"outer/{n}/sub")) for n in (1, 2)]
    assert [child.input for child in children if child is not None] == ["hello", "o1"]
    for child in children:
        assert child is not None
        sent = await prompts(store, child.run_id)
        no_context_in(sent)
        assert sent["help"] == [("user", child.input)]


async def test_a_resumed_run_opens_the_inner_loop_with_the_same_turn(tmp_path: Path) -> None:
    straight, store = await run_text(tmp_path, ANSWERED, "hello", ["a1", "a2"])
    pipeline = load_pipeline(tmp_path / "flow.yaml", Settings())
    first = await Engine(store=store, human=ScriptedHuman(["a1"])).run(pipeline, "hello")
    assert first.status == "paused" and first.pause is not None and first.pause.path == "outer/2/answer"
    resumed = await Engine(store=store, human=ScriptedHuman(["a2"])).resume(pipeline, first.run_id)
    assert resumed.status == "completed", resumed.error
    assert resumed.output == straight.output
    assert await prompts(store, first.run_id) == await prompts(store, straight.run_id)
    assert (await outputs(store, first.run_id))["outer/2/inner"] == "User: a1\nAssistant: t2"
