"""The last agent command (``RunContext.agent_command``) is the scratchpad's ``last_agent_command``: users read
it there and may write it, and it lives as the scratchpad does (docs/loops.md#stop_when-agent_finished)."""

from __future__ import annotations

from pathlib import Path

from core import Engine, RunContext
from core.store import MemoryStore
from tests.core.test_conversation_runs import compile_text


def test_the_agent_command_is_the_scratchpads_last_agent_command() -> None:
    ctx = RunContext(scratchpad={"goal": "g"})
    assert ctx.agent_command is None and list(ctx.lazy_view()["scratchpad"]) == ["goal"]
    ctx.agent_command = {"action": "ask"}
    assert ctx.scratchpad == {"goal": "g", "last_agent_command": {"action": "ask"}}
    assert ctx.lazy_view()["scratchpad"]["last_agent_command"] == {"action": "ask"}
    ctx.scratchpad["last_agent_command"] = "a user's own value"
    assert ctx.agent_command == "a user's own value"
    ctx.agent_command = None
    assert ctx.scratchpad == {"goal": "g"}


USER_WRITES_THE_COMMAND = """\
version: "0.1"
steps:
  - kind: loop
    name: l
    loop:
      max_loops: 3
      stop_when: agent_finished
      init: [{set: {target: context.scratchpad.last_agent_command, value: {action: finish}}}]
      body:
        - {kind: step, name: seen, agent: {id: flujo.builtins.stringify}, input: "{{ context.scratchpad | list }}"}
        - {kind: step, name: skipped, agent: {id: flujo.builtins.stringify}, input: "x"}
  - {kind: step, name: after, agent: {id: flujo.builtins.stringify}, input: "{{ context.scratchpad | list }}"}
"""


async def test_a_command_a_user_writes_ends_the_loop_and_stays_inside_it(tmp_path: Path) -> None:
    store = MemoryStore()
    outcome = await Engine(store=store).run(compile_text(tmp_path, USER_WRITES_THE_COMMAND), "go")
    assert outcome.status == "completed", outcome.error
    outputs = {step.path: step.output for step in await store.steps(outcome.run_id)}
    assert outputs["l/1/seen"] == '["last_agent_command"]'  # visible in the scratchpad inside the loop
    assert "l/1/skipped" not in outputs and "l/2/seen" not in outputs  # the iteration and the loop ended
    assert outputs["after"] == "[]"  # the loop's command did not leak out of it
