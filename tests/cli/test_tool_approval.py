"""Approving a tool call is an ordinary question, through the real CLI: at a terminal (a pseudo-terminal),
with ``--answer``, and with ``--no-input`` (the run pauses, exit 4, and ``flujo resume`` continues without
calling anything twice). A denial goes back to the model; the tool never runs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo_process, read_terminal_until

TOOLS = '''\
from pathlib import Path


def lookup(id: str) -> str:
    """Look up a customer by id."""
    with open(Path(__file__).with_name("calls.txt"), "a", encoding="utf-8") as calls:
        calls.write(id + "\\n")
    return "Ada Lovelace"
'''

BLUEPRINT = """\
version: "0.1"
tools:
  lookup: {python: "approval_tools:lookup", approve: ask}
agents:
  helper:
    model: scripted
    tools: [lookup]
    replies:
      - {tool: lookup, arguments: {id: "42"}}
      - "Customer 42 is Ada Lovelace."
steps:
  - {kind: step, name: answer, uses: agents.helper}
"""

QUESTION = 'Allow helper to call lookup({"id": "42"})? [y/N]'


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "approval_tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.yaml").write_text(BLUEPRINT, encoding="utf-8")
    return tmp_path


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"FLUJO_STATE_URI": str(folder / "flujo.db")}
    return flujo_process([*args], env=env, cwd=folder)


def _calls(folder: Path) -> list[str]:
    calls = folder / "calls.txt"
    return calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []


def test_no_input_pauses_at_the_approval_and_resume_calls_the_tool_once(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    paused = _run(folder, "run", "flow.yaml", "--input", "who is 42?", "--no-input", "--json")
    assert paused.returncode == exit_codes.PAUSED, paused.stderr
    result = json.loads(paused.stdout)
    assert result["status"] == "paused"
    assert result["pause"]["step"] == "approve:lookup" and result["pause"]["message"] == QUESTION
    assert _calls(folder) == []
    resumed = _run(folder, "resume", result["run_id"], "--answer", "y", "--json")
    assert resumed.returncode == exit_codes.OK, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == "Customer 42 is Ada Lovelace."
    assert _calls(folder) == ["42"]


def test_a_denial_given_with_answer_goes_back_to_the_model_and_the_tool_never_runs(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    done = _run(folder, "run", "flow.yaml", "--input", "who is 42?", "--answer", "n", "--json")
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    assert _calls(folder) == []


def test_the_person_approves_at_a_terminal(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    controller, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm", "COLUMNS": "200"}
    env["FLUJO_STATE_URI"] = str(folder / "flujo.db")
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", "flow.yaml", "--input", "who is 42?"],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=folder, env=env,
    )  # fmt: skip
    os.close(terminal)
    try:
        shown = read_terminal_until(controller, "[y/N]")
        assert QUESTION in shown
        os.write(controller, b"y\r")
        shown = read_terminal_until(controller, "completed run")
        assert "Customer 42 is Ada Lovelace." in shown
        assert process.wait(timeout=60) == exit_codes.OK
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    assert _calls(folder) == ["42"]


def test_at_a_terminal_a_typo_is_asked_again_and_enter_declines(tmp_path: Path) -> None:
    """``yse`` is neither yes nor no: asked again, never taken for a no; Enter is the N of [y/N]."""
    folder = _folder(tmp_path)
    controller, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm", "COLUMNS": "200"}
    env["FLUJO_STATE_URI"] = str(folder / "flujo.db")
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", "flow.yaml", "--input", "who is 42?"],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=folder, env=env,
    )  # fmt: skip
    os.close(terminal)
    try:
        read_terminal_until(controller, "[y/N]")
        os.write(controller, b"yse\r")
        shown = read_terminal_until(controller, "[y/N]")  # the question again, once the typo is said
        assert "'yse' is neither yes nor no" in shown and "n (or Enter) to decline" in shown
        os.write(controller, b"\r")
        shown = read_terminal_until(controller, "completed run")
        assert "declined by the person" in shown
        assert process.wait(timeout=60) == exit_codes.OK
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    assert _calls(folder) == []  # declined: the tool never ran
    assert _approvals(folder) == ["n"]  # the answer that counted, not the typo


def _approvals(folder: Path) -> list[object]:
    """The answers the approval questions of the store's one run took, in order."""

    async def read() -> list[object]:
        async with await open_store(str(folder / "flujo.db"), mode="read") as store:
            [run] = await store.list_runs()
            steps = await store.steps(run.run_id)
            return [step.output for step in steps if step.name == "approve:lookup"]

    return asyncio.run(read())


def test_an_answers_file_approves_under_approve_tool_and_replay_answers_approves_again(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "answers.yaml").write_text('approve:lookup: "y"\n', encoding="utf-8")
    first = _run(folder, "run", "flow.yaml", "--input", "who is 42?", "--answers", "answers.yaml", "--json")
    assert first.returncode == exit_codes.OK, first.stderr
    assert json.loads(first.stdout)["output"] == "Customer 42 is Ada Lovelace."
    assert _calls(folder) == ["42"]
    run_id = json.loads(first.stdout)["run_id"]
    again = _run(
        folder, "run", "flow.yaml", "--input", "who is 42?", "--replay-answers", run_id, "--no-input", "--json"
    )
    assert again.returncode == exit_codes.OK, again.stderr  # the recorded approval answers, nobody is asked
    assert json.loads(again.stdout)["status"] == "completed"
    assert _calls(folder) == ["42", "42"]


TWO_STEPS = """\
version: "0.1"
tools:
  note: {python: "approval_tools:note"}
  lookup: {python: "approval_tools:lookup", approve: ask}
agents:
  helper:
    model: scripted
    tools: [note, lookup]
    replies:
      - {tool: note, arguments: {text: "one"}}
      - {tool: note, arguments: {text: "two"}}
      - "Noted twice."
      - {tool: lookup, arguments: {id: "42"}}
      - "Customer 42 is Ada Lovelace."
steps:
  - {kind: step, name: notes, uses: agents.helper}
  - {kind: step, name: answer, uses: agents.helper, input: "who is 42?"}
"""

NOTE = '''

def note(text: str) -> str:
    """Keep a note."""
    with open(Path(__file__).with_name("calls.txt"), "a", encoding="utf-8") as calls:
        calls.write("note " + text + "\\n")
    return "kept"
'''


def test_a_resume_replays_an_earlier_tool_step_s_every_turn_of_a_scripted_model(tmp_path: Path) -> None:
    # The first step took three turns of the scripted model: replayed, it skips three replies, not one (the
    # second step's turns were the first step's replies, and called its tools again: notes after a resume).
    folder = _folder(tmp_path)
    (folder / "approval_tools.py").write_text(TOOLS + NOTE, encoding="utf-8")
    (folder / "flow.yaml").write_text(TWO_STEPS, encoding="utf-8")
    paused = _run(folder, "run", "flow.yaml", "--input", "note twice", "--no-input", "--json")
    assert paused.returncode == exit_codes.PAUSED, paused.stderr
    assert _calls(folder) == ["note one", "note two"]
    resumed = _run(folder, "resume", json.loads(paused.stdout)["run_id"], "--answer", "y", "--json")
    assert resumed.returncode == exit_codes.OK, resumed.stderr
    result = json.loads(resumed.stdout)
    assert (result["status"], result["output"]) == ("completed", "Customer 42 is Ada Lovelace.")
    assert _calls(folder) == ["note one", "note two", "42"]
