"""``flujo run FILE --events jsonl`` / ``--events-file F`` (and ``flujo resume``), through the real CLI: one JSON
object a line, ``{"path", "kind", "ts", "payload"}``, the run's stored events in the store's order as they are
committed (a sub-workflow's at its place in the run), the last ``run.finished`` with the status and output; with
``--events jsonl`` stdout holds nothing else, with ``--events-file`` stdout is as without it; ``--events`` with
``--json`` is exit 2."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core import TraceEvent
from core.policies.workflow import child_run_id
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import EXAMPLES, ROOT, flujo

CLARIFY = str(EXAMPLES / "clarify.yaml")
PARENT = str(ROOT / "docs" / "examples" / "subworkflow.yaml")
KEYS = {"path", "kind", "ts", "payload"}


def stored_events(db: Path, run_id: str) -> list[TraceEvent]:
    async def read() -> list[TraceEvent]:
        async with await open_store(str(db), mode="read") as store:
            return await store.events(run_id)

    return asyncio.run(read())


def as_lines(events: list[TraceEvent]) -> list[dict[str, Any]]:
    return [{"path": e.path, "kind": e.kind, "ts": e.ts, "payload": dict(e.payload)} for e in events]


def parsed(text: str) -> list[dict[str, Any]]:
    """Every line of ``text`` as a JSON object of the four keys (and nothing else in ``text``)."""
    assert text.endswith("\n")
    lines = [json.loads(line) for line in text.splitlines()]
    assert all(isinstance(line, dict) and set(line) == KEYS for line in lines), lines
    return lines


def test_the_events_are_stdout_in_the_stores_order_then_run_finished(state_db: Path) -> None:
    code, out, err = flujo(["run", CLARIFY, "--events", "jsonl", "-a", "Plan a trip", "-a", "My family", "-a", "June"])
    assert code == exit_codes.OK, err
    lines = parsed(out)  # stdout holds the lines and nothing else: not the run's output ("The goal is clear.")
    finished = lines[-1]
    assert finished["kind"] == "run.finished" and finished["path"] == ""
    assert finished["payload"]["status"] == "completed"
    assert finished["payload"]["output"].startswith("The goal is clear.\nGoal: Plan a trip")
    assert lines[:-1] == as_lines(stored_events(state_db, finished["payload"]["run_id"]))
    assert [line["kind"] for line in lines[:3]] == ["hitl.answer", "agent.prompt", "agent.reply"]
    assert "✓ completed" in err  # the summary stays on stderr


def test_an_events_file_gets_the_same_lines_and_stdout_stays_as_it_was(state_db: Path, tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    answers = ["-a", "Plan a trip", "-a", "My family", "-a", "June"]
    code, out, err = flujo(["run", CLARIFY, "--events-file", str(events_file), *answers])
    assert code == exit_codes.OK, err
    assert out.startswith("The goal is clear.\nGoal: Plan a trip") and "run.finished" not in out
    lines = parsed(events_file.read_text(encoding="utf-8"))
    run_id = lines[-1]["payload"]["run_id"]
    assert lines[:-1] == as_lines(stored_events(state_db, run_id)) and lines[-1]["kind"] == "run.finished"
    code, out, err = flujo(["run", CLARIFY, "--events-file", str(events_file), "--json", *answers])  # no clash
    assert code == exit_codes.OK and json.loads(out)["status"] == "completed"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--events", "jsonl", "--json"], "--events and --json cannot be given together"),
        (["--events", "xml"], "--events takes jsonl, not 'xml'"),
        (["--events-file", "/nonexistent-folder/events.jsonl"], "--events-file /nonexistent-folder/events.jsonl"),
    ],
)
def test_bad_event_options_are_usage_errors(state_db: Path, args: list[str], message: str) -> None:
    code, out, err = flujo(["run", CLARIFY, *args, "-a", "x"])
    assert code == exit_codes.USAGE and message in err and "Traceback" not in err
    assert out == ""
    code, _, err = flujo(["resume", "nothing", *args])
    assert code == exit_codes.USAGE and message in err


def test_a_resumed_run_writes_the_events_it_commits(state_db: Path) -> None:
    code, out, _ = flujo(["run", CLARIFY, "--no-input", "--json"])
    assert code == exit_codes.PAUSED
    run_id = json.loads(out)["run_id"]
    code, out, err = flujo(["resume", run_id, "--events", "jsonl", "-a", "Plan a trip", "-a", "family", "-a", "June"])
    assert code == exit_codes.OK, err
    lines = parsed(out)
    assert lines[-1]["kind"] == "run.finished" and lines[-1]["payload"]["output"].startswith("The goal is clear.")
    assert lines[:-1] == as_lines(stored_events(state_db, run_id))  # the paused run had committed none


def test_a_paused_run_ends_with_where_it_waits(state_db: Path) -> None:
    code, out, _ = flujo(["run", CLARIFY, "--no-input", "--events", "jsonl", "-a", "Plan a trip"])
    assert code == exit_codes.PAUSED
    finished = parsed(out)[-1]["payload"]
    assert finished["status"] == "paused" and finished["output"] is None
    assert finished["pause"] == {"step": "answer", "path": "clarification_loop/1/answer", "message": "Who is it for?"}


def test_a_sub_workflows_events_come_at_their_place_in_the_run(state_db: Path) -> None:
    code, out, err = flujo(["run", PARENT, "--input", "tea", "--answer", "yes", "--events", "jsonl"])
    assert code == exit_codes.OK, err
    lines = parsed(out)
    run_id = lines[-1]["payload"]["run_id"]
    child = stored_events(state_db, child_run_id(run_id, "review"))
    below = [line for line in lines if line["path"].startswith("review/")]
    assert below == [{**line, "path": f"review/{line['path']}"} for line in as_lines(child)]
    own = [line for line in lines[:-1] if not line["path"].startswith("review/")]
    assert own == as_lines(stored_events(state_db, run_id))


def test_the_lines_come_as_the_run_goes(state_db: Path) -> None:
    """Read while the run waits for its second answer: the lines of what it committed so far are out already
    (the order of things, not a time)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", CLARIFY, "--events", "jsonl"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(state_db)},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("Plan a trip\n")
    process.stdin.flush()
    early = [json.loads(process.stdout.readline()) for _ in range(3)]  # get_goal's answer, clarify's call
    assert [line["kind"] for line in early] == ["hitl.answer", "agent.prompt", "agent.reply"]
    assert process.poll() is None  # still waiting for the answer to "Who is it for?"
    out, err = process.communicate("My family\nJune\n")
    assert process.returncode == exit_codes.OK, err
    lines = early + parsed(out)
    assert lines[-1]["kind"] == "run.finished"
    assert lines[:-1] == as_lines(stored_events(state_db, lines[-1]["payload"]["run_id"]))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, where every write fails")
def test_an_events_file_whose_writes_fail_is_one_line_and_the_run_is_kept(state_db: Path) -> None:
    answers = ["-a", "Plan a trip", "-a", "My family", "-a", "June"]
    code, out, err = flujo(["run", CLARIFY, "--events-file", "/dev/full", *answers])
    assert code == exit_codes.USAGE, err
    assert "error: --events-file /dev/full: cannot write it: No space left on device" in err
    assert "unexpected" not in err and out.startswith("The goal is clear.")  # the run went on to its end
    code, out, _ = flujo(["lens", "list", "--json"])
    [run] = json.loads(out)["runs"]
    assert run["status"] == "completed"
    assert stored_events(state_db, run["run_id"])  # its events are in the store
