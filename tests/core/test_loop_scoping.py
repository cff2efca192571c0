"""Loop edge cases found while documenting the declarative blocks (issue 3)."""

from __future__ import annotations

from pathlib import Path

from core import Engine, Redactor
from core.store import MemoryStore
from tests.core.test_conversation_runs import compile_text

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


INIT_FAILS = """\
version: "0.1"
steps:
  - kind: loop
    name: l
    loop:
      max_loops: 2
      init: [{merge: {target: context.scratchpad.meta, value: "not a mapping"}}]
      body: [{kind: step, name: s, agent: {id: flujo.builtins.stringify}}]
"""


async def test_an_init_failure_fails_the_loop_with_exit_reason_init(tmp_path: Path) -> None:
    store = MemoryStore()
    outcome = await Engine(store=store, redactor=Redactor()).run(compile_text(tmp_path, INIT_FAILS), "x")
    assert outcome.status == "failed" and outcome.error is not None
    assert "init merge" in outcome.error.message and "not a mapping" in outcome.error.message
    [exit_event] = [e for e in await store.events(outcome.run_id) if e.kind == "loop.exit"]
    assert exit_event.payload["reason"] == "init"
    [record] = await store.steps(outcome.run_id)
    assert record.status == "failed" and record.path == "l"


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __str__(self) -> str:
        raise RuntimeError("no str")


def test_a_trace_event_that_cannot_be_prepared_does_not_fail(tmp_path: Path) -> None:
    from core import NullReporter, PromptSent, UnknownEvent
    from core.policies.frame import Frame
    from core.testing import ScriptedHuman

    class Exploding(Redactor):
        def value(self, value: object) -> object:
            raise RuntimeError("boom")

    frame = Frame(run_id="r", store=MemoryStore(), human=ScriptedHuman(), reporter=NullReporter(), redactor=Exploding())
    event = frame.event("s", PromptSent("m", ({"role": "user", "content": Unprintable()},)))
    assert "could not be recorded" in event.payload["trace_error"] and "boom" in event.payload["trace_error"]
    assert event.data == UnknownEvent("agent.prompt", event.payload)  # read back, it says what happened
