"""Tools through the real CLI: ``flujo run`` of a blueprint whose (scripted) model calls a Python tool completes
with the model's answer, the tool having run once with converted arguments; ``flujo validate`` reports every
mistake of a blueprint's tools at its file:line:col, and ``flujo run`` refuses such a blueprint."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from blueprints import validate_file
from core import StepRecord
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.blueprint_findings import DATA
from tests.support.cli_helpers import flujo

# A module name of its own: a blueprint's folder joins sys.path, and a module is imported once per process.
TOOL_MODULE = '''\
from pathlib import Path


def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    with open(Path(__file__).with_name("calls.txt"), "a", encoding="utf-8") as calls:
        calls.write(f"{a!r}+{b!r}\\n")
    return a + b


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b
'''

BLUEPRINT = """\
version: "0.1"
tools:
  add: {python: "cli_tool_effects:add"}
  divide: {python: "cli_tool_effects:divide"}
agents:
  calculator:
    model: scripted
    tools: [add, divide]
    replies:
      - {tool: add, arguments: {a: 2, b: 3}}
      - {tool: divide, arguments: {a: 1, b: 0}}
      - "2 + 3 is 5, and 1 / 0 cannot be."
steps:
  - {kind: step, name: answer, uses: agents.calculator}
"""


def _steps(db: Path, run_id: str) -> dict[str, StepRecord]:
    async def read() -> dict[str, StepRecord]:
        async with await open_store(str(db), mode="read") as store:
            return {record.path: record for record in await store.steps(run_id)}

    return asyncio.run(read())


def test_run_calls_the_python_tool_and_prints_the_model_s_answer(tmp_path: Path, state_db: Path) -> None:
    (tmp_path / "cli_tool_effects.py").write_text(TOOL_MODULE, encoding="utf-8")
    flow = tmp_path / "calc.yaml"
    flow.write_text(BLUEPRINT, encoding="utf-8")

    code, out, err = flujo(["run", str(flow), "--input", "What is 2 + 3, and 1 / 0?", "--json"])
    assert code == exit_codes.OK, err
    result: dict[str, Any] = json.loads(out)
    assert (result["status"], result["output"]) == ("completed", "2 + 3 is 5, and 1 / 0 cannot be.")
    assert (tmp_path / "calls.txt").read_text(encoding="utf-8") == "2+3\n"  # called once, with integers
    steps = _steps(state_db, result["run_id"])
    assert [path for path in steps if "/tool/" in path] == ["answer/tool/1", "answer/tool/2"]
    assert steps["answer/tool/1"].name == "add" and steps["answer/tool/1"].output["content"] == "5"
    failed = steps["answer/tool/2"].output
    assert failed["error"] is True and failed["content"] == "Error: ZeroDivisionError: float division by zero"
    assert "Traceback" not in err

    code, out, err = flujo(["run", str(flow), "--input", "again"])
    assert code == exit_codes.OK, err
    assert out == "2 + 3 is 5, and 1 / 0 cannot be.\n"


def test_validate_reports_every_mistake_of_the_tools_at_its_place() -> None:
    path = DATA / "tools_invalid.yaml"
    code, _, err = flujo(["validate", str(path)])
    assert code == exit_codes.FAILED
    findings = validate_file(path)
    assert len([f for f in findings if f.is_error]) == 9
    for finding in findings:
        assert finding.position is not None
        assert f"{path}:{finding.position.line}:{finding.position.column}: {finding.severity}: {finding.message}" in err
    assert "Traceback" not in err

    code, _, err = flujo(["run", str(path), "--no-input"])
    assert code == exit_codes.BLUEPRINT
    assert "9 error(s); nothing ran." in err


MISSING_PROGRAM = """\
version: "0.1"
tools:
  lookup:
    command: ["no-such-program", "--id"]
    description: "Look a customer up."
agents:
  helper:
    model: scripted
    tools: [lookup]
    replies:
      - {tool: lookup, arguments: {id: "42"}}
      - "I could not look it up."
steps:
  - {kind: step, name: answer, uses: agents.helper}
"""


def test_a_command_tool_whose_program_is_missing_is_said_by_validate_and_before_the_run(
    tmp_path: Path, state_db: Path
) -> None:
    """``flujo validate`` warns at the command's first item, with the PATH it searched, and stays valid (exit
    0); ``flujo run`` shows the same warning before it starts, then runs: the call's result is the error."""
    flow = tmp_path / "flow.yaml"
    flow.write_text(MISSING_PROGRAM, encoding="utf-8")
    missing = "tool 'lookup': the program 'no-such-program' is not on PATH; a run cannot start it"
    warning = f"{flow}:4:15: warning: {missing}"
    code, out, err = flujo(["validate", str(flow)])
    assert code == exit_codes.OK, out + err
    assert warning in err and "hint: PATH searched: " in err, err
    code, out, _ = flujo(["validate", str(flow), "--json"])
    [finding] = json.loads(out)["findings"]
    assert (finding["severity"], finding["code"], finding["line"], finding["column"]) == (
        "warning",
        "program-not-found",
        4,
        15,
    )

    code, out, err = flujo(["run", str(flow), "--input", "who is 42?"])
    assert code == exit_codes.OK, err
    assert warning in err and "hint: PATH searched: " in err
    called = '↳ lookup({"id": "42"}) → Error: tools.lookup: cannot start no-such-program --id'
    assert err.index(warning) < err.index(called)  # said before the run, not only at the call
    assert out == "I could not look it up.\n"


NO_CALL_TURN = """\
version: "0.1"
tools:
  add: {python: "cli_tool_effects:add"}
agents:
  helper:
    model: scripted
    tools: [add]
    replies:
      - {tool_calls: [{name: add, arguments: {a: 2, b: 3}}], text: "Adding."}
      - {tool_calls: [], text: "It is 5."}
steps:
  - {kind: step, name: answer, uses: agents.helper}
"""


def test_a_scripted_turn_that_asks_for_no_call_answers_with_its_text(tmp_path: Path, state_db: Path) -> None:
    """``{tool_calls: [], text: ...}`` is a turn written as a model's, asking for no call: its text is the
    answer (as a model's message with an empty ``tool_calls`` list), not the mapping as JSON."""
    (tmp_path / "cli_tool_effects.py").write_text(TOOL_MODULE, encoding="utf-8")
    flow = tmp_path / "flow.yaml"
    flow.write_text(NO_CALL_TURN, encoding="utf-8")
    code, out, err = flujo(["run", str(flow), "--input", "What is 2 + 3?", "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == "It is 5."
    code, out, err = flujo(["run", str(flow), "--input", "What is 2 + 3?"])
    assert code == exit_codes.OK, err
    assert out == "It is 5.\n" and "answer › It is 5." in err and "tool_calls" not in out + err
