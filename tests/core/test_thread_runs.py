"""Threads in the engine (``core.conversation.threads``): which loop continues a thread, what a run adds to it and when
(paused, failed, resumed), what a resumed run sees, and what cannot join a thread.

Pipelines are compiled from blueprint text with scripted agents and a scripted human, on a MemoryStore;
the three-run story through the CLI is in tests/cli/test_threads.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from blueprints import load_pipeline
from core import ChatMessage, Engine, Pipeline, RunError, RunOutcome, Settings, ThreadTurn
from core.store import MemoryStore
from core.testing import RecordingReporter, ScriptedHuman
from core.text.tokens import count_messages

HERE = "tests.core.test_thread_runs"


def fragile(data: Any) -> str:
    """A script agent that fails when the user says "boom"."""
    if "boom" in str(data):
        raise ValueError("the agent broke")
    return "fine"


def compile_text(tmp_path: Path, text: str) -> Pipeline:
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    return load_pipeline(path, Settings())


async def start(
    pipeline: Pipeline, store: MemoryStore, data: Any, answers: Sequence[str] = (), *, thread: str | None = "t"
) -> RunOutcome:
    return await Engine(store=store, human=ScriptedHuman(answers)).run(pipeline, data, thread=thread)


async def resume(pipeline: Pipeline, store: MemoryStore, run_id: str, answers: Sequence[str] = ()) -> RunOutcome:
    return await Engine(store=store, human=ScriptedHuman(answers)).resume(pipeline, run_id)


def said(turns: Sequence[ThreadTurn]) -> list[tuple[str, str]]:
    return [(t.role, t.content) for t in turns]


async def first_call(store: MemoryStore, run_id: str, path: str) -> list[tuple[str, str]]:
    """What the agent at ``path`` was sent (role, content), from its ``agent.prompt`` event."""
    [payload] = [e.payload for e in await store.events(run_id) if e.kind == "agent.prompt" and e.path == path]
    return [(m["role"], m["content"]) for m in payload["messages"]]


# Each iteration: the bot asks, the human answers, the human adds a remark (two questions per iteration).
TWO_QUESTIONS = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: ["q1", "q2"]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 2
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
        - {kind: hitl, name: remark, message: "Anything else?"}
"""


async def test_a_run_paused_mid_iteration_keeps_what_was_typed_and_its_resume_replaces_it(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, TWO_QUESTIONS), MemoryStore()
    paused = await start(pipeline, store, "hello", ["a1"])
    assert paused.status == "paused"
    # Iteration 1 stopped at "remark": its state is not adopted, but the answer typed in it is kept.
    assert said(await store.thread_turns("t")) == [("user", "hello"), ("assistant", "q1"), ("user", "a1")]
    done = await resume(pipeline, store, paused.run_id, ["r1", "a2", "r2"])
    assert done.status == "completed", done.error
    turns = await store.thread_turns("t")
    assert said(turns) == [
        ("user", "hello"),
        ("assistant", "q1"),
        ("user", "a1"),
        ("user", "r1"),
        ("assistant", "q2"),
        ("user", "a2"),
        ("user", "r2"),
    ]  # replaced by the full set: nothing doubled
    assert [t.index for t in turns] == list(range(7))
    assert all(t.run_id == paused.run_id and t.tokens for t in turns)


async def test_resuming_an_earlier_run_after_a_later_one_sees_the_history_it_had(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, TWO_QUESTIONS), MemoryStore()
    first = await start(pipeline, store, "first", ["a1"])
    later = await start(pipeline, store, "later", ["b1", "b2", "b3", "b4"])
    assert (first.status, later.status) == ("paused", "completed")
    # The later run was sent the first run's turns (stored when it paused) before its own.
    assert await first_call(store, later.run_id, "chat/1/talk") == [
        ("user", "first"),
        ("assistant", "q1"),
        ("user", "a1"),
        ("user", "later"),
    ]
    done = await resume(pipeline, store, first.run_id, ["r1", "a2", "r2"])
    assert done.status == "completed", done.error
    # Resumed, the first run still sees only runs created before it: none of the later run's turns.
    assert await first_call(store, first.run_id, "chat/2/talk") == [
        ("user", "first"),
        ("assistant", "q1"),
        ("user", "a1"),
        ("user", "r1"),
    ]
    assert [t.run_id for t in await store.thread_turns("t")] == [first.run_id] * 7 + [later.run_id] * 7


FAILING = f"""\
version: "0.1"
agents:
  bot: {{python: "{HERE}:fragile"}}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      ai_turn_source: named_steps
      named_steps: [talk]
      body:
        - {{kind: hitl, name: ask, message: "Say something"}}
        - {{kind: step, name: talk, uses: agents.bot}}
"""


async def test_a_failed_run_keeps_the_turns_said_before_the_failure(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, FAILING), MemoryStore()
    outcome = await start(pipeline, store, "hi", ["ok", "boom"])
    assert outcome.status == "failed"
    # Iteration 2 failed at the agent; the user's "boom", typed in it, stays in the thread.
    assert said(await store.thread_turns("t")) == [
        ("user", "hi"),
        ("user", "ok"),
        ("assistant", "fine"),
        ("user", "boom"),
    ]


TWO_LOOPS = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: ["hello"]}
steps:
  - kind: loop
    name: first
    loop:
      conversation: true
      max_loops: 1
      body:
        - {kind: step, name: talk, uses: agents.bot}
  - kind: loop
    name: second
    loop:
      conversation: true
      max_loops: 1
      body:
        - {kind: step, name: talk_again, uses: agents.bot}
"""


async def test_only_the_first_conversational_loop_continues_the_thread(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, TWO_LOOPS), MemoryStore()
    one = await start(pipeline, store, "one")
    two = await start(pipeline, store, "two")
    assert (one.status, two.status) == ("completed", "completed")
    assert said(await store.thread_turns("t")) == [("user", "one"), ("assistant", "hello")] * 1 + [
        ("user", "two"),
        ("assistant", "hello"),
    ]
    assert await first_call(store, two.run_id, "first/1/talk") == [
        ("user", "one"),
        ("assistant", "hello"),
        ("user", "two"),
    ]
    # The second loop has its own history (it starts from its input, the first loop's output).
    second = await first_call(store, two.run_id, "second/1/talk_again")
    assert all(content != "one" for _, content in second)


IN_A_MAP = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: ["noted"]}
steps:
  - kind: map
    name: each
    map:
      over: previous_step
      body:
        - kind: loop
          name: chat
          loop:
            conversation: true
            max_loops: 1
            body:
              - {kind: step, name: talk, uses: agents.bot}
"""


async def test_a_thread_loop_that_starts_again_continues_from_the_turns_of_this_run(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, IN_A_MAP), MemoryStore()
    earlier = await start(pipeline, store, ["x"])
    outcome = await start(pipeline, store, ["a", "b"])
    assert (earlier.status, outcome.status) == ("completed", "completed")
    assert await first_call(store, outcome.run_id, "each/1/chat/1/talk") == [
        ("user", "x"),
        ("assistant", "noted"),
        ("user", "a"),
        ("assistant", "noted"),
        ("user", "b"),
    ]
    assert [c for _, c in said(await store.thread_turns("t"))] == ["x", "noted", "a", "noted", "b", "noted"]


async def test_the_run_says_which_thread_it_continues(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, TWO_LOOPS), MemoryStore()
    notes = []
    for data in ("one", "two"):
        reporter = RecordingReporter()
        await Engine(store=store, human=ScriptedHuman(), reporter=reporter).run(pipeline, data, thread="trip")
        notes.append(reporter.notes)
    assert notes == [
        ["thread trip: a new conversation"],
        ["thread trip: continuing with 2 turn(s) from 1 earlier run(s)"],
    ]


NO_CONVERSATION = """\
version: "0.1"
name: plain
steps:
  - {kind: hitl, name: ask, message: "Hi?"}
"""


@pytest.mark.parametrize(
    ("text", "thread", "message"),
    [
        (NO_CONVERSATION, "t", "--thread t needs a conversation: true loop, and 'plain' has none"),
        (TWO_LOOPS, "", "the thread name is empty"),
        (TWO_LOOPS, "two words", "thread name 'two words' is not valid"),
        (TWO_LOOPS, "-dash", "thread name '-dash' is not valid"),
        (TWO_LOOPS, "x" * 101, "is not valid"),
    ],
)
async def test_a_run_that_cannot_join_a_thread_is_refused_before_it_starts(
    tmp_path: Path, text: str, thread: str, message: str
) -> None:
    pipeline, store = compile_text(tmp_path, text), MemoryStore()
    with pytest.raises(RunError, match=message) as caught:
        await start(pipeline, store, "hi", thread=thread)
    assert caught.value.hint
    assert await store.list_runs() == []


async def test_good_thread_names(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, TWO_LOOPS), MemoryStore()
    for name in ("trip", "support/ada@example.com", "2025-06:v1.2_x", "x" * 100):
        assert (await start(pipeline, store, "hi", thread=name)).status == "completed"
    assert len(await store.list_threads()) == 4


DEBATE = """\
version: "0.1"
agents:
  optimist: {model: scripted, replies: [pro1, pro2]}
  pessimist: {model: scripted, replies: [con1, con2]}
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
          merge_strategy: overwrite
          branches:
            pro:
              - {kind: step, name: for, uses: agents.optimist}
            con:
              - {kind: hitl, name: objection, message: "Any objection?"}
              - {kind: step, name: against, uses: agents.pessimist}
"""


async def test_parallel_branches_add_their_thread_turns_in_branch_order_also_when_one_pauses(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, DEBATE), MemoryStore()
    paused = await start(pipeline, store, "Ship?", ["o1"])
    assert paused.status == "paused"  # iteration 2's objection is not answered; its "pro" branch spoke
    expected = [("user", "Ship?"), ("assistant", "pro1"), ("user", "o1"), ("assistant", "con1"), ("assistant", "pro2")]
    assert said(await store.thread_turns("t")) == expected
    done = await resume(pipeline, store, paused.run_id, ["o2"])
    assert done.status == "completed", done.error
    assert said(await store.thread_turns("t")) == [*expected, ("user", "o2"), ("assistant", "con2")]


LIMITED = """\
version: "0.1"
limits: {max_tokens: %d}
agents:
  bot: {model: scripted, replies: ["Tell me more."]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 5
      body:
        - {kind: hitl, name: ask, message: "Go on"}
        - {kind: step, name: talk, uses: agents.bot}
"""


async def test_a_run_stopped_by_a_limit_keeps_the_answer_typed_before_the_refused_call(tmp_path: Path) -> None:
    # A budget the first call's prompt fits in exactly (scripted agents report no usage); the second
    # call's prompt, with the history, does not fit.
    first_prompt = count_messages([ChatMessage("user", "hi"), ChatMessage("user", "a1")])
    pipeline, store = compile_text(tmp_path, LIMITED % first_prompt), MemoryStore()
    outcome = await start(pipeline, store, "hi", ["a1", "a2"])
    assert outcome.status == "limit_reached", outcome
    assert said(await store.thread_turns("t")) == [
        ("user", "hi"),
        ("user", "a1"),
        ("assistant", "Tell me more."),
        ("user", "a2"),
    ]


SUMMARIZED = """\
version: "0.1"
agents:
  tutor: {model: scripted, replies: ["q"]}
  summarizer: {model: scripted, replies: ["earlier stuff"]}
steps:
  - kind: loop
    name: quiz
    loop:
      conversation: true
      max_loops: 2
      history_management: {strategy: summarize, summarizer_agent: summarizer, max_turns: 2, summarize_ratio: 0.5}
      body:
        - {kind: step, name: ask, uses: agents.tutor}
        - {kind: hitl, name: answer, message: "{{ steps.ask.output }}"}
"""


async def test_a_summary_condenses_what_is_sent_never_the_thread(tmp_path: Path) -> None:
    pipeline, store = compile_text(tmp_path, SUMMARIZED), MemoryStore()
    one = await start(pipeline, store, "one", ["a", "b"])
    two = await start(pipeline, store, "two", ["c", "d"])
    assert (one.status, two.status) == ("completed", "completed")
    # Before run 2's first call, the oldest of the thread's turns were condensed into a summary for sending.
    [summarized] = [e.payload for e in await store.events(two.run_id) if e.kind == "history.summarized"][:1]
    assert summarized["turns_replaced"] == 3
    request = await first_call(store, two.run_id, "quiz/1/ask/summarize")
    assert "user: one\nassistant: q\nuser: a\n" in request[-1][1]
    # The thread keeps every turn as it was said.
    assert [c for _, c in said(await store.thread_turns("t"))] == ["one", "q", "a", "q", "b", "two", "q", "c", "q", "d"]


async def slow_reply(data: Any) -> str:
    """A script agent that takes its time (long enough to be interrupted)."""
    import asyncio

    await asyncio.sleep(30)
    return "late"


INTERRUPTIBLE = f"""\
version: "0.1"
agents:
  slow: {{python: "{HERE}:slow_reply"}}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 2
      body:
        - {{kind: hitl, name: answer, message: "Go on?"}}
        - {{kind: step, name: think, uses: agents.slow}}
"""


async def test_a_run_interrupted_outside_a_prompt_keeps_its_thread_turns(tmp_path: Path) -> None:
    import asyncio

    pipeline, store = compile_text(tmp_path, INTERRUPTIBLE), MemoryStore()
    task = asyncio.create_task(start(pipeline, store, "hello", ["an answer typed before Ctrl-C"]))
    while not [r for r in await store.list_runs() if await store.steps(r.run_id)]:  # the answer is committed
        await asyncio.sleep(0.01)
    task.cancel()  # what Ctrl-C does to the run's task
    with pytest.raises(asyncio.CancelledError):
        await task
    [run] = await store.list_runs()
    assert run.status == "interrupted"
    assert said(await store.thread_turns("t")) == [("user", "hello"), ("user", "an answer typed before Ctrl-C")]
