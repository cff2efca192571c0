"""Script agents speak in conversations (docs/conversation.md, "Who speaks"): a ``command:`` or ``python:``
agent is an agent like a model, so under ``ai_turn_source: last`` and ``all_agents`` its replies are
assistant turns; the builtins (``passthrough``, ``stringify``) only move their input along and make none.
Run through ``flujo run`` and checked in what it prints; ``flujo validate`` warns where no step can answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from blueprints import validate_file
from tests.support.cli_helpers import flujo

# Reads what it is sent (the history block, then the message) and answers with the next count.
COUNTER = """\
import re, sys
counts = re.findall(r"n=(\\d+)", sys.stdin.read())
print(f"n={int(counts[-1]) + 1}")
"""


def _counting(tmp_path: Path, *, source: str, last: str = "") -> Path:
    script = tmp_path / "counter.py"
    script.write_text(COUNTER, encoding="utf-8")
    path = tmp_path / "count.yaml"
    command = json.dumps([sys.executable, str(script)])
    path.write_text(
        f"""\
version: "0.1"
agents:
  counter: {{command: {command}}}
steps:
  - kind: loop
    name: count
    loop:
      conversation: true
      ai_turn_source: {source}
      max_loops: 3
      body:
        - {{kind: step, name: next, uses: agents.counter}}{last}
      output: {{text: conversation_history}}
""",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("source", ["last", "all_agents"])
def test_a_command_agent_counting_in_a_conversation_makes_assistant_turns(
    state_db: Path, tmp_path: Path, source: str
) -> None:
    path = _counting(tmp_path, source=source)
    code, out, err = flujo(["run", str(path), "--input", "n=0"])
    assert code == 0, err
    assert out.strip() == "User: n=0\nAssistant: n=1\nAssistant: n=2\nAssistant: n=3"
    assert "silent-conversation" not in [f.code for f in validate_file(path)]


def test_a_builtin_after_the_script_makes_no_turn_and_validate_says_so(state_db: Path, tmp_path: Path) -> None:
    relay = "\n        - {kind: step, name: relay, agent: {id: flujo.builtins.passthrough}}"
    path = _counting(tmp_path, source="last", last=relay)
    code, out, err = flujo(["run", str(path), "--input", "n=0"])
    assert code == 0, err
    assert out.strip() == "User: n=0"  # the last step is the passthrough: under `last`, nothing answers
    [finding] = [f for f in validate_file(path) if f.code == "silent-conversation"]
    assert "its last step 'relay' is not an agent" in finding.message
    # With all_agents the script speaks again, whatever comes after it.
    spoken = _counting(tmp_path, source="all_agents", last=relay)
    code, out, err = flujo(["run", str(spoken), "--input", "n=0"])
    assert code == 0, err
    assert out.strip() == "User: n=0\nAssistant: n=1\nAssistant: n=2\nAssistant: n=3"
    assert "silent-conversation" not in [f.code for f in validate_file(spoken)]


def test_a_python_agent_speaks_too(state_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "py.yaml"
    path.write_text(
        """\
version: "0.1"
agents:
  shout: {python: "tests.cli.test_script_agents_speak:shout"}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 1
      body:
        - {kind: step, name: answer, uses: agents.shout}
      output: {text: conversation_history}
""",
        encoding="utf-8",
    )
    code, out, err = flujo(["run", str(path), "--input", "hello"])
    assert code == 0, err
    assert out.strip() == "User: hello\nAssistant: HELLO"


def shout(data: str) -> str:
    """A python: agent: answers the message (after the history block, when there is one) in capitals."""
    return data.rsplit("\n\n", 1)[-1].upper()


def test_explain_names_the_script_as_the_assistant(tmp_path: Path) -> None:
    path = _counting(tmp_path, source="last")
    code, out, err = flujo(["explain", str(path)])
    assert code == 0, err
    assert "the reply of next (the last agent step) is an assistant turn" in " ".join(out.split())
