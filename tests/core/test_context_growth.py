"""Loops that propagate the context through steps that pass their input along grow with what was said.

``conversation: true`` implies ``propagation: context``, so a step without an agent used to be handed the
context and to output it; its output (``steps.<name>.output``) then held the earlier outputs, which held the
context before, ... The "all agents as assistant sources" loop of the conversation docs (two such steps)
grew about 5x every two iterations. Now a step without an agent in a conversation passes the newest turn
along, as ``flujo.builtins.passthrough`` does, and a context recorded as a step's output never nests the
earlier ones. ``flujo validate`` says when a conversational loop has no agent that can speak.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from blueprints import load_pipeline, validate_file
from core import Engine, Settings
from core.model.codec import dump
from core.store import MemoryStore
from core.testing import ScriptedHuman
from tests.support.cli_helpers import flujo


def _loop(iterations: int, *, conversation: bool = True, agent: str | None = None) -> str:
    setting = "conversation: true\n    ai_turn_source: all_agents" if conversation else "propagation: context"
    uses = f"\n        agent: {agent}" if agent else ""
    return f"""\
version: "0.1"
steps:
- kind: loop
  name: multi
  loop:
    {setting}
    max_loops: {iterations}
    body:
      - kind: step
        name: a1{uses}
      - kind: step
        name: a2{uses}
"""


async def _stored_bytes(tmp_path: Path, text: str) -> tuple[Any, int]:
    """The run's output and how many bytes of JSON the store holds for it (steps, events, run record)."""
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    store = MemoryStore()
    outcome = await Engine(store=store, human=ScriptedHuman([])).run(load_pipeline(path, Settings()), "hi")
    steps = await store.steps(outcome.run_id)
    events = await store.events(outcome.run_id)
    record = await store.get_run(outcome.run_id)
    assert record is not None and record.status == "completed"
    size = sum(len(dump(s.input) or "") + len(dump(s.output) or "") for s in steps)
    size += sum(len(dump(dict(e.payload)) or "") for e in events) + len(dump(record.output) or "")
    return outcome.output, size


def test_the_docs_two_step_conversation_prints_a_small_output(state_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "multi.yaml"
    path.write_text(_loop(10), encoding="utf-8")
    code, out, _ = flujo(["run", str(path), "--input", "hi"])
    assert code == 0
    assert len(out.encode()) < 20_000  # was 655 KB
    assert out.strip() == "hi"  # the steps pass the conversation's newest turn along


@pytest.mark.parametrize(
    ("conversation", "agent"),
    [
        (True, None),
        (True, "{id: flujo.builtins.passthrough}"),
        (False, None),
        (False, "{id: flujo.builtins.passthrough}"),
    ],
)
async def test_output_and_storage_grow_linearly_with_iterations(
    tmp_path: Path, conversation: bool, agent: str | None
) -> None:
    outputs: list[int] = []
    stored: list[int] = []
    for iterations in (3, 6, 12, 24, 48, 96):  # each twice the one before; stop at the first sign of more
        output, size = await _stored_bytes(tmp_path, _loop(iterations, conversation=conversation, agent=agent))
        outputs.append(len(json.dumps(output)))
        stored.append(size)
        if len(stored) >= 3:
            # Linear: a doubling adds about twice what the doubling before it added (a square adds 4x).
            assert stored[-1] - stored[-2] <= 2.4 * (stored[-2] - stored[-3]), stored
    assert len(set(outputs[1:])) == 1 and max(outputs) < 2_000  # the output stops growing after a few


async def test_a_recorded_context_never_nests_earlier_outputs(tmp_path: Path) -> None:
    output, _ = await _stored_bytes(tmp_path, _loop(6, conversation=False))
    # The loop's output is the context the last step was handed: it holds a1's and a2's outputs, contexts
    # themselves, whose own step outputs (contexts again) hold no step outputs: one level, whatever the count.
    assert set(output["steps"]) == {"a1", "a2"}
    for record in output["steps"].values():
        assert record["output"]["initial_prompt"] == "hi"
        assert set(record["output"]["steps"]) == {"a1", "a2"}
        for inner in record["output"]["steps"].values():
            assert "steps" not in inner["output"] and inner["output"]["initial_prompt"] == "hi"


def test_validate_warns_when_no_agent_in_a_conversation_can_speak(tmp_path: Path) -> None:
    path = tmp_path / "multi.yaml"
    path.write_text(_loop(10), encoding="utf-8")
    found = [(f.code, f.position.line if f.position else 0) for f in validate_file(path)]
    assert ("silent-conversation", 6) in found
    spoken = tmp_path / "spoken.yaml"
    spoken.write_text(
        _loop(3).replace('version: "0.1"\n', 'version: "0.1"\nagents: {bot: {model: echo}}\n')
        + "      - {kind: step, name: a3, uses: agents.bot}\n",
        encoding="utf-8",
    )
    assert "silent-conversation" not in [f.code for f in validate_file(spoken)]
