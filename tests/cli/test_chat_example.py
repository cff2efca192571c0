"""The chat ``make run`` starts (blueprints/examples/chat.yaml), how it ends: when the person's reply, in any
case and without its final punctuation, has ``bye``, ``goodbye``, ``quit`` or ``exit`` as its last word, or on
Ctrl-D; its first question says so. The stop condition is the blueprint's own ``exit_expression``; here the
local model is swapped for a scripted agent (same file otherwise) so that the runs are offline and quick.
tests/cli/test_local_model.py runs it with the real model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import EXAMPLES, ROOT, flujo, read_terminal_until

CHAT = EXAMPLES / "chat.yaml"


@pytest.fixture
def chat(state_db: Path, tmp_path: Path) -> Path:
    text = CHAT.read_text(encoding="utf-8")
    assert "    model: local\n" in text
    scripted = tmp_path / "chat.yaml"
    scripted.write_text(text.replace("    model: local\n", '    model: scripted\n    replies: ["Sure."]\n'), "utf-8")
    return scripted


def _run(blueprint: Path, *answers: str) -> dict[str, object]:
    code, out, err = flujo(["run", str(blueprint), "--json", "--no-input", *(a for x in answers for a in ("-a", x))])
    assert code in (exit_codes.OK, exit_codes.PAUSED), err
    result: dict[str, object] = json.loads(out)
    return result


@pytest.mark.parametrize(
    "last",
    ["bye", "Bye!", "  BYE.  ", "Thanks, that is all. bye", "Thanks, that is all, goodbye!", "ok, quit", "exit",
     "bye bye", "I am done here... Exit?"],
)  # fmt: skip
def test_a_reply_whose_last_word_is_bye_goodbye_quit_or_exit_ends_the_chat(chat: Path, last: str) -> None:
    result = _run(chat, "Hi", "Tell me a joke", last)
    assert result["status"] == "completed", result
    assert str(result["output"]).endswith(f"User: {last}")


@pytest.mark.parametrize(
    "reply", ["how do I exit vim?", "byebye", "Goodbye is a word", "quitting is hard", "bye now", "exits", ""]
)
def test_a_reply_that_only_mentions_it_goes_on(chat: Path, reply: str) -> None:
    result = _run(chat, "Hi", reply)
    # The chat asks again (no answer left: the run pauses at that question).
    assert result["status"] == "paused", result
    pause = result["pause"]
    assert isinstance(pause, dict) and pause["step"] == "you"


def test_the_first_question_says_how_the_chat_ends() -> None:
    code, out, _ = flujo(["explain", str(CHAT), "--json"])
    assert code == exit_codes.OK
    assert "(end with bye, or Ctrl-D)" in out


@pytest.mark.slow
def test_ctrl_d_at_a_reply_ends_the_chat_at_a_terminal(chat: Path, tmp_path: Path) -> None:
    controller, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "dumb", "FLUJO_STATE_URI": str(tmp_path / "f.db")}
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", str(chat)],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
    )  # fmt: skip
    os.close(terminal)
    try:
        shown = read_terminal_until(controller, "(end with bye, or Ctrl-D)")
        os.write(controller, b"Hi\r")
        shown = read_terminal_until(controller, "Your reply", seen=shown)
        os.write(controller, b"\x04")  # Ctrl-D
        shown = read_terminal_until(controller, "paused at you", seen=shown)
        assert process.wait(timeout=30) == exit_codes.PAUSED, shown
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
