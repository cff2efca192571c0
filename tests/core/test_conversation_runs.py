"""``conversation: true`` loops run end to end: turns, what each agent call is sent (the ``agent.prompt``
trace event), turn sources, nesting, bounds, summaries, settings, pause and resume, validation.

Pipelines are compiled from blueprint text with scripted agents and a scripted human; the friendly-keys
example also runs through the CLI. The ``python:`` agents below are named by the blueprints as
``tests.core.test_conversation_runs:<function>``; what they receive is kept in ``SEEN`` (cleared per test).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from blueprints import load_pipeline, validate_file
from blueprints.compiling.loop_hooks import NextInput
from core import (
    ChatMessage,
    Engine,
    HistoryPolicy,
    LoopStep,
    Pipeline,
    RunOutcome,
    Settings,
    StepRecord,
    TraceEvent,
    load_settings,
)
from core.model.provenance import read_why, step_key
from core.store import MemoryStore, open_store
from core.testing import ScriptedHuman
from core.text.tokens import count_messages
from flujo_cli import exit_codes
from tests.support.cli_helpers import EXAMPLES, flujo

EXAMPLE = EXAMPLES / "conversation.yaml"
SUMMARY = "Summary of the earlier conversation: "
HERE = "tests.core.test_conversation_runs"

SEEN: dict[str, list[Any]] = {}


def _seen(name: str, data: Any) -> None:
    SEEN.setdefault(name, []).append(data)


def tidy(data: Any) -> str:
    """A script step: records its input."""
    _seen("tidy", data)
    return "tidied"


def summarize_lines(data: Any) -> str:
    """A deterministic summarizer: names the turns it was given (so a resumed run gets the same text)."""
    _seen("summarize", data)
    block = str(data).split("<conversation_history>\n", 1)[1].split("\n</conversation_history>", 1)[0]
    turns = block.splitlines()
    return f"{len(turns)} turns up to {turns[-1]!r}"


def broken_summarizer(data: Any) -> str:
    _seen("broken", data)
    raise ValueError("the summarizer is down")


@pytest.fixture(autouse=True)
def _clear_seen() -> None:
    SEEN.clear()


def compile_text(tmp_path: Path, text: str, settings: Settings | None = None) -> Pipeline:
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    return load_pipeline(path, settings or Settings())


async def run(
    pipeline: Pipeline, data: Any = None, answers: Sequence[str] = (), *, store: MemoryStore | None = None
) -> tuple[RunOutcome, MemoryStore, ScriptedHuman]:
    store = store or MemoryStore()
    human = ScriptedHuman(answers)
    outcome = await Engine(store=store, human=human).run(pipeline, data)
    return outcome, store, human


async def resume(
    pipeline: Pipeline, store: MemoryStore, run_id: str, answers: Sequence[str] = ()
) -> tuple[RunOutcome, ScriptedHuman]:
    human = ScriptedHuman(answers)
    outcome = await Engine(store=store, human=human).resume(pipeline, run_id)
    return outcome, human


def prompt_events(events: Sequence[TraceEvent]) -> dict[str, dict[str, Any]]:
    """The ``agent.prompt`` payload of each step path (the last one when a path has several)."""
    return {e.path: dict(e.payload) for e in events if e.kind == "agent.prompt"}


async def prompts(store: MemoryStore, run_id: str) -> dict[str, dict[str, Any]]:
    """The ``agent.prompt`` payload of each step path, its ``why`` read whole (``provenance.read_why``, as lens reads
    it): a resumed run's first call of a step says its notes of what was left out where an uninterrupted run's
    leaves them to the step's previous call; what the two mean is the same. A call in a conversation with
    nothing new to say stores no ``why``: read as an empty one."""
    found = prompt_events(await store.events(run_id))
    noted: dict[tuple[str, str], Any] = {}
    for path, payload in found.items():  # in the events' order
        history = payload.get("history") or {}
        why = payload.get("why", {} if history.get("conversation") else None)
        if isinstance(why, Mapping):
            key = (str(history.get("conversation") or why.get("conversation")), step_key(path))
            if "left_out" in why:
                noted[key] = why["left_out"]
            payload["why"] = read_why(why, history, noted.get(key, ()))
    return found


def sent(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """The messages of an ``agent.prompt`` payload as (role, content) pairs."""
    return [(m["role"], m["content"]) for m in payload["messages"]]


async def step_records(store: MemoryStore, run_id: str) -> dict[str, StepRecord]:
    return {s.path: s for s in await store.steps(run_id)}


def lines(*pairs: tuple[str, str]) -> str:
    """``output: {text: conversation_history}``: one ``Role: content`` line per turn."""
    return "\n".join(f"{role}: {content}" for role, content in pairs)


# --- the friendly-keys example -------------------------------------------------------------------------

# The example's clarifier, read from the file (its wording may change; its shape is what is tested):
# a system prompt and three replies, ask, ask, finish. Turns hold non-text replies as compact JSON.
CLARIFIER = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["agents"]["clarifier"]
CLARIFIER_SYSTEM: str = CLARIFIER["system_prompt"]
Q1, Q2, DONE = (json.dumps(reply, ensure_ascii=False) for reply in CLARIFIER["replies"])
FIRST_QUESTION: str = CLARIFIER["replies"][0]["question"]
# A person reads a structured reply as its question (or summary); the agents are sent Q1, Q2 as said.
SAID1, SAID2, SAID_DONE = (reply.get("question") or reply["summary"] for reply in CLARIFIER["replies"])
EXAMPLE_OUTPUT = lines(
    ("User", "Plan a trip"),
    ("Assistant", SAID1),
    ("User", "My family"),
    ("Assistant", SAID2),
    ("User", "June"),
    ("Assistant", SAID_DONE),
)


async def test_example_sends_history_then_the_latest_user_turn_and_outputs_the_conversation() -> None:
    outcome, store, human = await run(load_pipeline(EXAMPLE, Settings()), None, ["Plan a trip", "My family", "June"])
    assert outcome.status == "completed", outcome.error
    assert outcome.output == EXAMPLE_OUTPUT
    # The finishing reply ends the iteration: the answer step of iteration 3 is never asked.
    assert [q.path for q in human.asked] == ["get_goal", "clarification_loop/1/answer", "clarification_loop/2/answer"]

    calls = await prompts(store, outcome.run_id)
    assert sorted(calls) == [f"clarification_loop/{n}/clarify" for n in (1, 2, 3)]
    first, third = calls["clarification_loop/1/clarify"], calls["clarification_loop/3/clarify"]
    assert sent(first) == [("system", CLARIFIER_SYSTEM), ("user", "Plan a trip")]
    assert first["history_injected"] is False
    assert sent(third) == [
        ("system", CLARIFIER_SYSTEM),
        ("user", "Plan a trip"),
        ("assistant", Q1),
        ("user", "My family"),
        ("assistant", Q2),
        ("user", "June"),  # the latest user turn is the message itself, not part of the history
    ]
    assert third["history_injected"] is True
    assert third["history"] == {"conversation": "clarification_loop", "turns": 4, "dropped": 0, "mode": "messages"}
    second = calls["clarification_loop/2/clarify"]
    assert sent(second)[1:] == [("user", "Plan a trip"), ("assistant", Q1), ("user", "My family")]
    assert second["history"]["turns"] == 2
    # Each call's step record holds what the agent was sent as its message: the latest user turn.
    records = await step_records(store, outcome.run_id)
    assert [records[f"clarification_loop/{n}/clarify"].input for n in (1, 2, 3)] == [
        "Plan a trip",
        "My family",
        "June",
    ]


def stored_run(db: Path, run_id: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The ``agent.prompt`` payloads and the step paths of a run in the state database."""

    async def read() -> tuple[dict[str, dict[str, Any]], list[str]]:
        store = await open_store(str(db))
        try:
            return prompt_events(await store.events(run_id)), [s.path for s in await store.steps(run_id)]
        finally:
            await store.close()

    return asyncio.run(read())


def test_cli_pause_in_iteration_one_then_resume_ends_like_an_uninterrupted_run(state_db: Path) -> None:
    code, out, err = flujo(["run", str(EXAMPLE), "-a", "Plan a trip", "-a", "My family", "-a", "June"])
    assert code == exit_codes.OK, err
    assert out.strip() == EXAMPLE_OUTPUT  # "User: ..." / "Assistant: ..." lines
    code, out, err = flujo(["run", str(EXAMPLE), "--json", "-a", "Plan a trip", "-a", "My family", "-a", "June"])
    assert code == exit_codes.OK, err
    straight = json.loads(out)

    code, out, err = flujo(["run", str(EXAMPLE), "--no-input", "--json", "-a", "Plan a trip"])
    assert code == exit_codes.PAUSED, err
    paused = json.loads(out)
    assert paused["pause"]["step"] == "answer" and paused["pause"]["message"] == FIRST_QUESTION
    code, out, err = flujo(["resume", paused["run_id"], "--json", "-a", "My family", "-a", "June"])
    assert code == exit_codes.OK, err
    resumed = json.loads(out)
    assert resumed["status"] == "completed"
    assert resumed["output"] == straight["output"] == EXAMPLE_OUTPUT

    straight_prompts, _ = stored_run(state_db, straight["run_id"])
    resumed_prompts, resumed_paths = stored_run(state_db, paused["run_id"])
    assert {p: v["messages"] for p, v in resumed_prompts.items()} == {
        p: v["messages"] for p, v in straight_prompts.items()
    }
    assert {p: v.get("history") for p, v in resumed_prompts.items()} == {
        p: v.get("history") for p, v in straight_prompts.items()
    }
    assert len(resumed_paths) == len(set(resumed_paths))  # the first clarify call was not made again


# --- conversation: true implies propagation: context and stop_when: agent_finished ---------------------

FINISHING = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [{action: ask, question: "q1"}, {action: finish}]}
steps:
  - kind: loop
    name: chat
    loop:
      %s
      max_loops: 5
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output.question }}"}
        - {kind: step, name: after, agent: "%s:tidy"}
"""


async def test_conversation_true_implies_context_propagation_and_stopping_when_the_agent_finishes(
    tmp_path: Path,
) -> None:
    pipeline = compile_text(tmp_path, FINISHING % ("conversation: true", HERE))
    [loop] = pipeline.steps
    assert isinstance(loop, LoopStep)
    assert isinstance(loop.next_input, NextInput) and loop.next_input.mode == "context"
    assert loop.exit_description == "stop_when: agent_finished (implied by conversation: true)"
    assert loop.finish_early

    outcome, store, human = await run(pipeline, "goal", ["a1", "a2"])
    assert outcome.status == "completed", outcome.error
    assert [q.path for q in human.asked] == ["chat/1/answer"]
    paths = list(await step_records(store, outcome.run_id))
    assert paths == ["chat/1/talk", "chat/1/answer", "chat/1/after", "chat/2/talk", "chat"]
    exits = [e.payload for e in await store.events(outcome.run_id) if e.kind == "loop.exit"]
    assert exits[0]["reason"] == "condition" and exits[0]["iterations"] == 2
    # Iteration 2 starts from the propagated context: the agent is sent the newest turn, not the context.
    # The script 'after' is the body's last step, so its reply is that turn (a script agent speaks).
    assert (await step_records(store, outcome.run_id))["chat/2/talk"].input == "tidied"


async def test_stop_when_agent_finished_skips_the_body_steps_after_the_finishing_step(tmp_path: Path) -> None:
    pipeline = compile_text(tmp_path, FINISHING % ("stop_when: agent_finished", HERE))
    outcome, store, human = await run(pipeline, "goal", ["a1", "a2"])
    assert outcome.status == "completed", outcome.error
    assert outcome.output == {"action": "finish"}
    assert [q.path for q in human.asked] == ["chat/1/answer"]
    assert "chat/2/answer" not in await step_records(store, outcome.run_id)
    assert len(SEEN["tidy"]) == 1  # the script after the HITL ran in iteration 1 only


# --- use_history, prompt-only agents, history_template -------------------------------------------------

OPT_OUT = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2, q3]}
  extractor: {model: scripted, replies: [e1, e2, e3]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      body:
        - {kind: step, name: extract, uses: agents.extractor, use_history: false%s}
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


async def test_use_history_false_sends_no_history_while_another_step_gets_it(tmp_path: Path) -> None:
    pipeline = compile_text(tmp_path, OPT_OUT % ', input: "Entities in: {{ context.initial_prompt }}"')
    outcome, store, _ = await run(pipeline, "goal", ["a1", "a2", "a3"])
    assert outcome.status == "completed", outcome.error
    calls = await prompts(store, outcome.run_id)
    for n in (1, 2, 3):
        extract = calls[f"chat/{n}/extract"]
        assert sent(extract) == [("user", "Entities in: goal")]
        assert extract["history_injected"] is False and "history" not in extract
    talk = calls["chat/3/talk"]
    assert talk["history_injected"] is True
    # talk's input is the extractor's output (which made no turn): its message, after the whole history.
    assert sent(talk) == [
        ("user", "goal"), ("assistant", "q1"), ("user", "a1"), ("assistant", "q2"), ("user", "a2"), ("user", "e3"),
    ]  # fmt: skip


async def test_use_history_false_first_step_is_sent_the_latest_user_turn_not_the_context(tmp_path: Path) -> None:
    pipeline = compile_text(tmp_path, OPT_OUT % "")  # no input: the conversation supplies the message
    outcome, store, _ = await run(pipeline, "goal", ["a1", "a2", "a3"])
    assert outcome.status == "completed", outcome.error
    extract = (await prompts(store, outcome.run_id))["chat/2/extract"]
    assert extract["history_injected"] is False
    assert sent(extract) == [("user", "a1")]


SCRIPT_IN_LOOP = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2, q3]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      %s
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
        - {kind: step, name: tidy, agent: "%s:tidy"}
      output: {text: conversation_history}
"""


async def test_a_script_agent_gets_the_history_as_a_delimited_block_before_its_input(tmp_path: Path) -> None:
    pipeline = compile_text(tmp_path, SCRIPT_IN_LOOP % ("ai_turn_source: named_steps\n      named_steps: [talk]", HERE))
    outcome, store, _ = await run(pipeline, "goal", ["a1", "a2", "a3"])
    assert outcome.status == "completed", outcome.error
    assert SEEN["tidy"][:2] == [
        "<conversation_history>\nuser: goal\nassistant: q1\n</conversation_history>\n\na1",
        "<conversation_history>\nuser: goal\nassistant: q1\nuser: a1\nassistant: q2\n</conversation_history>\n\na2",
    ]
    tidy_call = (await prompts(store, outcome.run_id))["chat/2/tidy"]
    assert tidy_call["history_injected"] is True
    assert tidy_call["history"] == {"conversation": "chat", "turns": 4, "dropped": 0, "mode": "text"}
    assert sent(tidy_call) == [("user", SEEN["tidy"][1])]
    # named_steps: only talk makes assistant turns (the script's "tidied" never does).
    assert outcome.output == lines(
        ("User", "goal"),
        ("Assistant", "q1"),
        ("User", "a1"),
        ("Assistant", "q2"),
        ("User", "a2"),
        ("Assistant", "q3"),
        ("User", "a3"),
    )


async def test_a_script_agent_as_the_last_step_speaks_as_the_assistant(tmp_path: Path) -> None:
    pipeline = compile_text(tmp_path, SCRIPT_IN_LOOP % ("", HERE))
    outcome, store, _ = await run(pipeline, "goal", ["a1", "a2", "a3"])
    assert outcome.status == "completed", outcome.error
    assert outcome.output == lines(
        ("User", "goal"),
        ("User", "a1"),
        ("Assistant", "tidied"),
        ("User", "a2"),
        ("Assistant", "tidied"),
        ("User", "a3"),
        ("Assistant", "tidied"),
    )
    # talk is not the last step, so its questions make no turn; it hears the script's replies.
    assert sent((await prompts(store, outcome.run_id))["chat/3/talk"]) == [
        ("user", "goal"),
        ("user", "a1"),
        ("assistant", "tidied"),
        ("user", "a2"),
        ("user", "tidied"),
    ]


async def test_a_builtin_last_step_adds_no_assistant_turn(tmp_path: Path) -> None:
    text = (SCRIPT_IN_LOOP % ("", HERE)).replace(f'agent: "{HERE}:tidy"', "agent: {id: flujo.builtins.passthrough}")
    outcome, store, _ = await run(compile_text(tmp_path, text), "goal", ["a1", "a2", "a3"])
    assert outcome.status == "completed", outcome.error
    assert outcome.output == lines(("User", "goal"), ("User", "a1"), ("User", "a2"), ("User", "a3"))
    assert sent((await prompts(store, outcome.run_id))["chat/3/talk"]) == [
        ("user", "goal"),
        ("user", "a1"),
        ("user", "a2"),
    ]


TEMPLATED = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2, q3], system_prompt: Be brief.}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      history_template: |
        {{#each history}}
        {{ this.role }}: {{ this.content }}
        {{/each}}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


async def test_history_template_renders_the_history_into_the_user_message_of_a_model_agent(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, TEMPLATED), "goal", ["a1", "a2", "a3"])
    assert outcome.status == "completed", outcome.error
    talk = (await prompts(store, outcome.run_id))["chat/3/talk"]
    # No history chat messages: the system prompt, then one user message with the rendered block first.
    assert sent(talk) == [
        ("system", "Be brief."),
        ("user", "user: goal\nassistant: q1\nuser: a1\nassistant: q2\n\na2"),  # one blank line before the message
    ]
    assert talk["history_injected"] is True
    assert talk["history"]["mode"] == "text" and talk["history"]["turns"] == 4


# --- ai_turn_source ------------------------------------------------------------------------------------

TWO_AGENTS = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2]}
  critic: {model: scripted, replies: [c1, c2]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 2
      ai_turn_source: %s
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: step, name: review, uses: agents.critic}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
      output: {text: conversation_history}
"""


@pytest.mark.parametrize(
    ("source", "turns"),
    [
        ("all_agents", [("User", "goal"), ("Assistant", "q1"), ("Assistant", "c1"), ("User", "a1")]),
        ("last", [("User", "goal"), ("Assistant", "c1"), ("User", "a1")]),
        ("named_steps\n      named_steps: [talk]", [("User", "goal"), ("Assistant", "q1"), ("User", "a1")]),
    ],
)
async def test_ai_turn_source_picks_the_assistant_turns(
    tmp_path: Path, source: str, turns: list[tuple[str, str]]
) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, TWO_AGENTS % source), "goal", ["a1", "a2"])
    assert outcome.status == "completed", outcome.error
    second = [(role, text.replace("1", "2")) for role, text in turns[1:]]
    assert outcome.output == lines(*turns, *second)
    # What iteration 2's first agent is sent is exactly iteration 1's turns.
    expected = [(role.lower(), text) for role, text in turns]
    assert sent((await prompts(store, outcome.run_id))["chat/2/talk"]) == expected


# --- nested conversational loops -----------------------------------------------------------------------

NESTED = """\
version: "0.1"
agents:
  planner: {model: scripted, replies: [o1, o2, o3]}
  detailer: {model: scripted, replies: [i1, i2, i3, i4]}
steps:
  - kind: loop
    name: outer
    loop:
      conversation: true
      max_loops: 2
      ai_turn_source: named_steps
      named_steps: [plan]
      body:
        - {kind: step, name: plan, uses: agents.planner}
        - {kind: hitl, name: reply, message: "{{ steps.plan.output }}"}
        - kind: loop
          name: inner
          loop:
            conversation: true
            max_loops: 2
            body:
              - {kind: step, name: detail, uses: agents.detailer}
              - {kind: hitl, name: detail_answer, message: "{{ steps.detail.output }}"}
            output: {text: conversation_history}
      output: {text: conversation_history}
"""
NESTED_ANSWERS = ["r1", "d1", "d2", "r2", "d3", "d4"]


async def test_nested_conversation_loops_keep_their_own_histories(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, NESTED), "goal", NESTED_ANSWERS)
    assert outcome.status == "completed", outcome.error
    assert outcome.output == lines(
        ("User", "goal"), ("Assistant", "o1"), ("User", "r1"), ("Assistant", "o2"), ("User", "r2")
    )
    records = await step_records(store, outcome.run_id)
    assert records["outer/1/inner"].output == lines(
        ("User", "r1"), ("Assistant", "i1"), ("User", "d1"), ("Assistant", "i2"), ("User", "d2")
    )
    assert records["outer/2/inner"].output == lines(
        ("User", "r2"), ("Assistant", "i3"), ("User", "d3"), ("Assistant", "i4"), ("User", "d4")
    )
    calls = await prompts(store, outcome.run_id)
    # After the inner loop, the outer conversation goes on with its own turns only.
    assert sent(calls["outer/2/plan"]) == [("user", "goal"), ("assistant", "o1"), ("user", "r1")]
    assert calls["outer/2/plan"]["history"]["conversation"] == "outer"
    # The inner conversation starts from its own input; the outer turns never reach it.
    assert sent(calls["outer/2/inner/1/detail"]) == [("user", "r2")]
    assert sent(calls["outer/2/inner/2/detail"]) == [("user", "r2"), ("assistant", "i3"), ("user", "d3")]
    assert calls["outer/2/inner/2/detail"]["history"]["conversation"] == "inner"


@pytest.mark.parametrize("answered", [2, 4])
async def test_nested_conversations_resume_like_an_uninterrupted_run(tmp_path: Path, answered: int) -> None:
    straight, store, _ = await run(compile_text(tmp_path, NESTED), "goal", NESTED_ANSWERS)
    first, _, _ = await run(compile_text(tmp_path, NESTED), "goal", NESTED_ANSWERS[:answered], store=store)
    assert first.status == "paused" and first.pause is not None and "/inner/" in first.pause.path
    resumed, _ = await resume(compile_text(tmp_path, NESTED), store, first.run_id, NESTED_ANSWERS[answered:])
    assert resumed.status == "completed", resumed.error
    assert resumed.output == straight.output
    assert await prompts(store, first.run_id) == await prompts(store, straight.run_id)


# --- bounds: truncation and the context window ---------------------------------------------------------

LONG_CHAT = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [question number one, question number two, question number three, q4]}
  glance: {model: scripted, replies: [ok], context_window: %d}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 4
      %s
      body:
        - {kind: step, name: peek, uses: agents.glance}
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
      output: {text: conversation_history}
"""
LONG_ANSWERS = ["answer number one", "answer number two", "answer number three", "answer number four"]
LONG_OUTPUT = lines(
    ("User", "the goal"),
    ("Assistant", "question number one"),
    ("User", "answer number one"),
    ("Assistant", "question number two"),
    ("User", "answer number two"),
    ("Assistant", "question number three"),
    ("User", "answer number three"),
    ("Assistant", "q4"),
    ("User", "answer number four"),
)


@pytest.mark.parametrize(
    "management",
    [
        "history_management: {strategy: truncate_turns, max_turns: 2}",
        "history_management: {strategy: truncate_tokens, max_tokens: 20}",
    ],
)
async def test_truncation_bounds_what_is_sent_and_the_context_keeps_every_turn(tmp_path: Path, management: str) -> None:
    pipeline = compile_text(tmp_path, LONG_CHAT % (100_000, management))
    outcome, store, _ = await run(pipeline, "the goal", LONG_ANSWERS)
    assert outcome.status == "completed", outcome.error
    assert outcome.output == LONG_OUTPUT  # context.conversation_history keeps everything
    talk = (await prompts(store, outcome.run_id))["chat/4/talk"]
    assert talk["history"]["dropped"] > 0
    # talk's input is peek's output (which made no turn): its message, after the 7 turns so far.
    assert talk["history"]["turns"] + talk["history"]["dropped"] == 7
    kept = sent(talk)
    assert kept[-1] == ("user", "ok")
    assert kept[:-1] == [("assistant", "question number three"), ("user", "answer number three")]  # newest unit


async def test_an_agent_with_a_small_context_window_is_sent_fewer_turns(tmp_path: Path) -> None:
    window = 40  # scripted agents keep no reply reserve: the whole window is the prompt budget
    outcome, store, _ = await run(compile_text(tmp_path, LONG_CHAT % (window, "")), "the goal", LONG_ANSWERS)
    assert outcome.status == "completed", outcome.error
    calls = await prompts(store, outcome.run_id)
    peek, talk = calls["chat/4/peek"], calls["chat/4/talk"]
    assert talk["history"]["dropped"] == 0 and talk["history"]["turns"] == 7
    assert 0 < peek["history"]["turns"] < 6 and peek["history"]["dropped"] > 0
    assert sent(peek)[-1] == ("user", "answer number three")  # the message itself is never dropped
    assert count_messages([ChatMessage(m["role"], m["content"]) for m in peek["messages"]]) <= window
    bigger = count_messages([ChatMessage(m["role"], m["content"]) for m in talk["messages"]])
    assert bigger > window  # the whole history would not have fitted


# --- summarize -----------------------------------------------------------------------------------------

SUMMARIZED = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [question one, question two, question three, question four, question five,
                                   question six, question seven, question eight]}
  summ: %s
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: %d
      history_management: {strategy: summarize, summarizer_agent: summ, max_tokens: 50}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
      output: {text: conversation_history}
"""
ANSWERS = [f"answer {n}" for n in range(1, 9)]


async def test_summarize_sends_one_journaled_summary_in_place_of_the_oldest_turns(tmp_path: Path) -> None:
    pipeline = compile_text(tmp_path, SUMMARIZED % ("{model: scripted, replies: [S1, S2, S3, S4]}", 6))
    outcome, store, _ = await run(pipeline, "my goal", ANSWERS)
    assert outcome.status == "completed", outcome.error
    records = await step_records(store, outcome.run_id)
    summaries = [record for path, record in records.items() if path.endswith("/summarize")]
    assert summaries, "the history never grew past max_tokens"
    first = summaries[0]
    step_path = first.path.removesuffix("/summarize")
    assert first.kind == "summarize" and first.status == "completed" and first.output == "S1"
    assert first.usage.requests == 1
    replaced = first.input["turns"]
    assert first.input["cut"] == len(replaced) >= 2
    assert [t["content"] for t in replaced[:3]] == ["my goal", "question one", "answer 1"]
    # The call right after the summary is sent the summary as one assistant turn, then the kept turns.
    after = (await prompts(store, outcome.run_id))[step_path]
    assert sent(after)[0] == ("assistant", f"{SUMMARY}S1")
    assert all(content not in {"my goal", "question one"} for _, content in sent(after))
    assert after["history"]["summary_of"] == first.input["cut"]
    # The summarizer's usage is part of the run's usage.
    talks = [r for r in records.values() if r.kind == "step"]
    assert outcome.usage.requests == len(talks) + len(summaries)
    # The summary is a view for prompts: the conversation itself (the loop's output) is kept whole.
    questions = ("one", "two", "three", "four", "five", "six")
    pairs = [(("Assistant", f"question {q}"), ("User", f"answer {n}")) for n, q in enumerate(questions, 1)]
    assert outcome.output == lines(("User", "my goal"), *[turn for pair in pairs for turn in pair])
    kinds = [e.kind for e in await store.events(outcome.run_id) if e.path == first.path]
    assert kinds == ["agent.prompt", "agent.reply", "history.summarized"]


async def test_a_resumed_run_replays_the_summary_without_calling_the_summarizer(tmp_path: Path) -> None:
    text = SUMMARIZED % (f'{{python: "{HERE}:summarize_lines"}}', 8)
    straight, store, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS)
    assert straight.status == "completed", straight.error
    summarized = [p for p in await step_records(store, straight.run_id) if p.endswith("/summarize")]
    assert len(summarized) >= 2
    # Pause at the HITL right after the first summary, then resume with fresh agents (as a new process).
    iteration = int(summarized[0].split("/")[1])
    SEEN.clear()
    first, _, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS[: iteration - 1], store=store)
    assert first.status == "paused" and first.pause is not None
    assert first.pause.path == f"chat/{iteration}/answer"
    assert len(SEEN["summarize"]) == 1
    SEEN.clear()
    resumed, _ = await resume(compile_text(tmp_path, text), store, first.run_id, ANSWERS[iteration - 1 :])
    assert resumed.status == "completed", resumed.error
    assert resumed.replayed > 0
    # Only the later summaries were asked for; the replayed one came from the journal.
    assert len(SEEN["summarize"]) == len(summarized) - 1
    assert SUMMARY in SEEN["summarize"][0]
    assert resumed.output == straight.output
    assert await prompts(store, first.run_id) == await prompts(store, straight.run_id)


async def test_a_scripted_summarizer_continues_where_it_was_after_resume(tmp_path: Path) -> None:
    text = SUMMARIZED % ("{model: scripted, replies: [S1, S2, S3, S4]}", 8)
    straight, store, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS)
    summarized = [p for p in await step_records(store, straight.run_id) if p.endswith("/summarize")]
    assert len(summarized) >= 2
    iteration = int(summarized[0].split("/")[1])
    first, _, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS[: iteration - 1], store=store)
    assert first.status == "paused"
    resumed, _ = await resume(compile_text(tmp_path, text), store, first.run_id, ANSWERS[iteration - 1 :])
    assert resumed.status == "completed", resumed.error
    assert resumed.output == straight.output


class Crash(BaseException):
    """Stands for kill -9 (raised by the store, so nothing after it is recorded)."""


class CrashingStore(MemoryStore):
    """Crashes the run instead of recording the step at ``crash_at`` (once)."""

    def __init__(self, crash_at: str) -> None:
        super().__init__()
        self.crash_at: str | None = crash_at

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        if step.path == self.crash_at:
            self.crash_at = None
            raise Crash(step.path)
        await super().record_step(step, events)


async def test_a_crash_after_the_summary_is_journaled_does_not_summarize_again(tmp_path: Path) -> None:
    text = SUMMARIZED % (f'{{python: "{HERE}:summarize_lines"}}', 6)
    straight, reference, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS)
    summarized = [p for p in await step_records(reference, straight.run_id) if p.endswith("/summarize")]
    step_path = summarized[0].removesuffix("/summarize")
    store = CrashingStore(step_path)
    with pytest.raises(Crash):
        await run(compile_text(tmp_path, text), "my goal", ANSWERS, store=store)
    [run_record] = await store.list_runs()
    assert step_path + "/summarize" in await step_records(store, run_record.run_id)
    SEEN.clear()
    resumed, _ = await resume(compile_text(tmp_path, text), store, run_record.run_id, ANSWERS)
    assert resumed.status == "completed", resumed.error
    assert len(SEEN.get("summarize", [])) == len(summarized) - 1


async def test_a_failing_summarizer_is_given_up_after_three_failures_and_truncation_takes_over(
    tmp_path: Path,
) -> None:
    text = SUMMARIZED % (f'{{python: "{HERE}:broken_summarizer"}}', 8)
    outcome, store, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS)
    assert outcome.status == "completed", outcome.error
    events = await store.events(outcome.run_id)
    failures = [e for e in events if e.kind == "history.summarize_failed"]
    assert [e.payload["consecutive_failures"] for e in failures] == [1, 2, 3]
    assert all("the summarizer is down" in e.payload["error"] for e in failures)
    assert ["fallback" in e.payload for e in failures] == [False, False, True]
    assert "truncated" in failures[2].payload["fallback"]
    assert len(SEEN["broken"]) == 3  # later calls do not try again
    failed_at = int(failures[2].path.split("/")[1])
    assert failed_at < 8
    last = prompt_events(events)["chat/8/talk"]
    assert last["history"]["dropped"] > 0  # the history is bounded by truncation instead
    # No summary was made; each failure is journaled (so a resumed run knows the count), with its cut.
    journaled = [r for r in await store.steps(outcome.run_id) if r.kind == "summarize"]
    assert [(r.path, r.status, r.input["consecutive_failures"]) for r in journaled] == [
        (e.path, "failed", n) for n, e in enumerate(failures, 1)
    ]
    assert all(r.error is not None and "the summarizer is down" in r.error for r in journaled)
    questions = ("one", "two", "three", "four", "five", "six", "seven", "eight")
    pairs = [(("Assistant", f"question {q}"), ("User", f"answer {n}")) for n, q in enumerate(questions, 1)]
    assert outcome.output == lines(("User", "my goal"), *[turn for pair in pairs for turn in pair])


@pytest.mark.parametrize("answered", [4, 6])  # paused after the first failure, or after the third
async def test_a_given_up_summarizer_stays_given_up_after_resume(tmp_path: Path, answered: int) -> None:
    text = SUMMARIZED % (f'{{python: "{HERE}:broken_summarizer"}}', 8)
    straight, store, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS)
    assert len(SEEN["broken"]) == 3
    SEEN.clear()
    first, _, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS[:answered], store=store)
    assert first.status == "paused"
    resumed, _ = await resume(compile_text(tmp_path, text), store, first.run_id, ANSWERS[answered:])
    assert resumed.status == "completed", resumed.error
    assert len(SEEN["broken"]) == 3  # as many tries in all as the uninterrupted run, not 3 more
    assert resumed.output == straight.output
    assert await prompts(store, first.run_id) == await prompts(store, straight.run_id)


# --- settings ------------------------------------------------------------------------------------------

PLAIN_LOOP = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      %s
      body:
        - {kind: step, name: talk, uses: agents.bot}
"""


def history_of(pipeline: Pipeline) -> HistoryPolicy:
    [loop] = pipeline.steps
    assert isinstance(loop, LoopStep) and loop.conversation is not None
    return loop.conversation.history


def test_history_defaults_come_from_settings_and_the_loop_keys_override_them(tmp_path: Path) -> None:
    env = {"FLUJO_HISTORY__MAX_TURNS": "7", "FLUJO_HISTORY__STRATEGY": "truncate_turns"}
    settings = load_settings(cwd=tmp_path, env=env, overrides={"history": {"max_tokens": 300, "summarize_ratio": 0.3}})
    assert history_of(compile_text(tmp_path, PLAIN_LOOP % "", settings)) == HistoryPolicy(
        strategy="truncate_turns", max_tokens=300, max_turns=7, summarize_ratio=0.3
    )
    own = "history_management: {strategy: truncate_tokens, max_turns: 3, summarize_ratio: 0.6}"
    assert history_of(compile_text(tmp_path, PLAIN_LOOP % own, settings)) == HistoryPolicy(
        strategy="truncate_tokens", max_tokens=300, max_turns=3, summarize_ratio=0.6
    )
    partial = "history_management: {max_tokens: 64}"
    assert history_of(compile_text(tmp_path, PLAIN_LOOP % partial, settings)) == HistoryPolicy(
        strategy="truncate_turns", max_tokens=64, max_turns=7, summarize_ratio=0.3
    )
    defaults = Settings().history
    assert history_of(compile_text(tmp_path, PLAIN_LOOP % "", Settings())) == HistoryPolicy(
        strategy=defaults.strategy,
        max_tokens=defaults.max_tokens,
        max_turns=defaults.max_turns,
        summarize_ratio=defaults.summarize_ratio,
    )


def test_history_settings_from_the_environment_bound_a_cli_run(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUJO_HISTORY__STRATEGY", "truncate_turns")
    monkeypatch.setenv("FLUJO_HISTORY__MAX_TURNS", "2")
    code, out, err = flujo(["run", str(EXAMPLE), "--json", "-a", "Plan a trip", "-a", "My family", "-a", "June"])
    assert code == exit_codes.OK, err
    result = json.loads(out)
    assert result["output"] == EXAMPLE_OUTPUT  # the stored history is whole
    calls, _ = stored_run(state_db, result["run_id"])
    third = calls["clarification_loop/3/clarify"]
    # Two turns would split (Q1, "My family"): only the newest whole unit (Q2, whose answer is the message) fits.
    assert third["history"]["turns"] == 1 and third["history"]["dropped"] == 3
    assert sent(third)[1:] == [("assistant", Q2), ("user", "June")]


# --- init, seeding, the derived scratchpad.history -----------------------------------------------------

INIT_AND_VIEW = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2, q3]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      init:
        - append: {target: context.scratchpad.starts, value: "start {{ previous_step }}"}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - kind: hitl
          name: answer
          message: "{{ steps.talk.output }} / {{ context.scratchpad.history | join(' | ') }}"
      output: {fields: {starts: "{{ context.scratchpad.starts }}", history: "{{ context.scratchpad.history }}"}}
"""


async def test_loop_init_runs_once_when_iteration_one_pauses_and_resumes(tmp_path: Path) -> None:
    first, store, _ = await run(compile_text(tmp_path, INIT_AND_VIEW), "goal")
    assert first.status == "paused" and first.pause is not None and first.pause.path == "chat/1/answer"
    resumed, _ = await resume(compile_text(tmp_path, INIT_AND_VIEW), store, first.run_id, ["a1", "a2", "a3"])
    assert resumed.status == "completed", resumed.error
    assert resumed.output["starts"] == ["start goal"]


async def test_scratchpad_history_is_the_derived_list_of_turn_lines(tmp_path: Path) -> None:
    outcome, _, human = await run(compile_text(tmp_path, INIT_AND_VIEW), "goal", ["a1", "a2", "a3"])
    assert outcome.status == "completed", outcome.error
    assert [q.message for q in human.asked] == [
        "q1 / User: goal | Assistant: q1",
        "q2 / User: goal | Assistant: q1 | User: a1 | Assistant: q2",
        "q3 / User: goal | Assistant: q1 | User: a1 | Assistant: q2 | User: a2 | Assistant: q3",
    ]
    assert outcome.output["history"] == [
        "User: goal",
        "Assistant: q1",
        "User: a1",
        "Assistant: q2",
        "User: a2",
        "Assistant: q3",
        "User: a3",
    ]


SEEDED = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1]}
steps:
  - {kind: hitl, name: get_goal, message: "Goal?"}
  - {kind: step, name: shape, input: "shaped {{ previous_step }}"}
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 1
      init: {history: {start_with: {from_step: get_goal, prefix: "%s"}}}
      body:
        - {kind: step, name: talk, uses: agents.bot}
      output: {text: conversation_history}
"""


@pytest.mark.parametrize(("prefix", "first_turn"), [("Goal: ", "Goal: Plan a trip"), ("User: ", "Plan a trip")])
async def test_the_history_is_seeded_from_a_named_step_with_a_prefix(
    tmp_path: Path, prefix: str, first_turn: str
) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, SEEDED % prefix), None, ["Plan a trip"])
    assert outcome.status == "completed", outcome.error
    assert outcome.output == lines(("User", first_turn), ("Assistant", "q1"))
    assert sent((await prompts(store, outcome.run_id))["chat/1/talk"]) == [("user", first_turn)]


# --- validation ----------------------------------------------------------------------------------------

INVALID = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      history_management:
        strategy: summarize
        max_tokens: 100
      init:
        - append: {target: context.scratchpad.history, value: "x"}
      body:
        - {kind: step, name: talk, uses: agents.bot}
"""


def test_validate_rejects_summarize_without_a_summarizer_and_init_writing_the_history(
    tmp_path: Path, state_db: Path
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(INVALID, encoding="utf-8")
    found = [(f.position.line, f.position.column, f.code) for f in validate_file(path) if f.is_error and f.position]
    assert found == [(10, 19, "missing-field"), (13, 28, "bad-value")]
    code, _, err = flujo(["validate", str(path)])
    assert code == exit_codes.FAILED
    assert f"{path}:10:19: error: strategy: summarize needs summarizer_agent" in err
    assert f"{path}:13:28: error: in a conversation loop context.scratchpad.history is the conversation" in err
    code, _, err = flujo(["run", str(path)])
    assert code == exit_codes.BLUEPRINT


# --- parallel branches inside a conversation --------------------------------------------------------------

PARALLEL_BODY = """\
version: "0.1"
agents:
  optimist: {model: scripted, replies: [pro1, pro2]}
  pessimist: {model: scripted, replies: [con1, con2]}
  judge: {model: scripted, replies: [verdict1, verdict2]}
steps:
  - kind: loop
    name: debate
    loop:
      conversation: true
      max_loops: 2
      ai_turn_source: all_agents
      body:
        - kind: parallel
          name: sides
          merge_strategy: %s
          branches:
            pro:
              - {kind: step, name: for, uses: agents.optimist}
            con:
              - {kind: hitl, name: objection, message: "Any objection?"}
              - {kind: step, name: against, uses: agents.pessimist}
        - {kind: step, name: judge, uses: agents.judge}
      output: {text: conversation_history}
"""


@pytest.mark.parametrize("strategy", ["merge_scratchpad", "no_merge", "overwrite"])
async def test_turns_said_in_parallel_branches_join_the_conversation_in_branch_order(
    tmp_path: Path, strategy: str
) -> None:
    pipeline = compile_text(tmp_path, PARALLEL_BODY % strategy)
    outcome, store, _ = await run(pipeline, "Should we ship?", ["o1", "o2"])
    assert outcome.status == "completed", outcome.error
    first = [("User", "Should we ship?"), ("Assistant", "pro1"), ("User", "o1"), ("Assistant", "con1")]
    assert outcome.output == lines(
        *first, ("Assistant", "verdict1"), ("Assistant", "pro2"), ("User", "o2"), ("Assistant", "con2"),
        ("Assistant", "verdict2"),
    )  # fmt: skip
    # The judge, after the branches, is sent what both sides said, then its input (the branch outputs).
    judged = sent((await prompts(store, outcome.run_id))["debate/1/judge"])
    assert judged == [*((role.lower(), text) for role, text in first), ("user", '{"pro": "pro1", "con": "con1"}')]
