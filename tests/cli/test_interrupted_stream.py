"""Ctrl-C while a model's reply streams at a terminal: the text streamed so far stays, and the message that
the run was interrupted starts on a line of its own (a pseudo-terminal, a loopback model server)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, read_terminal_until
from tests.support.fakes.openai_server import FakeLLM

BLUEPRINT = """\
version: "0.1"
agents:
  writer: {model: "openai:gpt-4o-mini", system_prompt: "Tell stories."}
steps:
  - {kind: step, name: story, uses: agents.writer}
"""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_ctrl_c_mid_stream_says_interrupted_on_a_line_of_its_own(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply("Once upon a time a dragon", hold=True)  # streamed but for its end, then held open
    (tmp_path / "story.yaml").write_text(BLUEPRINT, encoding="utf-8")
    controller, terminal = os.openpty()
    env = {**os.environ, **fake_llm.env(), "PYTHONPATH": str(ROOT), "TERM": "xterm", "COLUMNS": "200"}
    env["FLUJO_STATE_URI"] = str(tmp_path / "flujo.db")
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", "story.yaml", "--input", "a dragon"],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
    )  # fmt: skip
    os.close(terminal)
    try:
        shown = read_terminal_until(controller, "a dragon")  # the reply so far, on the screen
        fake_llm.held.wait()
        process.send_signal(signal.SIGINT)
        shown += read_terminal_until(controller, "continue it with")
        assert process.wait(timeout=60) == exit_codes.INTERRUPTED
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    lines = [ANSI.sub("", line).strip() for line in shown.replace("\r", "").split("\n")]
    assert "story › Once upon a time a dragon" in lines  # the streamed text, its line ended
    assert any(line.startswith("error: interrupted: run ") for line in lines), lines
