"""Continuing the last conversation and forking one, through the real CLI: ``flujo run FILE -c`` (``--continue``)
continues the thread of the latest run of that blueprint (by its resolved path), and says so in one line,
exit code 2, when that run was in no thread or there is none; ``flujo threads fork NAME NEW [--at-turn N]``
starts NEW from NAME's first turns, and ``flujo run FILE --thread NEW`` (or ``-c``) continues from there."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from flujo_cli import exit_codes
from tests.cli.test_threads import ASK, DONE, PLANNER, prompts, said, sent
from tests.support.cli_helpers import flujo


@pytest.fixture
def planner(tmp_path: Path) -> Path:
    blueprint = tmp_path / "planner.yaml"
    blueprint.write_text(PLANNER, encoding="utf-8")
    return blueprint


def run_json(*args: str) -> dict[str, Any]:
    code, out, err = flujo([*args, "--json"])
    assert code == exit_codes.OK, err
    result: dict[str, Any] = json.loads(out)
    return result


def test_continue_takes_the_thread_of_the_latest_run_of_the_blueprint(
    state_db: Path, planner: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run_json("run", str(planner), "--thread", "holiday", "--input", "Plan a holiday", "--answer", "Two")
    other = tmp_path / "other.yaml"  # a later run of another blueprint does not count
    other.write_text(PLANNER.replace("name: planner", "name: other"), encoding="utf-8")
    run_json("run", str(other), "--thread", "work", "--input", "Plan a sprint", "--answer", "Me")

    # The same file by another path (relative, from another folder): the run records the resolved one.
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    second = run_json("run", "../planner.yaml", "-c", "--input", "Book the train", "--answer", "Just me")
    assert sent(prompts(state_db, second["run_id"])["chat/1/plan"]) == [
        *said("Plan a holiday", "Two"),
        ("user", "Book the train"),
    ]
    third = run_json("run", str(planner), "--continue", "--input", "Find a hotel", "--answer", "Four")
    assert sent(prompts(state_db, third["run_id"])["chat/1/plan"])[:8] == [
        *said("Plan a holiday", "Two"),
        *said("Book the train", "Just me"),
    ]
    code, out, _ = flujo(["threads", "list", "--json"])
    assert code == exit_codes.OK
    assert [(t["name"], t["runs"]) for t in json.loads(out)["threads"]] == [("holiday", 3), ("work", 1)]
    assert first["run_id"] != second["run_id"]


def test_continue_without_a_conversation_to_continue_is_one_line_and_exit_code_2(state_db: Path, planner: Path) -> None:
    code, out, err = flujo(["run", str(planner), "-c", "--input", "Hi", "--answer", "Me"])
    assert (code, out) == (exit_codes.USAGE, "")
    assert err.splitlines()[0] == f"error: no run of {planner} in {state_db} to continue"
    assert err.splitlines()[1].startswith("hint: start a conversation with: flujo run FILE --thread NAME")

    plain = run_json("run", str(planner), "--input", "Plan a sprint", "--answer", "Me")  # in no thread
    code, out, err = flujo(["run", str(planner), "--continue", "--input", "Hi", "--answer", "Me"])
    assert (code, out) == (exit_codes.USAGE, "")
    assert err.splitlines()[0] == (
        f"error: the latest run of {planner} (run {plain['run_id']}) was in no thread: there is no conversation"
        " to continue"
    )
    assert len(err.splitlines()) == 2
    assert _run_count(state_db) == 1  # nothing ran

    code, out, err = flujo(["run", str(planner), "-c", "--thread", "t", "--input", "Hi"])
    assert (code, out) == (exit_codes.USAGE, "")
    assert err.startswith("error: --continue and --thread cannot be given together")


def _run_count(db: Path) -> int:
    async def count() -> int:
        async with await open_store(str(db)) as store:
            return len(await store.list_runs(limit=100))

    return asyncio.run(count())


def test_a_fork_starts_a_new_thread_from_the_first_turns_of_another(state_db: Path, planner: Path) -> None:
    run_json("run", str(planner), "--thread", "trip", "--input", "Plan a holiday", "--answer", "Two")
    run_json("run", str(planner), "--thread", "trip", "--input", "Book the train", "--answer", "Just me")

    code, out, err = flujo(["threads", "fork", "trip", "trip-b", "--at-turn", "5"])
    assert code == exit_codes.OK, err
    assert out.splitlines() == [
        "forked thread trip into trip-b: its first 5 of 8 turns",
        "continue it with: flujo run planner.yaml --thread trip-b",  # relative to the working directory
    ]
    code, out, _ = flujo(["threads", "show", "trip-b"])
    lines = out.splitlines()
    assert lines[0].startswith("thread trip-b: 1 run, 5 turns, ")
    assert lines[2].split(" · ")[1] == "fork of trip"
    assert lines[3:] == [
        "  User: Plan a holiday",
        "  Assistant: Who is coming?",
        "  User: Two",
        "  Assistant: Planned.",
        "  User: Book the train",
    ]

    # The fork is the latest run of the blueprint: -c continues it. Its first call is sent the five turns.
    forked = run_json("run", str(planner), "-c", "--input", "Go by plane instead", "--answer", "Three")
    assert sent(prompts(state_db, forked["run_id"])["chat/1/plan"]) == [
        *said("Plan a holiday", "Two"),
        ("user", "Book the train"),
        ("user", "Go by plane instead"),
    ]
    code, out, _ = flujo(["threads", "show", "trip", "--json"])
    assert json.loads(out)["thread"]["turns"] == 8  # the forked thread is as it was
    code, out, _ = flujo(["threads", "show", "trip-b", "--json"])
    assert [t["content"] for t in json.loads(out)["turns"]][5:] == ["Go by plane instead", ASK, "Three", DONE]

    code, out, err = flujo(["threads", "fork", "trip", "trip-c", "--json"])  # all the turns
    assert code == exit_codes.OK, err
    forked_json = json.loads(out)["forked"]
    assert (forked_json["from"], forked_json["turns"], forked_json["thread"]["name"]) == ("trip", 8, "trip-c")
    assert set(forked_json) == {"from", "turns", "run_id", "thread"}
    code, out, _ = flujo(["threads", "fork", "trip-b", "trip-d"])
    assert out.splitlines()[0] == "forked thread trip-b into trip-d: all 9 turns"


def test_what_a_fork_refuses(state_db: Path, planner: Path) -> None:
    run_json("run", str(planner), "--thread", "trip", "--input", "Plan a holiday", "--answer", "Two")
    run_json("run", str(planner), "--thread", "work", "--input", "Plan a sprint", "--answer", "Me")
    cases = [
        (["nowhere", "new"], exit_codes.FAILED, f"error: no thread named 'nowhere' in {state_db}"),
        (["trip", "work"], exit_codes.FAILED, "error: thread work already exists"),
        (["trip", "new", "--at-turn", "5"], exit_codes.USAGE, "error: --at-turn 5: thread trip has 4 turns"),
        (["trip", "no spaces"], exit_codes.USAGE, "error: thread name 'no spaces' is not valid"),
        (["trip", "new", "--at-turn", "0"], exit_codes.USAGE, ""),
    ]
    for args, expected, first_line in cases:
        code, out, err = flujo(["threads", "fork", *args])
        assert (code, out) == (expected, ""), (args, err)
        assert err.startswith(first_line), (args, err)
    code, out, _ = flujo(["threads", "list", "--json"])
    assert sorted(t["name"] for t in json.loads(out)["threads"]) == ["trip", "work"]
    code, out, err = flujo(["threads", "fork", "trip", "new", "--state", str(state_db.parent / "none.db")])
    assert code == exit_codes.STORE and "there is no run store at" in err  # never creates one


def test_the_documented_fork_and_continue_are_the_real_ones(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/conversation.md: after its two documented runs of thread trip, the documented ``threads fork`` prints
    what the page shows, and the documented ``-c`` run continues the fork (its stdout as shown)."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    page = (root / "docs" / "conversation.md").read_text(encoding="utf-8")
    runs = re.findall(r"^\$ flujo (run docs/examples/thread\.yaml --thread trip .+) 2>/dev/null$", page, flags=re.M)
    assert len(runs) == 2
    for command in runs:
        assert flujo(shlex.split(command))[0] == exit_codes.OK
    shown = re.findall(r"^```text\n\$ flujo ((?:threads fork|run [^\n]* -c) [^\n]*)\n(.*?)^```$", page, re.M | re.S)
    assert [command.split()[0] for command, _ in shown] == ["threads", "run"]
    for command, output in shown:
        code, out, err = flujo(shlex.split(command))
        assert code == exit_codes.OK, err
        assert out == output, command
