"""Answers typed at a real terminal (a pseudo-terminal) are edited as at a shell prompt, never stored with
escape codes: Left moves the cursor, Up recalls an earlier answer of the run (a resumed run's too), Ctrl-A
goes to the start of the line; an empty answer is asked again with a hint unless the schema accepts it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.store import open_store
from flujo_cli.human import EMPTY_ANSWER_HINT
from tests.support.cli_helpers import ROOT, flujo_process, read_terminal_until

LEFT, UP, CTRL_A, ENTER = "\x1b[D", "\x1b[A", "\x01", "\r"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"  # what a terminal sends around a paste
ASK_FOR_PASTE_MARKS = "\x1b[?2004h"  # what asks the terminal to send them

BLUEPRINT = """\
version: "0.1"
name: two_questions
steps:
  - kind: hitl
    name: first
    message: "First answer?"
  - kind: hitl
    name: second
    message: "Second answer, after {{ previous_step }}?"
"""

OPTIONAL = """\
version: "0.1"
name: optional_note
steps:
  - kind: hitl
    name: note
    message: "Any note?"
    input_schema: {type: string}
"""


def _terminal(folder: Path, args: list[str], exchange: list[tuple[str, str]], end: str) -> tuple[int, str]:
    """Run flujo on a pseudo-terminal; for each (marker, keys) wait for the marker to appear after the one
    before (the prompt is up: its text is drawn by readline once the terminal is in its mode), then type the
    keys; then wait for ``end``."""
    controller, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm", "COLUMNS": "200"}
    env["FLUJO_STATE_URI"] = str(folder / "flujo.db")
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", *args],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=folder, env=env,
    )  # fmt: skip
    os.close(terminal)
    shown, unread = "", ""  # unread: what the terminal showed after the last marker waited for
    try:
        for marker, keys in [*exchange, (end, "")]:
            unread = read_terminal_until(controller, marker, seen=unread)
            shown += unread
            unread = unread.split(marker, 1)[1]
            os.write(controller, keys.encode())
        return process.wait(timeout=30), shown
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()  # reaped here, not warned about in a later test
        os.close(controller)


def _stored_answers(folder: Path) -> list[tuple[str, object]]:
    async def read() -> list[tuple[str, object]]:
        store = await open_store(str(folder / "flujo.db"))
        try:
            [run] = await store.list_runs()
            return [(step.name, step.output) for step in await store.steps(run.run_id) if step.kind == "hitl"]
        finally:
            await store.close()

    return asyncio.run(read())


@pytest.mark.slow
def test_left_arrow_edits_the_answer_and_up_recalls_an_earlier_one(tmp_path: Path) -> None:
    (tmp_path / "ask.yaml").write_text(BLUEPRINT, encoding="utf-8")
    exchange = [
        ("First answer?", "abd" + LEFT + "c" + ENTER),  # typed abd, moved left, inserted c
        ("after abcd?", ENTER),  # empty: asked again, with a hint
        (EMPTY_ANSWER_HINT, ""),
        ("after abcd?", UP + CTRL_A + "x" + ENTER),  # the first answer recalled, x put before it
    ]
    code, shown = _terminal(tmp_path, ["run", "ask.yaml"], exchange, "completed")
    assert code == 0, shown
    assert "xabcd" in shown  # the run's output
    assert "\x1b[D" not in "".join(str(answer) for _, answer in _stored_answers(tmp_path))
    assert _stored_answers(tmp_path) == [("first", "abcd"), ("second", "xabcd")]


@pytest.mark.slow
def test_a_text_pasted_with_several_lines_is_one_answer(tmp_path: Path) -> None:
    """The terminal is asked to mark pastes (bracketed paste, which Python turns off), and sends a paste
    between the marks: its lines stay in the one answer, never answering the questions after it."""
    (tmp_path / "ask.yaml").write_text(BLUEPRINT, encoding="utf-8")
    pasted = PASTE_START + "Plan a trip\nwith my family" + PASTE_END
    exchange = [("First answer?", pasted + ENTER), ("with my family?", "June" + ENTER)]
    code, shown = _terminal(tmp_path, ["run", "ask.yaml"], exchange, "completed")
    assert code == 0, shown
    assert ASK_FOR_PASTE_MARKS in shown.split("First answer?")[0]  # asked before the first prompt
    assert _stored_answers(tmp_path) == [("first", "Plan a trip\nwith my family"), ("second", "June")]


@pytest.mark.slow
def test_a_resumed_run_recalls_the_answers_given_before_it_paused(tmp_path: Path) -> None:
    (tmp_path / "ask.yaml").write_text(BLUEPRINT, encoding="utf-8")
    paused = flujo_process(
        ["run", str(tmp_path / "ask.yaml"), "--no-input", "--json", "--answer", "plan a trip"],
        env={"FLUJO_STATE_URI": str(tmp_path / "flujo.db")},
    )
    assert paused.returncode == 4, paused.stderr
    run_id = json.loads(paused.stdout)["run_id"]
    code, shown = _terminal(tmp_path, ["resume", run_id], [("after plan a trip?", UP + ENTER)], "completed")
    assert code == 0, shown
    assert _stored_answers(tmp_path) == [("first", "plan a trip"), ("second", "plan a trip")]


@pytest.mark.slow
def test_an_empty_answer_is_taken_when_the_schema_accepts_it(tmp_path: Path) -> None:
    (tmp_path / "note.yaml").write_text(OPTIONAL, encoding="utf-8")
    code, shown = _terminal(tmp_path, ["run", "note.yaml"], [("Any note?", ENTER)], "completed")
    assert code == 0, shown
    assert EMPTY_ANSWER_HINT not in shown
    assert _stored_answers(tmp_path) == [("note", "")]


def test_a_piped_empty_line_stays_an_answer(tmp_path: Path) -> None:
    (tmp_path / "ask.yaml").write_text(BLUEPRINT, encoding="utf-8")
    done = flujo_process(
        ["run", str(tmp_path / "ask.yaml"), "--json"],
        input="\nsecond\n",
        env={"FLUJO_STATE_URI": str(tmp_path / "flujo.db")},
    )
    assert done.returncode == 0, done.stderr
    assert _stored_answers(tmp_path) == [("first", ""), ("second", "second")]


@pytest.mark.slow
def test_with_stdout_redirected_the_line_is_still_edited_and_stdout_holds_only_the_result(tmp_path: Path) -> None:
    (tmp_path / "ask.yaml").write_text(BLUEPRINT, encoding="utf-8")
    controller, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm", "FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    with (tmp_path / "out.json").open("w", encoding="utf-8") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "flujo_cli.main", "run", "ask.yaml", "--json"],
            stdin=terminal, stdout=out, stderr=terminal, cwd=tmp_path, env=env,
        )  # fmt: skip
    os.close(terminal)
    try:
        read_terminal_until(controller, "First answer?")
        os.write(controller, ("abd" + LEFT + "c" + ENTER).encode())
        read_terminal_until(controller, "after abcd?")
        os.write(controller, (UP + ENTER).encode())
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()  # reaped here, not warned about in a later test
        os.close(controller)
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["output"] == "abcd"
