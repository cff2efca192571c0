"""``python:`` participants for the ensemble tests: deterministic, logging each call, able to die on cue
(``crasher``) or to wait until the ensemble's timeout cancels them (``waits_forever``).

Each call appends ``<participant>:<turn>`` to the file ``ENSEMBLE_LOG`` names (when set).
``ENSEMBLE_KILL_AT=<n>`` makes ``crasher``'s call in round ``n`` kill its own process with SIGKILL, once
(a marker file beside the log remembers it), as a crash would: mid-round, before its turn commits.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any


def _log(name: str, turn: int) -> None:
    log = os.environ.get("ENSEMBLE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"{name}:{turn}\n")


def counter(envelope: dict[str, Any]) -> dict[str, Any]:
    """Counts: its reply depends only on what it was sent, so a resumed run reproduces it."""
    _log("counter", envelope["turn"])
    return {"count": len(envelope["history"]), "turn": envelope["turn"]}


def crasher(envelope: dict[str, Any]) -> str:
    turn = envelope["turn"]
    _log("crasher", turn)
    at = os.environ.get("ENSEMBLE_KILL_AT")
    log = os.environ.get("ENSEMBLE_LOG")
    if at and log and turn == int(at):
        marker = Path(log + ".killed")
        if not marker.exists():
            marker.write_text("1")
            os.kill(os.getpid(), signal.SIGKILL)
    return f"seen {envelope['context'].get('count')} at {turn}"


async def waits_forever(envelope: dict[str, Any]) -> str:
    """Waits for an event nobody sets: its call ends only when the ensemble's timeout cancels it."""
    del envelope
    await asyncio.Event().wait()
    raise AssertionError("the event is never set")
