"""What a blueprint's own Python code does to the command around it, through the real ``flujo`` process: a
``print`` in a ``python:`` tool or agent (or in a module the blueprint imports) goes to stderr, so stdout
holds only the results (``--json``'s document parses; the output is the output); a ``sys.exit()`` in one is
that call's error, as any exception is, never the end of flujo with the function's exit code."""

from __future__ import annotations

import json
from pathlib import Path

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo_process

# A module name of its own: a blueprint's folder joins sys.path, and a module is imported once per process.
MODULE = '''\
import sys

print("imported: a line the module prints")


def noisy_tool(x: int) -> int:
    """Prints, then returns x."""
    print("a line the tool prints")
    return x


def leaving_tool(x: int) -> int:
    """Calls sys.exit."""
    sys.exit(3)


def noisy_agent(text):
    print("a line the agent prints")
    return "the agent's reply"


def leaving_agent(text):
    sys.exit(3)
'''


def _blueprint(folder: Path, tool: str, agent: str) -> Path:
    (folder / "user_code_output.py").write_text(MODULE, encoding="utf-8")
    flow = folder / "flow.yaml"
    flow.write_text(
        f"""\
version: "0.1"
tools:
  f: {{python: "user_code_output:{tool}"}}
agents:
  caller:
    model: scripted
    tools: [f]
    replies:
      - {{tool: f, arguments: {{x: 1}}}}
      - "the model's answer"
  script: {{python: "user_code_output:{agent}"}}
steps:
  - {{kind: step, name: ask, uses: agents.caller}}
  - {{kind: step, name: last, uses: agents.script}}
""",
        encoding="utf-8",
    )
    return flow


def test_what_a_tool_or_agent_prints_goes_to_stderr_and_json_on_stdout_parses(tmp_path: Path) -> None:
    flow = _blueprint(tmp_path, "noisy_tool", "noisy_agent")
    state = str(tmp_path / "runs.db")

    done = flujo_process(["run", str(flow), "--input", "hi", "--json", "--state", state], cwd=tmp_path)
    assert done.returncode == exit_codes.OK, done.stderr
    result = json.loads(done.stdout)  # the whole of stdout is the one document
    assert (result["status"], result["output"]) == ("completed", "the agent's reply")
    for line in ("imported: a line the module prints", "a line the tool prints", "a line the agent prints"):
        assert line in done.stderr

    done = flujo_process(["run", str(flow), "--input", "hi", "--state", state], cwd=tmp_path)
    assert done.returncode == exit_codes.OK, done.stderr
    assert done.stdout == "the agent's reply\n"
    assert "a line the tool prints" in done.stderr and "a line the agent prints" in done.stderr


def test_sys_exit_in_a_tool_is_the_call_s_error_and_the_run_goes_on(tmp_path: Path) -> None:
    flow = _blueprint(tmp_path, "leaving_tool", "noisy_agent")
    state = str(tmp_path / "runs.db")

    done = flujo_process(["run", str(flow), "--input", "hi", "--json", "--state", state], cwd=tmp_path)
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    shown = flujo_process(["lens", "show", json.loads(done.stdout)["run_id"], "--state", state], cwd=tmp_path)
    assert "Error: SystemExit: 3" in shown.stdout


def test_sys_exit_in_a_python_agent_fails_its_step_in_one_line(tmp_path: Path) -> None:
    flow = _blueprint(tmp_path, "noisy_tool", "leaving_agent")
    state = str(tmp_path / "runs.db")

    done = flujo_process(["run", str(flow), "--input", "hi", "--json", "--state", state], cwd=tmp_path)
    assert done.returncode == exit_codes.FAILED, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["failed_step"]) == ("failed", "last")
    assert result["error"] == "agents.script (user_code_output:leaving_agent) raised SystemExit: 3"
    assert "Traceback" not in done.stderr


def test_flujo_test_json_parses_when_the_case_s_code_prints(tmp_path: Path) -> None:
    flow = _blueprint(tmp_path, "noisy_tool", "noisy_agent")
    state = str(tmp_path / "runs.db")
    done = flujo_process(["run", str(flow), "--input", "hi", "--json", "--state", state], cwd=tmp_path)
    assert done.returncode == exit_codes.OK, done.stderr
    case = tmp_path / "flow.case.yaml"
    run_id = json.loads(done.stdout)["run_id"]
    exported = flujo_process(["lens", "export", run_id, "--case", str(case), "--state", state], cwd=tmp_path)
    assert exported.returncode == exit_codes.OK, exported.stderr

    tested = flujo_process(["test", str(case), "--json", "--state", state], cwd=tmp_path)  # a fresh process
    assert tested.returncode == exit_codes.OK, tested.stderr
    assert json.loads(tested.stdout)["summary"]["passed"] == 1  # the whole of stdout is the one document
    assert "imported: a line the module prints" in tested.stderr  # printed as the blueprint loaded


def test_validate_explain_and_submit_json_parse_when_an_imported_module_prints(tmp_path: Path) -> None:
    for command in (["validate"], ["explain"], ["submit", "--input", "hi", "--state", str(tmp_path / "q.db")]):
        folder = tmp_path / command[0]  # a blueprint of its own: nothing of it validated and kept before
        folder.mkdir()
        flow = _blueprint(folder, "noisy_tool", "noisy_agent")
        done = flujo_process([command[0], str(flow), *command[1:], "--json"], cwd=tmp_path)  # a fresh process
        assert done.returncode == exit_codes.OK, done.stderr
        json.loads(done.stdout)  # the whole of stdout is the one document
        assert "imported: a line the module prints" in done.stderr, command
