"""What each agent call in a ``conversation: true`` loop is sent as its current message, and with which
turns (docs/conversation.md, "The current message"), asserted on the ``agent.prompt`` trace events."""

from __future__ import annotations

from pathlib import Path

import pytest

from blueprints import validate_file
from tests.core.test_conversation_runs import HERE, SEEN, TWO_AGENTS, compile_text, prompts, run, sent, step_records

PREVIOUS_STEP = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2, q3]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      body:
        - {kind: step, name: talk, uses: agents.bot, input: "%s"}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


async def test_an_input_of_previous_step_is_the_latest_user_turn_never_the_context(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, PREVIOUS_STEP % "{{ previous_step }}"), "goal", ["a1", "a2"])
    assert outcome.status == "paused", outcome.error
    calls = await prompts(store, outcome.run_id)
    # Iteration 1: previous_step is the seed, sent once (not as a history turn and again as the message).
    assert sent(calls["chat/1/talk"]) == [("user", "goal")]
    # Then previous_step is the propagated context: the latest user turn is sent instead, never the context.
    assert sent(calls["chat/2/talk"]) == [("user", "goal"), ("assistant", "q1"), ("user", "a1")]
    assert sent(calls["chat/3/talk"]) == [
        ("user", "goal"), ("assistant", "q1"), ("user", "a1"), ("assistant", "q2"), ("user", "a2"),
    ]  # fmt: skip
    records = await step_records(store, outcome.run_id)
    assert [records[f"chat/{n}/talk"].input for n in (1, 2, 3)] == ["goal", "a1", "a2"]


async def test_an_input_that_renders_the_context_object_is_never_serialised(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, PREVIOUS_STEP % "{{ context }}"), "goal", ["a1"])
    calls = await prompts(store, outcome.run_id)
    assert sent(calls["chat/1/talk"]) == [("user", "goal")]
    assert sent(calls["chat/2/talk"]) == [("user", "goal"), ("assistant", "q1"), ("user", "a1")]


async def test_an_input_of_its_own_is_sent_as_written_after_the_whole_history(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, PREVIOUS_STEP % "Go on: {{ initial_prompt }}"), "goal", ["a1"])
    calls = await prompts(store, outcome.run_id)
    assert sent(calls["chat/1/talk"]) == [("user", "goal"), ("user", "Go on: goal")]
    assert sent(calls["chat/2/talk"]) == [
        ("user", "goal"),
        ("assistant", "q1"),
        ("user", "a1"),
        ("user", "Go on: goal"),
    ]


WHOLE_CONTEXT = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      body:
        - {kind: step, name: first, uses: agents.bot, input: "Go on: {{ previous_step }}"}
        - {kind: step, name: second, uses: agents.bot, input: "{{ context | tojson }}"}
        - {kind: step, name: third, uses: agents.bot, input: "{{ previous_step }} / {{ context.steps }}"}
        - {kind: step, name: fourth, uses: agents.bot, input: "{{ previous_step }}"}
"""


def test_validate_warns_where_an_input_would_send_the_context_object_as_text(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(WHOLE_CONTEXT, encoding="utf-8")
    found = [(f.severity, f.code, f.position.line if f.position else 0) for f in validate_file(path)]
    # Lines 10 (previous_step of the first body step: the propagated context) and 11 (the whole context).
    # Not 12 (previous_step of a later step is the step before's output; context.steps is one key) nor 13
    # (a lone {{ previous_step }} is sent as the latest user turn).
    assert found == [("warning", "context-in-prompt", 10), ("warning", "context-in-prompt", 11)]


@pytest.mark.parametrize(
    ("source", "second_review"),
    [
        # The writer's q1 and the critic's c1 are both assistant turns; the critic hears q2 once, as its message.
        ("all_agents", [("user", "goal"), ("assistant", "q1"), ("assistant", "c1"), ("user", "a1"), ("user", "q2")]),
        # Only the critic speaks as the assistant; the writer's draft (no turn) is the critic's message.
        ("last", [("user", "goal"), ("assistant", "c1"), ("user", "a1"), ("user", "q2")]),
        (
            "named_steps\n      named_steps: [talk]",
            [("user", "goal"), ("assistant", "q1"), ("user", "a1"), ("user", "q2")],
        ),
    ],
)
async def test_a_second_agent_hears_the_first_agents_reply_once_as_its_message(
    tmp_path: Path, source: str, second_review: list[tuple[str, str]]
) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, TWO_AGENTS % source), "goal", ["a1", "a2"])
    assert outcome.status == "completed", outcome.error
    calls = await prompts(store, outcome.run_id)
    assert sent(calls["chat/1/review"]) == [("user", "goal"), ("user", "q1")]
    assert sent(calls["chat/2/review"]) == second_review
    records = await step_records(store, outcome.run_id)
    assert [records[f"chat/{n}/review"].input for n in (1, 2)] == ["q1", "q2"]


NO_HUMAN = """\
version: "0.1"
agents:
  writer: {model: scripted, replies: [draft1, draft2]}
  critic: {model: scripted, replies: [note1, note2]}
steps:
  - kind: loop
    name: refine
    loop:
      conversation: true
      max_loops: 2
      ai_turn_source: all_agents
      body:
        - {kind: step, name: write, uses: agents.writer}
        - {kind: step, name: review, uses: agents.critic}
"""


async def test_without_a_user_turn_between_iterations_the_newest_turn_is_the_next_message(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, NO_HUMAN), "a poem")
    assert outcome.status == "completed", outcome.error
    calls = await prompts(store, outcome.run_id)
    # Iteration 2's first step answers what was said last (the critic's note), never the seed again.
    assert sent(calls["refine/2/write"]) == [("user", "a poem"), ("assistant", "draft1"), ("user", "note1")]
    assert sent(calls["refine/2/review"]) == [
        ("user", "a poem"), ("assistant", "draft1"), ("assistant", "note1"), ("user", "draft2"),
    ]  # fmt: skip


async def test_an_input_naming_the_newest_turn_sends_it_once(tmp_path: Path) -> None:
    text = PREVIOUS_STEP % "{{ context.conversation_history[-1].content }}"
    outcome, store, _ = await run(compile_text(tmp_path, text), "goal", ["a1"])
    calls = await prompts(store, outcome.run_id)
    assert sent(calls["chat/1/talk"]) == [("user", "goal")]
    assert sent(calls["chat/2/talk"]) == [("user", "goal"), ("assistant", "q1"), ("user", "a1")]


STRUCTURED = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2]}
  noter: {model: scripted, replies: [n1, n2]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 2
      ai_turn_source: named_steps
      named_steps: [talk]
      history_template: |
        {{#each history}}
        {{ this.role }}: {{ this.content }}
        {{/each}}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
        - {kind: step, name: note, uses: agents.noter, input: "{{ {'said': previous_step} }}"}
        - {kind: step, name: tidy, agent: "tests.core.test_conversation_runs:tidy", input: "{{ {'said': 1} }}"}
"""


async def test_a_model_agent_with_a_history_template_gets_the_block_before_a_structured_input(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, STRUCTURED), "goal", ["a1", "a2"])
    assert outcome.status == "completed", outcome.error
    note = (await prompts(store, outcome.run_id))["chat/1/note"]
    # The model would be sent the input as JSON text anyway: the rendered history goes before it.
    assert sent(note) == [("user", 'user: goal\nassistant: q1\nuser: a1\n\n{"said": "a1"}')]
    assert note["history"] == {"conversation": "chat", "turns": 3, "dropped": 0, "mode": "text"}


async def test_a_script_agent_with_a_structured_input_gets_no_history_and_the_trace_says_so(tmp_path: Path) -> None:
    SEEN.clear()
    outcome, store, _ = await run(compile_text(tmp_path, STRUCTURED), "goal", ["a1", "a2"])
    assert SEEN["tidy"] == [{"said": 1}, {"said": 1}]  # passed unchanged
    events = [e for e in await store.events(outcome.run_id) if e.path == "chat/1/tidy"]
    notes = [e.payload for e in events if e.kind == "history.not_injected"]
    assert notes == [
        {"turns": 3, "reason": "the input is structured (not text); the agent can read context.conversation_history"}
    ]
    [prompt] = [e.payload for e in events if e.kind == "agent.prompt"]
    assert prompt["history"]["mode"] == "none (structured input)" and prompt["history_injected"] is False


def test_validate_warns_where_a_script_agent_cannot_be_sent_the_history(tmp_path: Path) -> None:
    text = STRUCTURED.replace(
        "      body:\n",
        "      body:\n"
        "        - kind: parallel\n"
        "          name: sides\n"
        "          branches: {a: [{kind: step, name: pa, uses: agents.bot}]}\n"
        '        - {kind: step, name: after, agent: "tests.core.test_conversation_runs:tidy"}\n',
    )
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    found = [(f.code, f.message.split(":")[0]) for f in validate_file(path) if f.code == "history-not-sent"]
    # The script after the parallel (its outputs are a mapping) and the one with a {...} input; never the
    # model agent 'note', which gets the block before the JSON text of its input.
    assert found == [("history-not-sent", "step 'after'"), ("history-not-sent", "step 'tidy'")]


BUILTIN_IN_BODY = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, {action: finish}]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      body:
        - {kind: hitl, name: ask, message: "Say something"}
        - {kind: step, name: relay, agent: {id: flujo.builtins.%s}}
        - {kind: step, name: reply, uses: agents.bot}
"""


@pytest.mark.parametrize("builtin", ["passthrough", "stringify"])
async def test_a_builtin_in_a_conversation_gets_no_history_so_neither_does_its_output(
    tmp_path: Path, builtin: str
) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, BUILTIN_IN_BODY % builtin), "hello", ["one", "two"])
    assert outcome.status == "completed", outcome.error
    calls = await prompts(store, outcome.run_id)
    # The builtin is sent the newest turn alone (the answer it relays), never the <conversation_history> block.
    assert sent(calls["chat/1/relay"]) == [("user", "one")]
    assert sent(calls["chat/2/relay"]) == [("user", "two")]
    assert calls["chat/2/relay"]["history_injected"] is False
    assert calls["chat/2/relay"]["history"]["mode"] == "none (the agent takes no history)"
    records = await step_records(store, outcome.run_id)
    assert [records[f"chat/{n}/relay"].output for n in (1, 2)] == ["one", "two"]
    # So the model agent after it hears the answer once, as its message, after the turns before it.
    assert sent(calls["chat/1/reply"]) == [("user", "hello"), ("user", "one")]
    assert sent(calls["chat/2/reply"]) == [("user", "hello"), ("user", "one"), ("assistant", "q1"), ("user", "two")]


async def test_a_builtin_call_does_not_summarize_the_history_it_is_not_sent(tmp_path: Path) -> None:
    text = BUILTIN_IN_BODY.replace(
        "      max_loops: 3\n",
        "      max_loops: 3\n      history_management: {strategy: summarize, summarizer_agent: summ, max_turns: 2}\n",
    ).replace("agents:\n", f'agents:\n  summ: {{python: "{HERE}:summarize_lines"}}\n')
    bot = "bot: {model: scripted, replies: [q1, q2, {action: finish}]}"
    text = text.replace("bot: {model: scripted, replies: [q1, {action: finish}]}", bot)
    outcome, store, _ = await run(compile_text(tmp_path, text % "passthrough"), "hello", ["one", "two", "three"])
    assert outcome.status == "completed", outcome.error
    summaries = [path for path in await step_records(store, outcome.run_id) if path.endswith("/summarize")]
    assert summaries and all(path.endswith("/reply/summarize") for path in summaries)
