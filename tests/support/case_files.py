"""Recorded runs kept as case files, for the tests of ``flujo lens export --case`` and ``flujo test``: a
blueprint with a conversation (a clarifying loop whose questions a person answers) and a tool-using agent,
all offline (``model: scripted``), and helpers that run, export and test through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

TOOLS = '''\
from pathlib import Path


def add(a: int, b: int) -> int:
    """Add two numbers."""
    with open(Path.cwd() / "tool_calls.txt", "a", encoding="utf-8") as calls:
        calls.write(f"add {a} {b}\\n")
    return a + b
'''

TRIP = """\
version: "0.1"
name: trip
tools:
  add: {python: "case_tools:add"}
agents:
  clarifier:
    model: scripted
    system_prompt: "Ask one question at a time; reply {action: finish} when the goal is clear."
    replies:
      - {action: ask, question: "Who is it for?"}
      - {action: ask, question: "By when?"}
      - {action: finish, summary: "A family trip in June."}
  counter:
    model: scripted
    system_prompt: "Count the travellers with the add tool."
    tools: [add]
    replies:
      - {tool: add, arguments: {a: 2, b: 2}}
      - "4 travellers, in June"
steps:
  - kind: loop
    name: clarification_loop
    loop:
      conversation: true
      max_loops: 5
      body:
        - kind: step
          name: clarify
          uses: agents.clarifier
        - kind: hitl
          name: answer
          message: "{{ steps.clarify.output.question }}"
      stop_when: agent_finished
      output:
        text: conversation_history
  - kind: step
    name: count
    uses: agents.counter
"""

TRIP_ANSWERS = ("My family", "June")


def write_trip(folder: Path, text: str = TRIP) -> Path:
    """The trip blueprint (and its tool's module) in ``folder``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case_tools.py").write_text(TOOLS, encoding="utf-8")
    blueprint = folder / "trip.yaml"
    blueprint.write_text(text, encoding="utf-8")
    return blueprint


def tool_calls() -> list[str]:
    """The calls the trip's tool made (each writes a line in the working directory: a test's own, whichever
    folder the module was first imported from in this process)."""
    calls = Path.cwd() / "tool_calls.txt"
    return calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []


def record(blueprint: Path, *args: str) -> dict[str, Any]:
    """Run ``blueprint`` with ``args``; its ``--json`` result (it must complete)."""
    code, out, err = flujo(["run", str(blueprint), "--json", "--no-input", *args])
    assert code == exit_codes.OK, err
    result: dict[str, Any] = json.loads(out)
    return result


def record_trip(blueprint: Path, *args: str, input: str = "Plan a trip") -> str:
    """A completed run of the trip blueprint with ``input`` (its questions answered, ``args`` besides); its id."""
    answers = [part for answer in TRIP_ANSWERS for part in ("--answer", answer)]
    return str(record(blueprint, "--input", input, *answers, *args)["run_id"])


def export(run_id: str, case: Path) -> None:
    code, _, err = flujo(["lens", "export", run_id, "--case", str(case)])
    assert code == exit_codes.OK, err


def flujo_test(*args: str) -> tuple[int, str, str]:
    return flujo(["test", *args])


def flujo_test_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = flujo(["test", "--json", *args])
    assert out.strip(), err
    document: dict[str, Any] = json.loads(out)
    return code, document


def with_expectations(case: Path, block: str) -> None:
    """Put the ``expect:`` block ``block`` (YAML, the key and its lines) into the case file ``case``."""
    text = case.read_text(encoding="utf-8")
    case.write_text(text.replace("\nrecording:\n", f"\n{block.rstrip()}\nrecording:\n", 1), encoding="utf-8")
