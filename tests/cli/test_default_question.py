"""A ``hitl`` step without ``message``: in a conversation it asks what the assistant said last (the newest
assistant turn), outside one ``Your answer for '<step name>'?``; ``flujo validate`` notes which (a note, not
an error or a warning)."""

from __future__ import annotations

import json
from pathlib import Path

from blueprints import validate_file
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

FLOW = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: ["Who is it for?", "When?", {action: finish}]}
steps:
  - kind: hitl
    name: goal
  - kind: loop
    name: chat
    loop:
      conversation: true
      ai_turn_source: all_agents
      body:
        - {kind: hitl, name: first}
        - {kind: step, name: talk, uses: agents.bot}
        - kind: loop
          name: inner
          loop:
            max_loops: 1
            body:
              - {kind: hitl, name: deeper}
"""


def test_validate_notes_the_question_each_step_asks(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(FLOW, encoding="utf-8")
    findings = validate_file(path)
    assert [f for f in findings if f.severity != "note"] == []
    notes = [(f.position.line, f.severity, f.code, f.message) for f in findings if f.position]
    in_conversation = (
        "it asks what the assistant said last in the conversation (its newest assistant turn; "
        "\"Your answer for '{0}'?\" before it has spoken)"
    )
    assert notes == [
        (5, "note", "default-question", "step 'goal' has no message: it asks \"Your answer for 'goal'?\""),
        (13, "note", "default-question", "step 'first' has no message: " + in_conversation.format("first")),
        (20, "note", "default-question", "step 'deeper' has no message: " + in_conversation.format("deeper")),
    ]
    code, _, err = flujo(["validate", str(path)])
    assert code == exit_codes.OK and f"{path}:5:5: note: step 'goal' has no message" in err
    assert "is valid" in err


def test_the_questions_asked(state_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(FLOW, encoding="utf-8")
    answers = ["a gift", "hi", "my sister", "ok", "soon", "done"]
    code, out, err = flujo(["run", str(path), *(arg for a in answers for arg in ("--answer", a)), "--json"])
    assert code == exit_codes.OK, err
    asked = [line.split(" (answered) ")[0].removeprefix("? ") for line in err.splitlines() if line.startswith("? ")]
    assert asked == [
        "Your answer for 'goal'?",  # outside a conversation
        "Your answer for 'first'?",  # the assistant has not spoken yet
        "Who is it for?",  # in a loop inside the conversation: what the assistant said last
        "Who is it for?",
        "When?",
        "When?",
    ]
    assert json.loads(out)["status"] == "completed"


def test_a_structured_reply_is_asked_as_its_question(state_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    structured = '{action: ask, question: "Who is it for?"}, {action: ask, question: "When?"}, {action: finish}'
    path.write_text(FLOW.replace('"Who is it for?", "When?", {action: finish}', structured), encoding="utf-8")
    answers = ["a gift", "hi", "my sister", "ok", "soon", "done"]
    code, _, err = flujo(["run", str(path), *(arg for a in answers for arg in ("--answer", a)), "--json"])
    assert code == exit_codes.OK, err
    asked = [line.split(" (answered) ")[0].removeprefix("? ") for line in err.splitlines() if line.startswith("? ")]
    assert asked[2:] == ["Who is it for?", "Who is it for?", "When?", "When?"]  # not the reply's JSON
