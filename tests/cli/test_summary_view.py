"""A summary never cuts the transcript, and is made only when the history crosses its bound again.

The ``summarize`` strategy sends a summary in place of the oldest turns; the conversation itself
(``context.conversation_history``, the loop's ``output``, the thread, lens) keeps every turn. A summary is
reused until the turns said since it are over the bound again, and it is journaled, so a resumed run reuses
it too (docs/conversation.md, "Keeping the history within bounds").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flujo_cli import exit_codes
from tests.core.test_conversation_runs import SEEN, compile_text, lines, prompts, resume, run, sent, step_records
from tests.support.cli_helpers import flujo

HERE = "tests.cli.test_summary_view"
SUMMARY = "Summary of the earlier conversation: "


@pytest.fixture(autouse=True)
def _clear_seen() -> None:
    SEEN.clear()


def count_turns(data: Any) -> str:
    """A deterministic summarizer: says how many lines of history it was sent (so a resumed run agrees)."""
    SEEN.setdefault("summarize", []).append(data)
    block = str(data).split("<conversation_history>\n", 1)[1].split("\n</conversation_history>", 1)[0]
    return f"{len(block.splitlines())} lines, the last {block.splitlines()[-1]!r}"


CHAT = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2, q3, q4, q5, q6, q7, q8, q9, q10]}
  summ: {python: "%s:count_turns"}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: %d
      history_management: {strategy: summarize, summarizer_agent: summ, max_turns: 4, summarize_ratio: 0.5}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
      output: {text: conversation_history}
"""
ANSWERS = ["Family", "June", *(f"a{n}" for n in range(3, 11))]


def whole(iterations: int) -> str:
    said = [(("Assistant", f"q{n}"), ("User", ANSWERS[n - 1])) for n in range(1, iterations + 1)]
    return lines(("User", "Plan a trip"), *[turn for pair in said for turn in pair])


async def test_the_output_keeps_every_turn_and_prompts_get_the_summary(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, CHAT % (HERE, 10)), "Plan a trip", ANSWERS)
    assert outcome.status == "completed", outcome.error
    assert outcome.output == whole(10)  # "Family" and "June" are still there after the summaries
    sent_to = await prompts(store, outcome.run_id)
    late = sent(sent_to["chat/10/talk"])
    assert late[0][0] == "assistant" and late[0][1].startswith(SUMMARY)
    assert ("user", "Family") not in late and sent_to["chat/10/talk"]["history"]["summary_of"] > 0


async def test_a_summary_is_made_only_when_the_history_crosses_its_bound_again(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, CHAT % (HERE, 10)), "Plan a trip", ANSWERS)
    assert outcome.status == "completed", outcome.error
    made = [path for path in await step_records(store, outcome.run_id) if path.endswith("/summarize")]
    # Two turns an iteration, max_turns 4: over the bound at iteration 3, then every second iteration (it
    # was before every call from iteration 3 on: 8 summaries).
    assert made == [f"chat/{n}/talk/summarize" for n in (3, 5, 7, 9)]
    assert len(SEEN["summarize"]) == 4
    sent_to = await prompts(store, outcome.run_id)
    # In between, the summary made before is sent again, and the turns after it.
    third, fourth = sent(sent_to["chat/3/talk"]), sent(sent_to["chat/4/talk"])
    assert fourth[0] == third[0]
    assert [content for _, content in fourth[1:]] == ["q2", "June", "q3", "a3", "q4"][: len(fourth) - 1]
    assert sent_to["chat/4/talk"]["history"]["summary_of"] == sent_to["chat/3/talk"]["history"]["summary_of"] == 3
    # The second summary condenses the first and the oldest turns said since.
    assert SEEN["summarize"][1].count(SUMMARY) == 1


async def test_a_resumed_run_reuses_the_journaled_summary(tmp_path: Path) -> None:
    text = CHAT % (HERE, 10)
    straight, store, _ = await run(compile_text(tmp_path, text), "Plan a trip", ANSWERS)
    SEEN.clear()
    # Paused at iteration 4's question: the summary made at iteration 3 was sent again at iteration 4.
    first, _, _ = await run(compile_text(tmp_path, text), "Plan a trip", ANSWERS[:3], store=store)
    assert first.status == "paused" and first.pause is not None and first.pause.path == "chat/4/answer"
    assert len(SEEN["summarize"]) == 1
    SEEN.clear()
    resumed, _ = await resume(compile_text(tmp_path, text), store, first.run_id, ANSWERS[3:])
    assert resumed.status == "completed", resumed.error
    assert len(SEEN["summarize"]) == 3  # iterations 5, 7 and 9; iteration 3's came from the journal
    assert resumed.output == straight.output == whole(10)
    assert await prompts(store, first.run_id) == await prompts(store, straight.run_id)


def test_threads_and_lens_show_the_whole_conversation_and_where_the_summary_was_used(
    tmp_path: Path, state_db: Path
) -> None:
    path = tmp_path / "chat.yaml"
    path.write_text(CHAT % (HERE, 5), encoding="utf-8")
    answers = [arg for answer in ANSWERS[:5] for arg in ("--answer", answer)]
    code, out, err = flujo(["run", str(path), "--input", "Plan a trip", *answers, "--thread", "trip", "--json"])
    assert code == exit_codes.OK, err
    result = json.loads(out)
    assert result["output"] == whole(5)
    code, shown, _ = flujo(["threads", "show", "trip"])
    assert code == exit_codes.OK and "Family" in shown and "June" in shown and SUMMARY not in shown
    code, trace, _ = flujo(["lens", "trace", result["run_id"], "--step", "chat/4", "--expand", "none"])
    assert code == exit_codes.OK
    flat = " ".join(trace.split())
    assert "the summary made earlier sent for 3 older turns" in flat
    code, trace, _ = flujo(["lens", "trace", result["run_id"], "--step", "chat/3", "--expand", "none"])
    assert "summarised into one" in " ".join(trace.split())
