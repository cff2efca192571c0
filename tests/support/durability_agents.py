"""``python:`` agents for the durability tests: deterministic, and able to die or wait on cue.

``DURABILITY_KILL_AT=<counter file>:<n>`` makes the ``n``-th call (counted across processes in the file)
kill its own process with SIGKILL, as a crash would: mid-step, before the step commits.
``DURABILITY_HOLD=<file>`` makes every call write ``<file>.waiting`` and wait until ``<file>`` exists (a run
that stays busy in an agent call), or until the process that started this one (the test) is gone.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _cue() -> None:
    spec = os.environ.get("DURABILITY_KILL_AT")
    if spec:
        path, at = spec.rsplit(":", 1)
        counter = Path(path)
        calls = int(counter.read_text() or "0") + 1 if counter.exists() else 1
        counter.write_text(str(calls))
        if calls == int(at):
            os.kill(os.getpid(), signal.SIGKILL)
    hold = os.environ.get("DURABILITY_HOLD")
    if hold:
        test = os.getppid()
        Path(hold + ".waiting").write_text(str(os.getpid()))  # tells the test the call is under way
        # No deadline: on a loaded machine the test may take its time to act; a test that died leaves no
        # process waiting forever (this one is reparented when it dies).
        while not Path(hold).exists() and os.getppid() == test:
            time.sleep(0.02)


def clarify(value: Any, context: Mapping[str, Any]) -> dict[str, str]:
    """Ask about the latest answer until four answers are in, then finish; the reply depends only on
    the conversation so far, so a resumed run must reproduce it exactly."""
    _cue()
    turns = context["conversation_history"]
    answers = sum(1 for turn in turns if turn["role"] == "user")
    latest = turns[-1]["content"] if turns else ""
    if answers >= 4:
        return {"action": "finish", "summary": f"{answers} answers, the last: {latest}"}
    return {"action": "ask", "question": f"Q{answers}: tell me more about {latest!r}?"}
