"""Durable runs through the real ``flujo`` command (issue 5): resume after SIGKILL at several points of a
conversational loop gives what an uninterrupted run gives, a run another live process executes cannot be
resumed twice, a changed blueprint is refused unless ``--force``, Ctrl-C marks the run interrupted, and
eight processes write to one database at once. State loss is the worst bug flujo can have."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from tests.support.cli_helpers import ROOT, flujo_process, read_terminal_until, wait_until

pytestmark = pytest.mark.slow

BLUEPRINT = """\
version: "0.1"
name: durable_chat
agents:
  clarifier: {python: "tests.support.durability_agents:clarify"}
steps:
  - kind: hitl
    name: get_goal
    message: "What do you want to achieve?"
  - kind: loop
    name: chat
    loop:
      conversation: true
      ai_turn_source: named_steps
      named_steps: [clarify]
      max_loops: 8
      body:
        - {kind: step, name: clarify, uses: agents.clarifier}
        - {kind: hitl, name: answer, message: "{{ steps.clarify.output.question }}"}
      output: {text: conversation_history}
"""
ANSWERS = ["Plan the team offsite", "Twelve people", "In June", "Under 5,000 euros", "Near Lisbon"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "chat.yaml").write_text(BLUEPRINT, encoding="utf-8")
    return tmp_path


def _env(workdir: Path, **extra: str) -> dict[str, str]:
    return {"FLUJO_STATE_URI": str(workdir / "flujo.db"), **extra}


def _flujo(workdir: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    with contextlib.chdir(workdir):
        return flujo_process(list(args), env={**_env(workdir), **(env or {})})


def _rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql, params).fetchall()


def _only_run(db: Path) -> str:
    [(run_id,)] = _rows(db, "SELECT run_id FROM runs")
    return str(run_id)


# A completed step's status as the SQLite store writes it (one character: core.model.pack_tables.STEP_STATUSES).
COMPLETED = "status = char(1)"


def _answered(db: Path, run_id: str) -> int:
    sql = f"SELECT COUNT(*) FROM steps WHERE run_id = ? AND kind = 'hitl' AND {COMPLETED}"
    return int(_rows(db, sql, (run_id,))[0][0])


def _answer_args(answers: list[str]) -> list[str]:
    return [arg for answer in answers for arg in ("--answer", answer)]


def _sent_prompts(db: Path, run_id: str) -> dict[str, Any]:
    """What each agent step was sent, by step path (the last call: a step killed mid-call is sent again).
    Read through the store: payloads may be packed and hold references to shared texts."""

    async def read() -> dict[str, Any]:
        async with await open_store(str(db)) as store:
            return {e.path: e.payload["messages"] for e in await store.events(run_id) if e.kind == "agent.prompt"}

    return asyncio.run(read())


def _completed_steps(db: Path, run_id: str) -> list[tuple[str, str]]:
    sql = f"SELECT path, output FROM steps WHERE run_id = ? AND {COMPLETED} ORDER BY path"
    return [(str(path), str(output)) for path, output in _rows(db, sql, (run_id,))]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("uninterrupted")
    (workdir / "chat.yaml").write_text(BLUEPRINT, encoding="utf-8")
    done = _flujo(workdir, "run", "chat.yaml", "--json", *_answer_args(ANSWERS))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    db = workdir / "flujo.db"
    return {
        "output": result["output"],
        "prompts": _sent_prompts(db, result["run_id"]),
        "steps": [path for path, _ in _completed_steps(db, result["run_id"])],
    }


@pytest.mark.parametrize("kill_at_call", [1, 2, 3, 4], ids=lambda n: f"agent_call_{n}")
def test_sigkill_mid_step_then_resume_matches_an_uninterrupted_run(
    workdir: Path, uninterrupted: dict[str, Any], kill_at_call: int
) -> None:
    db = workdir / "flujo.db"
    crash_env = {"DURABILITY_KILL_AT": f"{workdir / 'calls'}:{kill_at_call}"}
    crashed = _flujo(workdir, "run", "chat.yaml", *_answer_args(ANSWERS), env=crash_env)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    run_id = _only_run(db)
    assert _rows(db, "SELECT status FROM runs") == [("running",)]  # what a crash leaves behind

    resumed = _flujo(workdir, "resume", run_id[:6], "--json", *_answer_args(ANSWERS[_answered(db, run_id) :]))
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["status"] == "completed"
    assert result["output"] == uninterrupted["output"]  # the same history: no turn lost, none doubled
    assert _sent_prompts(db, run_id) == uninterrupted["prompts"]  # every agent was sent the same messages
    assert [path for path, _ in _completed_steps(db, run_id)] == uninterrupted["steps"]  # same iterations


def test_sigkill_while_waiting_for_an_answer_then_resume(workdir: Path, uninterrupted: dict[str, Any]) -> None:
    db = workdir / "flujo.db"
    with contextlib.chdir(workdir):
        process = subprocess.Popen(
            [sys.executable, "-m", "flujo_cli.main", "run", "chat.yaml"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), **_env(workdir)},
        )
    assert process.stdin is not None
    process.stdin.write("\n".join(ANSWERS[:2]) + "\n")  # piped answers, then the pipe stays open: it waits
    process.stdin.flush()
    wait_until(lambda: _answered_any(db) == 2, process=process)
    run_id = _only_run(db)
    time.sleep(0.2)  # it is now blocked reading the third answer
    process.kill()
    process.communicate()
    assert _rows(db, "SELECT status FROM runs") == [("running",)]

    resumed = _flujo(workdir, "resume", run_id, "--json", *_answer_args(ANSWERS[2:]))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == uninterrupted["output"]
    assert _sent_prompts(db, run_id) == uninterrupted["prompts"]


def _answered_any(db: Path) -> int:
    if not db.exists():
        return 0
    with contextlib.suppress(sqlite3.OperationalError):
        rows = _rows(db, "SELECT run_id FROM runs")
        if rows:
            return _answered(db, str(rows[0][0]))
    return 0


@contextlib.contextmanager
def _busy_run(workdir: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A ``flujo run`` process that is inside its first agent call and waits there (alive)."""
    db = workdir / "flujo.db"
    with contextlib.chdir(workdir):
        process = subprocess.Popen(
            [sys.executable, "-m", "flujo_cli.main", "run", "chat.yaml", *_answer_args(ANSWERS)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), **_env(workdir, DURABILITY_HOLD=str(workdir / "go"))},
        )
    try:
        wait_until((workdir / "go.waiting").exists, process=process)  # it is inside the agent call
        assert _answered_any(db) == 1
        yield process, _only_run(db)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def test_a_run_a_live_process_executes_cannot_be_resumed_until_that_process_dies(workdir: Path) -> None:
    db = workdir / "flujo.db"
    with _busy_run(workdir) as (process, run_id):
        refused = _flujo(workdir, "resume", run_id, *_answer_args(ANSWERS[1:]))
        assert refused.returncode == 1
        assert f"run {run_id} is being executed by another flujo process (pid {process.pid} on " in refused.stderr
        assert "Traceback" not in refused.stderr
        process.kill()  # the claim dies with its process
        process.wait()
    resumed = _flujo(workdir, "resume", run_id, "--json", *_answer_args(ANSWERS[1:]))
    assert resumed.returncode == 0, resumed.stderr
    assert _rows(db, "SELECT status FROM runs") == [("completed",)]


def test_resuming_a_completed_run_is_refused(workdir: Path) -> None:
    done = _flujo(workdir, "run", "chat.yaml", "--json", *_answer_args(ANSWERS))
    run_id = json.loads(done.stdout)["run_id"]
    again = _flujo(workdir, "resume", run_id[:5])
    assert again.returncode == 1
    assert f"run {run_id} already completed; there is nothing to resume" in again.stderr


def test_a_changed_blueprint_is_refused_unless_forced(workdir: Path, uninterrupted: dict[str, Any]) -> None:
    paused = _flujo(workdir, "run", "chat.yaml", "--no-input", "--json", *_answer_args(ANSWERS[:2]))
    assert paused.returncode == 4, paused.stderr
    run_id = json.loads(paused.stdout)["run_id"]
    blueprint = workdir / "chat.yaml"
    blueprint.write_text(BLUEPRINT.replace("max_loops: 8", "max_loops: 9"), encoding="utf-8")

    refused = _flujo(workdir, "resume", run_id, *_answer_args(ANSWERS[2:]))
    assert refused.returncode == 1
    assert f"the blueprint {blueprint} changed since run {run_id} started" in refused.stderr
    assert "--force" in refused.stderr
    assert _rows(workdir / "flujo.db", "SELECT status FROM runs") == [("paused",)]  # nothing was touched

    forced = _flujo(workdir, "resume", run_id, "--force", "--json", *_answer_args(ANSWERS[2:]))
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["output"] == uninterrupted["output"]


def test_ctrl_c_outside_a_prompt_marks_the_run_interrupted_and_names_it(workdir: Path) -> None:
    db = workdir / "flujo.db"
    with _busy_run(workdir) as (process, run_id):
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate()
        assert process.returncode == 130, stderr
    assert f"interrupted: run {run_id} is saved up to its last finished step" in stderr
    assert f"flujo resume {run_id}" in stderr
    assert _rows(db, "SELECT status FROM runs") == [("interrupted",)]
    resumed = _flujo(workdir, "resume", run_id, "--json", *_answer_args(ANSWERS[1:]))
    assert resumed.returncode == 0, resumed.stderr


def test_eight_processes_run_on_one_database_at_once(workdir: Path) -> None:
    db = workdir / "flujo.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), **_env(workdir)}
    with contextlib.chdir(workdir):
        processes = [
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "flujo_cli.main", "run", "chat.yaml", "--json"),
                    *_answer_args([f"{answer} (writer {n})" for answer in ANSWERS]),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for n in range(8)
        ]
    results = [process.communicate() for process in processes]
    failed = {n: err for n, ((_, err), p) in enumerate(zip(results, processes, strict=True)) if p.returncode != 0}
    assert not failed, "\n".join(f"writer {n} exited {processes[n].returncode}:\n{err}" for n, err in failed.items())
    run_ids = {json.loads(out)["run_id"] for out, _ in results}
    assert len(run_ids) == 8
    for out, _ in results:
        result = json.loads(out)
        writer = result["output"].split("(writer ")[1][0]
        assert all(f"(writer {writer})" in line for line in result["output"].splitlines() if line.startswith("User"))
    per_run = _rows(db, f"SELECT run_id, COUNT(*) FROM steps WHERE {COMPLETED} GROUP BY run_id")
    assert len(per_run) == 8 and len({count for _, count in per_run}) == 1  # every run has all its steps
    assert _rows(db, "SELECT COUNT(*) FROM runs WHERE status = 'completed'") == [(8,)]
    assert _rows(db, "PRAGMA integrity_check") == [("ok",)]


def test_a_paused_run_resumed_at_a_terminal_asks_the_question_there(
    workdir: Path, uninterrupted: dict[str, Any]
) -> None:
    db = workdir / "flujo.db"
    paused = _flujo(workdir, "run", "chat.yaml", "--no-input", "--json", *_answer_args(ANSWERS[:2]))
    assert paused.returncode == 4, paused.stderr
    run_id = json.loads(paused.stdout)["run_id"]
    question = json.loads(paused.stdout)["pause"]["message"]

    controller, terminal = os.openpty()
    with contextlib.chdir(workdir):
        process = subprocess.Popen(
            [sys.executable, "-m", "flujo_cli.main", "resume", run_id[:8]],
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            env={**os.environ, "PYTHONPATH": str(ROOT), "TERM": "dumb", "COLUMNS": "200", **_env(workdir)},
        )
    os.close(terminal)
    try:
        shown = read_terminal_until(controller, question)  # the question the run paused at, asked at the terminal
        for answer in ANSWERS[2:]:
            os.write(controller, (answer + "\r").encode())
        shown += read_terminal_until(controller, "completed")
        assert process.wait() == 0, shown
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    assert _rows(db, "SELECT status FROM runs") == [("completed",)]
    assert "4 finished step(s) replayed from the store" in shown  # answered before the pause: not asked again
    assert [path for path, _ in _completed_steps(db, run_id)] == uninterrupted["steps"]
    assert _sent_prompts(db, run_id) == uninterrupted["prompts"]
