"""Loop edge cases found while documenting the declarative blocks (issue 3)."""

from __future__ import annotations

from pathlib import Path

from core.engine import Engine
from core.redaction import Redactor
from core.store.memory import MemoryStore
from tests.test_conversation_runs import compile_text

NESTED = """\
version: "0.1"
agents: {a: {model: scripted, replies: [{action: finish}]}}
steps:
  - kind: loop
    name: outer
    loop:
      max_loops: 3
      exit_expression: "context.scratchpad.last_agent_command.action == 'finish'"
      body:
        - {kind: step, name: think, uses: agents.a}
        - kind: loop
          name: inner
          loop: {max_loops: 1, body: [{kind: step, name: p, agent: {id: flujo.builtins.stringify}, input: "x"}]}
"""

NEXT_INPUT_AFTER_LAST = """\
version: "0.1"
steps:
  - kind: loop
    name: l
    loop:
      max_loops: 2
      init: [{set: {target: context.scratchpad.todo, value: ["second"]}}]
      propagation: {next_input: "{{ context.scratchpad.todo[iteration - 1] }}"}
      body: [{kind: step, name: s, agent: {id: flujo.builtins.stringify}}]
"""


async def test_a_nested_loop_does_not_hide_the_outer_agents_finish(tmp_path: Path) -> None:
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(compile_text(tmp_path, NESTED), "go")
    assert outcome.status == "completed", outcome.error
    assert outcome.usage.requests == 1  # the outer loop ended after its first iteration


async def test_next_input_is_not_computed_after_the_last_iteration(tmp_path: Path) -> None:
    pipeline = compile_text(tmp_path, NEXT_INPUT_AFTER_LAST)
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(pipeline, "first")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "second"
