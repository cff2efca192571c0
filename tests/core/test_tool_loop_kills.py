"""A tool loop killed with SIGKILL at any point resumes without making any finished model turn or tool call
again: only the one in flight is repeated (docs/durability.md, "Tool calls").

The loop runs in a process of its own (tests/support/tool_loop_driver.py): two tool calls, one per model
turn, the second asking the person first, then the answer; the tool appends a line to a file (a visible side
effect) naming which attempt of its call it is. The process is killed at each point of the loop, in turn,
then a new process resumes the run. What the resumed run must give: the answer of an uninterrupted run, the
same messages sent to the model at each turn, the same journal, each model turn made once (the one in
flight twice), each side effect once, except a call killed after its side effect and before its commit,
which runs again as attempt 2 (at least once: the tool is told the attempt, to make itself idempotent);
a call killed before its side effect runs once, as attempt 2. The person is not asked again once the
answer is committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from tests.support.cli_helpers import ROOT, wait_until
from tests.support.tool_loop_driver import ANSWER, POINTS, STOP

pytestmark = pytest.mark.slow

RUN_ID = "7001100b00000001"
TURNS = ["turn 1", "turn 2", "turn 3"]
EFFECTS = ["first attempt 1", "second attempt 1"]
ASKED = ["approve:append_checked"]


def _driver(command: str, folder: Path, *, stop: str | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if stop is not None:
        env[STOP] = stop
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.tool_loop_driver", command, RUN_ID, str(folder)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=folder,
    )


def _ended(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate()
    assert process.returncode == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _journal(folder: Path) -> dict[str, Any]:
    """What the run's store holds: the completed paths and the messages each model call was sent."""

    async def read() -> dict[str, Any]:
        async with await open_store(str(folder / "flujo.db"), mode="read") as store:
            steps = await store.steps(RUN_ID)
            events = await store.events(RUN_ID)
        return {
            "completed": sorted(step.path for step in steps if step.status == "completed"),
            "prompts": {e.path: e.payload["messages"] for e in events if e.kind == "agent.prompt"},
            "tool results": {step.path: step.output for step in steps if step.kind == "tool"},
        }

    return asyncio.run(read())


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("uninterrupted")
    result = _ended(_driver("run", folder))
    assert result == {"status": "completed", "output": ANSWER, "error": None, "asked": ASKED}
    assert _lines(folder / "turns") == TURNS
    assert _lines(folder / "effects") == EFFECTS
    journal = _journal(folder)
    assert journal["completed"] == [
        "answer",
        "answer/model/1",
        "answer/model/2",
        "answer/model/3",
        "answer/tool/1",
        "answer/tool/2",
        "answer/tool/2/approve",
    ]
    assert list(journal["prompts"]) == ["answer/model/1", "answer/model/2", "answer/model/3"]
    return journal


def _expected_turns(point: str) -> list[str]:
    """Each turn once; the turn in flight when the process was killed twice (made again on resume)."""
    parts = point.split("/")
    if parts[0] == "model" and len(parts) == 2:
        at = int(parts[1])
        return [*TURNS[:at], *TURNS[at - 1 :]]
    return TURNS


def _expected_effects(point: str) -> list[str]:
    """Each side effect once, as attempt 1; a call killed before its side effect makes it once, as attempt 2;
    one killed after it (before its commit) makes it again, as attempt 2."""
    parts = point.split("/")
    if parts[0] != "tool" or parts[2] not in ("before", "after"):
        return EFFECTS
    index = int(parts[1]) - 1
    word = EFFECTS[index].split()[0]
    again = [f"{word} attempt 2"]
    done = [EFFECTS[index]] if parts[2] == "after" else []
    return [*EFFECTS[:index], *done, *again, *EFFECTS[index + 1 :]]


@pytest.mark.parametrize("point", POINTS)
def test_killed_at_each_point_of_the_loop_the_run_resumes_repeating_only_what_was_in_flight(
    tmp_path: Path, uninterrupted: dict[str, Any], point: str
) -> None:
    process = _driver("run", tmp_path, stop=point)
    try:
        wait_until((tmp_path / "stopped").exists, process=process)
        assert (tmp_path / "stopped").read_text(encoding="utf-8") == point
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL
    with contextlib.closing(sqlite3.connect(tmp_path / "flujo.db")) as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("running",)]  # what a crash leaves

    resumed = _ended(_driver("resume", tmp_path))
    assert resumed["status"] == "completed", resumed["error"]
    assert resumed["output"] == ANSWER
    answered_before = POINTS.index(point) >= POINTS.index("tool/2/approve/committed")
    assert resumed["asked"] == ([] if answered_before else ASKED)  # a committed answer is not asked again
    assert _lines(tmp_path / "turns") == _expected_turns(point)
    assert _lines(tmp_path / "effects") == _expected_effects(point)
    assert _journal(tmp_path) == uninterrupted  # the same journal, the same messages sent at every turn


def test_the_expected_counts_name_each_repeat() -> None:
    """The expectations themselves, spelled out for the points where something is repeated."""
    assert _expected_turns("model/2") == ["turn 1", "turn 2", "turn 2", "turn 3"]
    assert _expected_turns("model/2/committed") == TURNS
    assert _expected_effects("tool/1/after") == ["first attempt 1", "first attempt 2", "second attempt 1"]
    assert _expected_effects("tool/2/before") == ["first attempt 1", "second attempt 2"]
    assert _expected_effects("tool/2/committed") == EFFECTS
