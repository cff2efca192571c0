"""``flujo create`` at a real terminal (a pseudo-terminal): the wizard asks its questions one by one, the
answers typed there write the same file as the flags (the golden file), and the blueprint it wrote runs
at the terminal, asking its questions, to completion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_helpers import ROOT, read_terminal_until
from tests.support.golden import GOLDEN


def _session(folder: Path, args: list[str], exchange: list[tuple[str, str]], end: str) -> tuple[int, str]:
    """Run flujo on a pseudo-terminal; for each (marker, answer) wait for the marker and type the answer."""
    controller, terminal = os.openpty()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TERM": "dumb",
        "COLUMNS": "200",
        "FLUJO_STATE_URI": str(folder / "f.db"),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", *args],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=folder, env=env,
    )  # fmt: skip
    os.close(terminal)
    shown = ""
    try:
        for marker, answer in exchange:
            shown += read_terminal_until(controller, marker)
            os.write(controller, (answer + "\r").encode())
        shown += read_terminal_until(controller, end)
        return process.wait(timeout=30), shown
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()  # reaped here, not warned about in a later test
        os.close(controller)


QUESTIONS = [
    ("What is the loop for", "plan a trip"),
    ("Name of the blueprint (plan_a_trip)", ""),
    ("Does a person answer the agent", ""),
    ("Should the agent remember the conversation", "y"),
    ("How should the history be kept short?", "truncate_turns"),
    ("How many recent turns", "6"),
    ("Which model? (scripted)", ""),
    ("Other agents acting in each round", "take_notes"),
    ("Whose replies are the assistant's turns?", ""),
    ("Which steps speak as the assistant", "ask"),
    ("How does the loop stop?", ""),
    ("At most how many rounds? (5)", ""),
    ("Where does the first message come from?", ""),
    ("The first question", ""),
    ("What should the loop return?", ""),
]


@pytest.mark.slow
def test_the_wizard_at_a_terminal_writes_the_golden_file_and_it_runs_there(tmp_path: Path) -> None:
    code, shown = _session(tmp_path, ["create", "--output", "named_assistant.yaml"], QUESTIONS, "explain it")
    assert code == 0, shown
    assert "✓ wrote named_assistant.yaml (valid)" in shown
    written = (tmp_path / "named_assistant.yaml").read_text(encoding="utf-8")
    assert written == (GOLDEN / "wizard" / "named_assistant.yaml").read_text(encoding="utf-8")

    answers = [
        ("What do you want to achieve?", "Plan a trip"),
        ("What matters most to you about it?", "The views"),
        ("Is there anything to avoid, or a deadline?", "No flights"),
    ]
    code, shown = _session(tmp_path, ["run", "named_assistant.yaml"], answers, "completed")
    assert code == 0, shown
    assert "Assistant: That is all I need. Thank you!" in shown


@pytest.mark.slow
def test_create_wizard_at_a_terminal_asks_the_same_questions_and_writes_the_same_file(tmp_path: Path) -> None:
    args = ["create", "--wizard", "--output", "named_assistant.yaml"]
    code, shown = _session(tmp_path, args, QUESTIONS, "explain it")
    assert code == 0, shown
    assert "flujo create: a few questions, then a blueprint you can run." in shown
    written = (tmp_path / "named_assistant.yaml").read_text(encoding="utf-8")
    assert written == (GOLDEN / "wizard" / "named_assistant.yaml").read_text(encoding="utf-8")


@pytest.mark.slow
def test_create_wizard_with_no_interactive_at_a_terminal_asks_nothing_and_exits_2(tmp_path: Path) -> None:
    code, shown = _session(tmp_path, ["create", "--wizard", "--no-interactive"], [], "hint:")
    assert code == 2, shown
    assert "--wizard and --no-interactive contradict each other" in shown
    assert "What is the loop for" not in shown and list(tmp_path.glob("*.yaml")) == []


@pytest.mark.slow
def test_ctrl_d_at_a_question_says_so_and_writes_nothing(tmp_path: Path) -> None:
    """Ctrl-D at a terminal is said as the key pressed, not as piped answers that ran out."""
    controller, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "dumb", "COLUMNS": "200"}
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "create"],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
    )  # fmt: skip
    os.close(terminal)
    try:
        read_terminal_until(controller, "What is the loop for")
        os.write(controller, b"\x04")
        shown = read_terminal_until(controller, "hint:")
        assert process.wait(timeout=30) == 2
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    assert "error: stopped with Ctrl-D: nothing was written" in shown and "stdin ended" not in shown
    assert list(tmp_path.glob("*.yaml")) == []
