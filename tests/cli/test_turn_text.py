"""What a person reads of a turn (docs/conversation.md, "What a person reads of a turn"): a decision agent's
structured reply reads as its question or summary in ``output: {text: conversation_history}`` and
``flujo threads show``, or as its step's ``turn_text``; the agent is still sent its reply as it wrote it,
as ``lens trace --json`` shows. Through the real ``flujo`` command, with scripted agents and ``--answer``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

# Replies as a mapping (a scripted agent's structured reply) and as JSON text (a model's, unparsed).
DECIDER = """\
version: "0.1"
name: gifts
agents:
  decider:
    model: scripted
    replies:
      - {action: ask, question: "Who is it for?"}
      - '{"action": "ask", "message": "What do they like?"}'
      - {action: finish, summary: "A book about birds."}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 4
      body:
        - kind: step
          name: decide
          uses: agents.decider%s
        - {kind: hitl, name: answer, message: "Your answer?"}
      output: {text: conversation_history}
"""
ANSWERS = ("--input", "A gift", "--answer", "My aunt", "--answer", "Birds")
SAID = [
    '{"action": "ask", "question": "Who is it for?"}',
    '{"action": "ask", "message": "What do they like?"}',
    '{"action": "finish", "summary": "A book about birds."}',
]


def write(folder: Path, text: str, name: str = "gifts.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def run_json(*args: str) -> dict[str, Any]:
    code, out, err = flujo(["run", *args, "--json"])
    assert code == exit_codes.OK, err
    result: dict[str, Any] = json.loads(out)
    return result


def spans(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in nodes:
        yield node
        yield from spans(node.get("children", []))


def prompts(run_id: str) -> dict[str, list[dict[str, str]]]:
    """The messages each agent call of the run was sent, by step path, from ``lens trace --json``."""
    code, out, err = flujo(["lens", "trace", run_id, "--json"])
    assert code == exit_codes.OK, err
    return {
        span["path"]: event["payload"]["messages"]
        for span in spans(json.loads(out)["spans"])
        for event in span.get("events", [])
        if event["kind"] == "agent.prompt"
    }


def test_a_structured_reply_reads_as_its_question_and_is_sent_as_said(state_db: Path) -> None:
    path = write(state_db.parent.parent, DECIDER % "")
    result = run_json(str(path), *ANSWERS, "--thread", "gifts")
    assert result["output"] == (
        "User: A gift\nAssistant: Who is it for?\nUser: My aunt\nAssistant: What do they like?\n"
        "User: Birds\nAssistant: A book about birds."
    )
    # The decider is sent its own replies as it wrote them, as the assistant's messages.
    sent = prompts(result["run_id"])["chat/3/decide"]
    assert [(m["role"], m["content"]) for m in sent] == [
        ("user", "A gift"),
        ("assistant", SAID[0]),
        ("user", "My aunt"),
        ("assistant", SAID[1]),
        ("user", "Birds"),
    ]

    code, out, err = flujo(["threads", "show", "gifts"])
    assert code == exit_codes.OK, err
    assert out.splitlines()[3:] == [
        "  User: A gift",
        "  Assistant: Who is it for?",
        "  User: My aunt",
        "  Assistant: What do they like?",
        "  User: Birds",
        "  Assistant: A book about birds.",
    ]
    code, out, _ = flujo(["threads", "show", "gifts", "--json"])
    turns = json.loads(out)["turns"]
    assert [(t["content"], t["text"]) for t in turns if t["role"] == "assistant"] == [
        (SAID[0], "Who is it for?"),
        (SAID[1], "What do they like?"),
        (SAID[2], "A book about birds."),
    ]

    # The thread's next run sends the earlier replies as said, too.
    again = run_json(str(path), "--input", "Another gift", "--answer", "x", "--answer", "y", "--thread", "gifts")
    sent = prompts(again["run_id"])["chat/1/decide"]
    assert [m["content"] for m in sent if m["role"] == "assistant"] == SAID


def test_turn_text_says_what_a_person_reads(state_db: Path) -> None:
    turn_text = "\n          turn_text: \"{{ output.get('question') or output.action }} [{{ output.action }}]\""
    path = write(state_db.parent.parent, DECIDER % turn_text)
    code, out, err = flujo(["validate", str(path), "--json"])
    assert code == exit_codes.OK and json.loads(out)["findings"] == [], out
    result = run_json(str(path), *ANSWERS, "--thread", "gifts")
    assert result["output"] == (
        "User: A gift\nAssistant: Who is it for? [ask]\nUser: My aunt\nAssistant: ask [ask]\n"
        "User: Birds\nAssistant: finish [finish]"
    )
    sent = prompts(result["run_id"])["chat/3/decide"]
    assert [m["content"] for m in sent if m["role"] == "assistant"] == SAID[:2]
    code, out, _ = flujo(["threads", "show", "gifts"])
    assert "  Assistant: Who is it for? [ask]" in out.splitlines()
    # A resumed run shows the same: turn_text is rendered again as the turns are replayed.
    code, out, _ = flujo(["run", str(path), "--json", "--no-input", "--input", "A gift", "--answer", "My aunt"])
    assert code == exit_codes.PAUSED
    code, out, err = flujo(["resume", json.loads(out)["run_id"], "--json", "--answer", "Birds"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == result["output"]


def test_validate_locates_turn_text_mistakes(state_db: Path) -> None:
    folder = state_db.parent.parent
    bad = write(folder, DECIDER % '\n          turn_text: "{{ outptu.question }"', "bad.yaml")
    code, out, _ = flujo(["validate", str(bad), "--json"])
    assert code == exit_codes.FAILED
    [finding] = json.loads(out)["findings"]
    assert (finding["code"], finding["line"]) == ("template-syntax", 20)
    unknown = write(folder, DECIDER % '\n          turn_text: "{{ outptu.question }}"', "unknown.yaml")
    code, out, _ = flujo(["validate", str(unknown), "--json"])
    [finding] = json.loads(out)["findings"]
    assert (finding["code"], finding["line"], finding["column"]) == ("unknown-reference", 20, 26)
    assert "did you mean 'output'" in finding["message"]
    outside = """\
version: "0.1"
agents:
  decider: {model: scripted, replies: [{question: "Who?"}]}
steps:
  - {kind: step, name: decide, uses: agents.decider, turn_text: "{{ output.question }}"}
"""
    code, out, err = flujo(["validate", str(write(folder, outside, "outside.yaml"))])
    assert code == exit_codes.OK
    assert "outside.yaml:5:54: warning: turn_text has no effect outside a loop with conversation: true" in err


def test_a_store_written_before_turn_text_reads_and_grows(state_db: Path) -> None:
    """tests/data/store/written_before_turn_text.db: a thread written (from written_before_turn_text.yaml,
    --input "A gift" --answer "My aunt" --thread gifts) by flujo before thread turns had their text. It is
    migrated on opening; its turns read as they were stored, and the thread goes on."""
    data = Path(__file__).parents[1] / "data" / "store"
    state_db.parent.mkdir(parents=True)
    shutil.copy(data / "written_before_turn_text.db", state_db)
    code, out, err = flujo(["threads", "show", "gifts", "--json"])
    assert code == exit_codes.OK, err
    old = json.loads(out)["turns"]
    assert [(t["role"], t["content"], t["text"]) for t in old] == [
        ("user", "A gift", "A gift"),
        ("assistant", SAID[0], SAID[0]),
        ("user", "My aunt", "My aunt"),
        ("assistant", SAID[2], SAID[2]),
    ]
    path = write(state_db.parent.parent, DECIDER % "")
    result = run_json(str(path), *ANSWERS, "--thread", "gifts")
    assert [m["content"] for m in prompts(result["run_id"])["chat/1/decide"]][:4] == [t["content"] for t in old]
    code, out, _ = flujo(["threads", "show", "gifts"])
    assert out.splitlines()[-2:] == ["  User: Birds", "  Assistant: A book about birds."]
