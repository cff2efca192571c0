"""``flujo lens trace RUN --step PATH --why``: where each message an agent was sent came from, and what of the
conversation was left out by which rule (docs/lens.md, "Why each message is there"). Each blueprint is run
for real (scripted models, answers given), then read with the real ``flujo lens trace``, plain and ``--json``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from blueprints import load_pipeline
from core import Engine, Settings, TraceEvent
from core.steps.kinds import ToolUse
from core.store import open_store
from core.testing import ScriptedHuman
from flujo_cli import exit_codes
from tests.core.test_conversation_runs import NESTED, NESTED_ANSWERS
from tests.support.cli_helpers import flujo
from tests.support.tool_loops import FunctionTool, with_tools

CHAT = """\
version: "0.1"
name: chat
agents:
  bot: {model: scripted, system_prompt: "You plan trips.", replies: [q1, q2, q3, q4]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 4
      history_management: %s
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


def run(tmp_path: Path, blueprint: str, *args: str) -> str:
    """Run ``blueprint`` with ``args``; its run id."""
    path = tmp_path / "flow.yaml"
    path.write_text(blueprint, encoding="utf-8")
    code, out, err = flujo(["run", str(path), "--json", *args])
    assert code == exit_codes.OK, err
    return str(json.loads(out)["run_id"])


def why(run_id: str, step: str) -> list[str]:
    code, out, err = flujo(["lens", "trace", run_id, "--step", step, "--why"])
    assert code == exit_codes.OK, err
    return out.splitlines()


def why_json(run_id: str, step: str) -> list[dict[str, Any]]:
    code, out, err = flujo(["lens", "trace", run_id, "--step", step, "--why", "--json"])
    assert code == exit_codes.OK, err
    document = json.loads(out)
    assert document["run_id"] == run_id
    calls: list[dict[str, Any]] = document["calls"]
    return calls


ANSWERS = ("--input", "Plan a trip", "--answer", "a1", "--answer", "a2", "--answer", "a3", "--answer", "a4")


def test_a_conversation_with_a_person_says_each_message_s_origin(state_db: Path, tmp_path: Path) -> None:
    run_id = run(tmp_path, CHAT % "{strategy: truncate_turns, max_turns: 8}", *ANSWERS)
    assert why(run_id, "chat/1/talk") == [
        "chat/1/talk · call 1 · scripted",
        "    1 system    the system prompt of agent scripted",
        "    2 user      the seed turn, from the loop's input",
    ]
    assert why(run_id, "chat/3/talk") == [
        "chat/3/talk · call 1 · scripted",
        "    1 system    the system prompt of agent scripted",
        "    2 user      the seed turn, from the loop's input",
        "    3 assistant the reply of chat/1/talk (ai_turn_source: last)",
        "    4 user      the person's answer to the question at chat/1/answer",
        "    5 assistant the reply of chat/2/talk (ai_turn_source: last)",
        "    6 user      the person's answer to the question at chat/2/answer",
    ]
    [call] = why_json(run_id, "chat/2/talk")
    assert [m["origin"] for m in call["messages"]] == [
        {"system": "scripted"},
        {"seed": "input"},
        {"reply": "chat/1/talk", "source": "last"},
        {"answer": "chat/1/answer"},
    ]
    assert call["messages"][3]["why"] == "the person's answer to the question at chat/1/answer"
    assert call["left_out"] == []


def test_truncate_turns_says_which_turns_it_dropped(state_db: Path, tmp_path: Path) -> None:
    run_id = run(tmp_path, CHAT % "{strategy: truncate_turns, max_turns: 3}", *ANSWERS)
    lines = why(run_id, "chat/4/talk")
    assert lines[1:3] == [
        "    1 system    the system prompt of agent scripted",
        "    2 assistant the reply of chat/2/talk (ai_turn_source: last)",
    ]
    assert lines[-1] == "  left out: turns 1–3 dropped by truncate_turns (max_turns 3)"
    [call] = why_json(run_id, "chat/4/talk")
    assert call["left_out"] == [
        {
            "rule": "truncate_turns",
            "turns": [1, 3],
            "max_turns": 3,
            "why": "turns 1–3 dropped by truncate_turns (max_turns 3)",
        }
    ]
    # Stored once: the event of chat/4/talk leaves out the bound's note, the same as chat/3/talk's; and the
    # origins of the turns since, said by the events of the steps that made them: it stores no why at all.
    stored = {path: why for path, why in stored_whys(state_db, run_id).items() if path.endswith("/talk")}
    assert stored["chat/3/talk"]["left_out"] == [{"rule": "truncate_turns", "max_turns": 3}]
    assert stored["chat/4/talk"] is None
    assert why(run_id, "chat/3/talk")[-1] == "  left out: turn 1 dropped by truncate_turns (max_turns 3)"


def stored_events(db: Path, run_id: str) -> list[TraceEvent]:
    """The events of run ``run_id`` as the store holds them."""

    async def read() -> list[TraceEvent]:
        async with await open_store(str(db)) as store:
            return await store.events(run_id)

    return asyncio.run(read())


def stored_whys(db: Path, run_id: str) -> dict[str, Any]:
    """The ``why`` of each agent call of run ``run_id`` as its event stores it, by step path."""
    return {e.path: e.payload.get("why") for e in stored_events(db, run_id) if e.kind == "agent.prompt"}


def test_truncate_tokens_says_its_bound(state_db: Path, tmp_path: Path) -> None:
    # Each turn costs a few tokens with its message overhead: 12 keep the newest two or three.
    run_id = run(tmp_path, CHAT % "{strategy: truncate_tokens, max_tokens: 12}", *ANSWERS)
    [call] = why_json(run_id, "chat/4/talk")
    [note] = call["left_out"]
    assert note["rule"] == "truncate_tokens" and note["max_tokens"] == 12 and note["turns"][0] == 1
    kept = len(call["messages"]) - 2  # the system prompt and the current message
    assert note["turns"][1] == 6 - kept  # the turns before the current answer: the seed and five more
    assert (
        why(run_id, "chat/4/talk")[-1]
        == f"  left out: {_turns(1, 6 - kept)} dropped by truncate_tokens (max_tokens 12)"
    )


def _turns(first: int, last: int) -> str:
    return f"turn {first}" if first == last else f"turns {first}–{last}"


SUMMARIZED = """\
version: "0.1"
name: summarized
agents:
  bot: {model: scripted, replies: [q1, q2, q3, q4, q5]}
  summ: {model: scripted, replies: [S1, S2, S3]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 5
      history_management: {strategy: summarize, summarizer_agent: summ, max_turns: 4, summarize_ratio: 0.5}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


def test_a_summary_says_which_turns_it_stands_for_and_who_made_it(state_db: Path, tmp_path: Path) -> None:
    run_id = run(tmp_path, SUMMARIZED, *ANSWERS, "--answer", "a5")
    calls = why_json(run_id, "chat/3/talk")
    summarizer, talk = calls  # the summary, made before the step's call, is its child
    assert summarizer["path"] == "chat/3/talk/summarize"
    assert summarizer["messages"][-1]["origin"] == {"request": "chat/3/talk/summarize"}
    assert talk["messages"][0]["origin"] == {"summary": [1, 3], "by": "scripted"}
    assert talk["messages"][0]["why"] == "a summary of turns 1–3, made by agent scripted"
    assert talk["messages"][-1]["origin"] == {"answer": "chat/2/answer"}
    assert talk["left_out"] == []


OPTED_OUT = """\
version: "0.1"
name: opted_out
agents:
  bot: {model: scripted, replies: [q1, q2]}
  extractor: {model: scripted, replies: [e1, e2]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 2
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
        - {kind: step, name: extract, uses: agents.extractor, use_history: false}
"""


def test_a_step_that_opts_out_of_the_history_says_so(state_db: Path, tmp_path: Path) -> None:
    run_id = run(tmp_path, OPTED_OUT, "--input", "Hi", "--answer", "a1", "--answer", "a2")
    lines = why(run_id, "chat/2/extract")
    assert lines == [
        "chat/2/extract · call 1 · scripted",
        "    1 user      the person's answer to the question at chat/2/answer",
        "  left out: turns 1–3 not sent: step chat/2/extract opted out (use_history: false)",
    ]


CALCULATOR = """\
version: "0.1"
name: calculator
agents:
  helper:
    model: scripted
    replies:
      - {tool: add, arguments: {a: 2, b: 2}}
      - "It is 4."
      - {tool: add, arguments: {a: 4, b: 3}}
      - "It is 7."
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 1
      body:
        - {kind: step, name: answer, uses: agents.helper}
        - {kind: hitl, name: more, message: "{{ steps.answer.output }}"}
"""


def test_a_thread_s_earlier_run_and_a_tool_loop_s_messages_are_named(state_db: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "calculator.yaml"
    blueprint.write_text(CALCULATOR, encoding="utf-8")
    pipeline = with_tools(
        load_pipeline(blueprint, Settings()),
        "answer",
        ToolUse(tools=(FunctionTool("add", lambda a: f"sum={a['a'] + a['b']}"),), agent="helper"),
    )

    async def two_runs() -> tuple[str, str]:
        async with await open_store(str(state_db)) as store:
            first = await Engine(store=store, human=ScriptedHuman(["Thanks"])).run(pipeline, "2+2?", thread="sums")
            second = await Engine(store=store, human=ScriptedHuman(["Bye"])).run(pipeline, "4+3?", thread="sums")
        assert (first.status, second.status) == ("completed", "completed"), (first.error, second.error)
        return first.run_id, second.run_id

    first, second = asyncio.run(two_runs())
    calls = why_json(second, "chat/1/answer")
    assert len(calls) == 2  # the tool loop's two turns
    earlier = [{"thread": first}] * 3  # 2+2?, It is 4., Thanks
    assert [m["origin"] for m in calls[0]["messages"]] == [*earlier, {"seed": "input"}]
    assert [m["origin"] for m in calls[1]["messages"]] == [
        *earlier,
        {"seed": "input"},
        {"calls": "chat/1/answer/model/2"},
        {"result": "chat/1/answer/model/2"},
    ]
    lines = why(second, "chat/1/answer")
    assert f"    1 user      a turn of the thread's earlier run {first}" in lines
    assert "    5 assistant the tool calls the model asked for, in this step's tool loop" in lines
    assert "    6 tool      a tool call's result, in this step's tool loop" in lines


def test_a_call_recorded_without_provenance_names_what_it_can(state_db: Path, tmp_path: Path) -> None:
    """A step outside a conversation: its system prompt and its input."""
    flow = 'version: "0.1"\nagents:\n  bot: {model: scripted, system_prompt: Be brief., replies: [ok]}\n'
    run_id = run(tmp_path, flow + "steps:\n  - {kind: step, name: one, uses: agents.bot}\n", "--input", "hi")
    assert why(run_id, "one") == [
        "one · call 1 · scripted",
        "    1 system    the system prompt of agent scripted",
        "    2 user      the input of one",
    ]


def test_why_with_tui_asks_for_the_viewer(state_db: Path, tmp_path: Path) -> None:
    """``--why --tui`` opens the viewer, whose detail pane says why (tests/lens/test_viewer.py): without a
    terminal it is refused as ``--tui`` alone is."""
    flow = 'version: "0.1"\nagents:\n  bot: {model: scripted, replies: [ok]}\n'
    run_id = run(tmp_path, flow + "steps:\n  - {kind: step, name: one, uses: agents.bot}\n", "--input", "hi")
    code, _, err = flujo(["lens", "trace", run_id, "--why", "--tui"])
    assert code == exit_codes.USAGE and "--tui needs a terminal" in err


WINDOW = """\
version: "0.1"
name: window
agents:
  bot:
    model: scripted
    context_window: 40
    model_settings: {max_tokens: 10}
    replies: [q1 is a question of some length, q2 asks more things, q3, q4]
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 4
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


def test_turns_dropped_to_fit_the_agent_s_window_say_its_budget(state_db: Path, tmp_path: Path) -> None:
    run_id = run(tmp_path, WINDOW, *ANSWERS)
    [call] = why_json(run_id, "chat/4/talk")
    [note] = call["left_out"]
    assert note["rule"] == "window" and (note["budget"], note["reply"]) == (30, 10) and note["turns"][0] == 1
    window = "the model's window of 40 tokens minus 10 for the reply (agent scripted)"
    assert why(run_id, "chat/4/talk")[-1].endswith(f"dropped to fit {window}")


ENSEMBLE = """\
version: "0.1"
name: debate
agents:
  writer: {model: scripted, system_prompt: "You write.", replies: [draft 1, draft 2, draft 3, draft 4]}
  critic: {model: scripted, replies: [too long, better, fine]}
steps:
  - kind: ensemble
    name: review
    ensemble:
      history_management: {strategy: truncate_turns, max_turns: 2}
      participants:
        - {name: writer, uses: agents.writer, max_turns: 4}
        - name: critic
          uses: agents.critic
          max_turns: 3
          depends_on: [{participant: writer, condition: "history[-1].participant == 'writer'"}]
        - name: editor
          ask: "Good? {{ steps.writer.output }}"
          depends_on: [{participant: critic, condition: "history[-1].participant == 'critic'"}]
      max_total_turns: 9
"""


def test_an_ensemble_s_participants_say_whose_turns_they_were_sent(state_db: Path, tmp_path: Path) -> None:
    """A participant's messages: the ensemble's input, each participant's turn by round, a person's answer, the
    cue when it spoke last; and the turns its history policy left out. The turns are numbered as said: the
    input 1, then the rounds' turns in the participants' order (round 2: writer 3, critic 4; round 3: writer
    5, the editor's answer 6)."""
    run_id = run(tmp_path, ENSEMBLE, "--input", "Write a haiku", "--answer", "ok", "--answer", "ok")
    assert why(run_id, "review/2/writer")[1:] == [
        "    1 system    the system prompt of agent scripted",
        "    2 user      the seed turn, from the loop's input",
        "    3 assistant participant writer's turn in round 1 (review/1/writer)",
        "    4 user      the ensemble's cue: it is this participant's turn (it spoke last)",
    ]
    assert why(run_id, "review/2/critic")[1:] == [  # in the same round as the writer's: it hears round 1
        "    1 user      the seed turn, from the loop's input",
        "    2 user      participant writer's turn in round 1 (review/1/writer)",
    ]
    assert why(run_id, "review/4/writer")[1:] == [
        "    1 system    the system prompt of agent scripted",
        "    2 assistant participant writer's turn in round 3 (review/3/writer)",
        "    3 user      the person's answer to the question at review/3/editor",
        "  left out: turns 1–4 dropped by truncate_turns (max_turns 2)",
    ]
    [call] = why_json(run_id, "review/3/writer")
    assert [message["origin"] for message in call["messages"]] == [
        {"system": "scripted"}, {"turn": "review/2/writer"}, {"turn": "review/2/critic"},
    ]  # fmt: skip
    assert call["left_out"] == [
        {
            "rule": "truncate_turns",
            "turns": [1, 2],
            "max_turns": 2,
            "why": "turns 1–2 dropped by truncate_turns (max_turns 2)",
        }
    ]


WRITER = """\
version: "0.1"
name: writer
agents:
  pen: {model: scripted, replies: [d1, d2]}
steps:
  - {kind: step, name: write, uses: agents.pen}
"""

SOURCES = """\
version: "0.1"
name: chat
agents:
  bot: {model: scripted, system_prompt: "You plan trips.", replies: [t1, t2]}
imports:
  writer: writer.yaml
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 2
      ai_turn_source: named_steps
      named_steps: [draft]
      user_turn_sources: [note]
      body:
        - {kind: step, name: draft, uses: imports.writer}
        - {kind: step, name: note, agent: {id: flujo.builtins.stringify}, input: "noted {{ steps.draft.output }}"}
        - {kind: step, name: talk, uses: agents.bot}
"""


def test_a_sub_workflow_s_reply_and_a_user_turn_source_are_named_by_their_steps_events(
    state_db: Path, tmp_path: Path
) -> None:
    (tmp_path / "writer.yaml").write_text(WRITER, encoding="utf-8")
    run_id = run(tmp_path, SOURCES, "--input", "Plan")
    assert why(run_id, "chat/2/talk")[1:] == [
        "    1 system    the system prompt of agent scripted",
        "    2 user      the seed turn, from the loop's input",
        "    3 assistant the reply of chat/1/draft (ai_turn_source: named_steps)",
        "    4 user      the output of chat/1/note, a user turn (user_turn_sources)",
        "    5 assistant the reply of chat/2/draft (ai_turn_source: named_steps)",
        "    6 user      the output of chat/2/note, a user turn (user_turn_sources)",
    ]

    # The turns' numbers are on the events of the steps that made them; no prompt event repeats their origins.
    events = stored_events(state_db, run_id)
    numbered = {f"{e.path} {e.kind}": e.payload.get("turn", e.payload.get("user_turn")) for e in events}
    assert [numbered[f"chat/{i}/{step}"] for i in (1, 2) for step in ("draft workflow.child", "note agent.reply")] == [
        2,
        3,
        4,
        5,
    ]
    assert all(
        "said" not in (why or {}) or why["said"] == [1, "s input"] for why in stored_whys(state_db, run_id).values()
    )


def test_a_turn_in_a_nested_conversation_belongs_to_the_innermost(state_db: Path, tmp_path: Path) -> None:
    answers = [arg for answer in NESTED_ANSWERS for arg in ("--answer", answer)]
    run_id = run(tmp_path, NESTED, "--input", "goal", *answers)
    # The inner conversation's turn 2 is i3, not the outer's turn 2 (the reply o1).
    assert why(run_id, "outer/2/inner/2/detail")[1:] == [
        "    1 user      the seed turn, from the loop's input",
        "    2 assistant the reply of outer/2/inner/1/detail (ai_turn_source: last)",
        "    3 user      the person's answer to the question at outer/2/inner/1/detail_answer",
    ]
    assert why(run_id, "outer/2/plan")[1:] == [
        "    1 user      the seed turn, from the loop's input",
        "    2 assistant the reply of outer/1/plan (ai_turn_source: named_steps)",
        "    3 user      the person's answer to the question at outer/1/reply",
    ]


def test_a_run_resumed_in_another_process_says_what_an_uninterrupted_one_says(state_db: Path, tmp_path: Path) -> None:
    blueprint = CHAT % "{strategy: truncate_turns, max_turns: 3}"
    straight = run(tmp_path, blueprint, *ANSWERS)
    (tmp_path / "flow.yaml").write_text(blueprint, encoding="utf-8")
    code, out, err = flujo(["run", "flow.yaml", "--json", "--input", "Plan a trip", "--answer", "a1", "--no-input"])
    assert code == exit_codes.PAUSED, err
    paused = str(json.loads(out)["run_id"])
    code, _, err = flujo(["resume", paused, "--json", "--answer", "a2", "--answer", "a3", "--answer", "a4"])
    assert code == exit_codes.OK, err
    # The turns said before the pause are numbered by the events the first process stored; the resumed
    # process's first call says its notes again; lens reads both as one conversation.
    for step in ("chat/2/talk", "chat/3/talk", "chat/4/talk"):
        assert why(paused, step) == why(straight, step), step
        assert [call["messages"] for call in why_json(paused, step)] == [
            call["messages"] for call in why_json(straight, step)
        ]
    assert "reply of chat/2/talk" in "\n".join(why(paused, "chat/4/talk"))
