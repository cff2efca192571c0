"""``flujo lens`` through the real CLI on runs made by ``flujo run`` (offline examples, SQLite store):
what each command prints, its exit codes, and that looking never creates or changes the store."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

import core
import core.engine
from core import StepRecord
from core.store import SqliteStore
from flujo_cli import exit_codes
from tests.support.cli_helpers import EXAMPLES, ROOT, flujo, read_terminal_until

CONVERSATION = str(EXAMPLES / "conversation.yaml")
SUBWORKFLOW = str(ROOT / "docs" / "examples" / "subworkflow.yaml")
HITL = str(ROOT / "docs" / "examples" / "hitl.yaml")


def run(*args: str) -> str:
    code, out, err = flujo(["run", *args, "--json"])
    assert code in (exit_codes.OK, exit_codes.PAUSED), err
    return str(json.loads(out)["run_id"])


@pytest.fixture(scope="module")
def made_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A conversation, a sub-workflow run (and its child), and a paused run, in that order: made once per
    module (three real runs take a second), copied for each test."""
    db = tmp_path_factory.mktemp("lens-runs") / "flujo.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLUJO_STATE_URI", str(db))
        ids = {
            "conversation": run(CONVERSATION, "-a", "Plan a trip", "-a", "My family", "-a", "June"),
            "parent": run(SUBWORKFLOW, "--input", "tea", "-a", "yes"),
            "paused": run(HITL, "--no-input"),
        }
    return db, ids


@pytest.fixture
def runs(state_db: Path, made_runs: tuple[Path, dict[str, str]]) -> dict[str, str]:
    """``made_runs`` in this test's own store (the runs' processes are gone: the store is closed)."""
    db, ids = made_runs
    state_db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(db, state_db)
    return ids


def test_list_shows_recent_runs_with_child_runs_under_their_parent(runs: dict[str, str]) -> None:
    code, out, _ = flujo(["lens", "list"])
    assert code == exit_codes.OK
    lines = out.splitlines()
    assert lines[0].split() == ["RUN", "BLUEPRINT", "STATUS", "STARTED", "TOOK", "STEPS", "TOKENS", "COST"]
    ids = [line.split()[0] for line in lines[1:]]
    assert ids == [runs["paused"], runs["parent"], "└", runs["conversation"]]
    child = lines[3].split()
    assert child[2] == "review" and child[3:5] == ["✓", "completed"]

    code, out, _ = flujo(["lens", "list", "--json", "--status", "completed", "--limit", "2"])
    listed = json.loads(out)["runs"]
    assert [r["blueprint"] for r in listed] == ["review", "write_and_review"]  # newest first, flat
    assert listed[0]["parent_run_id"] == runs["parent"] and listed[1]["steps"] == 3
    assert set(listed[0]) == {
        "run_id", "blueprint", "status", "parent_run_id", "thread", "source", "created_at", "finished_at",
        "duration_s", "usage", "error", "pause", "status_note", "steps",
    }  # fmt: skip


def test_list_filters_and_says_when_nothing_matches(runs: dict[str, str]) -> None:
    code, out, err = flujo(["lens", "list", "--status", "paused", "--json"])
    assert [r["run_id"] for r in json.loads(out)["runs"]] == [runs["paused"]]
    code, out, err = flujo(["lens", "list", "--thread", "nobody"])
    assert (code, out) == (exit_codes.OK, "") and "no runs matching those options in" in err
    code, _, err = flujo(["lens", "list", "--status", "done"])
    assert code == exit_codes.USAGE and "unknown status 'done'" in err and "completed" in err
    code, out, err = flujo(["lens", "list", "--limit", "0"])  # the store has runs: none were asked for
    assert (code, out) == (exit_codes.OK, "") and "no runs matching those options in" in err, err


def test_show_lists_the_steps_in_execution_order(runs: dict[str, str]) -> None:
    code, out, _ = flujo(["lens", "show", runs["conversation"][:5]])  # a prefix is enough
    assert code == exit_codes.OK
    assert f"run {runs['conversation']}" in out
    order = [line.strip("│├└─ ").split("  ")[0] for line in out.splitlines() if "✓" in line and "·" in line]
    assert order[1:] == ["✓ get_goal", "✓ clarification_loop", "✓ clarify", "✓ answer", "✓ clarify", "✓ answer",
                         "✓ clarify"]  # fmt: skip
    assert "iteration 3" in out and 'out   {"action": "finish", "summary": "The goal is clear."}' in out

    code, out, _ = flujo(["lens", "show", runs["parent"], "--json"])
    document = json.loads(out)
    review = next(s for s in document["steps"] if s["name"] == "review")
    child = review["children"][0]
    assert (child["type"], child["blueprint"], child["path"]) == ("run", "review", "review")
    assert [s["name"] for s in child["children"]] == ["critique", "approve", "verdict"]


def test_show_final_output(runs: dict[str, str]) -> None:
    code, out, _ = flujo(["lens", "show", runs["conversation"], "--final-output"])
    assert code == exit_codes.OK and out.startswith("User: Plan a trip\n")
    assert out.endswith("Assistant: The goal is clear.\n")  # a structured reply reads as its summary
    code, out, _ = flujo(["lens", "show", runs["parent"], "--final-output", "--json"])
    assert json.loads(out)["output"] == "approved: Clear, but say where tea is loved. (published: true)"
    code, out, err = flujo(["lens", "show", runs["paused"], "--final-output"])
    assert (code, out) == (exit_codes.FAILED, "") and "has no final output: it is paused" in err


def test_trace_shows_the_messages_sent_and_the_injected_conversation(runs: dict[str, str]) -> None:
    code, out, _ = flujo(["lens", "trace", runs["conversation"]])  # not a terminal: printed, not the viewer
    assert code == exit_codes.OK
    assert "conversation clarification_loop: no earlier turns" in out  # iteration 1
    assert "conversation injected: 4 turns of clarification_loop" in out  # iteration 3 (the line wraps after)
    assert "hitl.answer  asked Who is it for?  answered My family" in out
    assert 'assistant {"action": "ask", "question": "Who is it for?"}' in out
    code, out, _ = flujo(["lens", "trace", runs["conversation"], "--expand", "none"])
    assert "messages hidden; --expand clarification_loop/1/clarify" in out and "assistant" not in out
    code, out, _ = flujo(["lens", "trace", runs["conversation"], "--step", "clarification_loop/2", "--json"])
    spans = json.loads(out)["spans"]
    iterations = spans[0]["children"]
    assert [i["key"] for i in iterations] == ["2"]
    prompt = next(e for e in iterations[0]["children"][0]["events"] if e["kind"] == "agent.prompt")["payload"]
    assert prompt["history"] == {"conversation": "clarification_loop", "turns": 2, "dropped": 0, "mode": "messages"}
    assert [m["role"] for m in prompt["messages"]] == ["system", "user", "assistant", "user"]


def test_trace_of_a_sub_workflow_nests_the_child_run(runs: dict[str, str]) -> None:
    code, out, _ = flujo(["lens", "trace", runs["parent"], "--expand", "none"])
    assert code == exit_codes.OK
    assert "child run " in out and "Review this draft" not in out and "message hidden" in out
    code, out, _ = flujo(["lens", "trace", runs["parent"], "--step", "review/critique"])
    assert "Review this draft: Tea is an old drink." in out and "draft  step" not in out


def test_into_a_pipe_the_run_line_is_written_before_the_steps_are_read(
    runs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's own line needs its record only: it reaches the pipe before the steps and events are read
    (with --step or --expand NAME, which may end in an error, nothing is written before they are)."""
    written_before: list[str] = []
    read = SqliteStore.steps

    async def steps(store: SqliteStore, run_id: str) -> list[StepRecord]:
        sys.stdout.flush()
        written_before.append(sys.stdout.buffer.getvalue().decode())  # type: ignore[attr-defined]  # CliRunner's
        return await read(store, run_id)

    monkeypatch.setattr(SqliteStore, "steps", steps)
    code, out, _ = flujo(["lens", "trace", runs["conversation"]])
    assert code == exit_codes.OK
    assert written_before == [out.splitlines(keepends=True)[0]]
    assert written_before[0].startswith(f"run {runs['conversation']} · ✓ completed · ")
    written_before.clear()
    code, out, _ = flujo(["lens", "trace", runs["conversation"], "--step", "clarification_loop/2"])
    assert code == exit_codes.OK and out.startswith(f"run {runs['conversation']}") and written_before == [""]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["lens", "show", "zzzz"], exit_codes.FAILED, "no run matches 'zzzz'"),
        (["lens", "trace", "zzzz"], exit_codes.FAILED, "no run matches 'zzzz'"),
        (["lens", "trace", "RUN", "--step", "nope"], exit_codes.FAILED, "has no step 'nope'"),
        (["lens", "trace", "RUN", "--expand", "nope"], exit_codes.FAILED, "has no step of that name"),
        (["lens", "trace", "RUN", "--expand", "all", "--expand", "none"], exit_codes.USAGE, "contradict"),
        (["lens", "trace", "RUN", "--tui"], exit_codes.USAGE, "--tui needs a terminal"),
        (["lens", "trace", "RUN", "--tui", "--json"], exit_codes.USAGE, "--tui and --json do not go together"),
    ],
)
def test_errors_are_one_line_with_an_exit_code(runs: dict[str, str], args: list[str], code: int, message: str) -> None:
    args = [runs["conversation"] if a == "RUN" else a for a in args]
    got, out, err = flujo(args)
    assert (got, out) == (code, "") and message in err
    assert err.startswith("error: ") and "Traceback" not in err


def test_a_reader_that_stops_reading_ends_the_trace_quietly(runs: dict[str, str], state_db: Path) -> None:
    """``flujo lens trace RUN | head``: when what reads stdout goes away, flujo stops without a word on stderr,
    with the exit code of a command ended by SIGPIPE (141), not as an unexpected error."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        result = subprocess.run(
            [sys.executable, "-m", "flujo_cli.main", "lens", "trace", runs["conversation"], "--expand", "all"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(state_db)},
            timeout=60,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (exit_codes.OUTPUT_CLOSED, "")


def test_a_broken_pipe_that_is_not_stdout_is_still_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    from flujo_cli.messages import fail

    with pytest.raises(SystemExit) as exited:
        fail(BrokenPipeError(32, "Broken pipe"), debug=False)  # stdout here is pytest's, still read
    assert exited.value.code == exit_codes.FAILED
    assert "unexpected BrokenPipeError" in capsys.readouterr().err


def test_an_ambiguous_prefix_lists_the_candidates(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(["abc1000000000000", "abc2000000000000", "abd3000000000000"])
    # The command line reads core's front door, the engine its own module. The front door's name first: it
    # is resolved on first read, and read after the engine's was replaced it would keep the replacement for
    # good (monkeypatch would put back what it read).
    monkeypatch.setattr(core, "new_run_id", lambda: next(ids))
    monkeypatch.setattr(core.engine, "new_run_id", core.new_run_id)
    for _ in range(3):
        run(HITL, "--no-input")
    code, _, err = flujo(["lens", "trace", "ab"])
    assert code == exit_codes.STORE
    assert "run id 'ab' is ambiguous: it matches abc1000000000000, abc2000000000000, abd3000000000000" in err
    assert flujo(["lens", "show", "abd"])[0] == exit_codes.OK


def test_looking_at_a_missing_store_creates_nothing(state_db: Path) -> None:
    for args in (["lens", "list"], ["lens", "show", "abc"], ["lens", "trace", "abc"], ["lens", "prune", "--keep", "1"]):
        code, out, err = flujo(args)
        assert (code, out) == (exit_codes.STORE, ""), args
        assert f"error: there is no run store at {state_db}" in err
    assert not state_db.parent.exists()


def test_an_empty_store_file_is_not_a_store_yet(state_db: Path) -> None:
    """A 0-byte file at the store's path (as a writer that was stopped before its first transaction leaves it):
    every command that only reads says so and exits 7, leaving it as it is; the first writer makes it a store."""
    state_db.parent.mkdir()
    state_db.touch()
    readers = [["lens", "list"], ["lens", "list", "--json"], ["lens", "show", "abc"], ["lens", "trace", "abc"]]
    readers += [["threads", "list"], ["threads", "show", "t"], ["resume", "abc"], ["lens", "prune", "--keep", "1"]]
    for args in readers:
        code, out, err = flujo(args)
        assert (code, out) == (exit_codes.STORE, ""), args
        assert f"error: {state_db} is not a flujo store yet (empty file)" in err, args
    assert state_db.stat().st_size == 0
    assert sorted(p.name for p in state_db.parent.iterdir()) == [state_db.name]
    blueprint = EXAMPLES / "clarify.yaml"
    assert flujo(["run", str(blueprint), "--no-input"])[0] == exit_codes.PAUSED
    code, out, _ = flujo(["lens", "list", "--json"])
    assert code == exit_codes.OK and len(json.loads(out)["runs"]) == 1


def test_prune(runs: dict[str, str], state_db: Path) -> None:
    code, out, _ = flujo(["lens", "prune", "--keep", "1", "--dry-run"])
    assert code == exit_codes.OK
    assert out == f"would delete 2 runs and 1 child run: {runs['parent']}, {runs['conversation']}\n"
    code, out, _ = flujo(["lens", "prune", "--keep", "1", "--json"])
    result = json.loads(out)
    assert (result["deleted"], len(result["children"]), result["live"]) == (
        [runs["parent"], runs["conversation"]], 1, []
    )  # fmt: skip
    assert result["vacuumed"] and result["size_after"] <= result["size_before"]
    listed = json.loads(flujo(["lens", "list", "--json"])[1])["runs"]
    assert [r["run_id"] for r in listed] == [runs["paused"]]
    code, out, _ = flujo(["lens", "prune", "--older-than", "1h"])
    assert (code, out) == (exit_codes.OK, "deleted 0 runs with their steps, events and thread turns\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say which runs to delete"),
        (["--older-than", "soon"], "--older-than 'soon' is not an age"),
        (["--keep", "-1"], "greater than or equal to 0"),
    ],
)
def test_prune_needs_a_criterion(state_db: Path, args: list[str], message: str) -> None:
    code, out, err = flujo(["lens", "prune", *args])
    assert (code, out) == (exit_codes.USAGE, "") and message in err


def _drain(fd: int) -> None:
    ready, _, _ = select.select([fd], [], [], 0.1)
    if ready:
        with contextlib.suppress(OSError):  # the process closed the terminal
            os.read(fd, 65536)


@pytest.mark.slow
def test_at_a_terminal_trace_opens_the_viewer(runs: dict[str, str], state_db: Path) -> None:
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "lens", "trace", runs["conversation"][:6]],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "FLUJO_STATE_URI": str(state_db)},
    )
    os.close(terminal)
    try:
        shown = read_terminal_until(controller, "Collapse all")  # the footer: the viewer is up
        assert runs["conversation"] in shown and "clarification_loop" in shown
        os.write(controller, b"/")
        read_terminal_until(controller, "search the trace")  # the search box has opened
        for key in "family\r":
            os.write(controller, key.encode())
            time.sleep(0.01)  # a key at a time, as typed (a burst reads as a paste)
        shown = read_terminal_until(controller, "match 1 of")
        os.write(controller, b"q")
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:
            _drain(controller)  # a terminal nobody reads would block the viewer's last writes
        assert process.wait(timeout=1) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
