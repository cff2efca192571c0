"""Threads through the real CLI: one thread over three runs (the second paused and resumed), what each
run's agent was sent, the bound, ``flujo threads list | show | delete`` (text and ``--json``), and the
errors (unknown thread, bad name, a blueprint without a conversational loop)."""

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
from tests.support.cli_helpers import flujo

PLANNER = """\
version: "0.1"
name: planner
agents:
  planner:
    model: scripted
    replies:
      - {action: ask, question: "Who is coming?"}
      - {action: finish, summary: "Planned."}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      history_management: {strategy: truncate_turns, max_turns: 8}
      body:
        - {kind: step, name: plan, uses: agents.planner}
        - {kind: hitl, name: answer, message: "{{ steps.plan.output.question }}"}
"""
ASK = '{"action": "ask", "question": "Who is coming?"}'
DONE = '{"action": "finish", "summary": "Planned."}'


def said(goal: str, who: str) -> list[tuple[str, str]]:
    """The four turns of one run: its input, the question, the answer, the finishing reply."""
    return [("user", goal), ("assistant", ASK), ("user", who), ("assistant", DONE)]


def prompts(db: Path, run_id: str) -> dict[str, dict[str, Any]]:
    """The ``agent.prompt`` payload of each step path of a run in the state database."""

    async def read() -> dict[str, dict[str, Any]]:
        async with await open_store(str(db)) as store:
            return {e.path: dict(e.payload) for e in await store.events(run_id) if e.kind == "agent.prompt"}

    return asyncio.run(read())


def sent(payload: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in payload["messages"]]


def run_json(*args: str) -> dict[str, Any]:
    code, out, err = flujo([*args, "--json"])
    result: dict[str, Any] = json.loads(out)
    assert code == (exit_codes.PAUSED if result["status"] == "paused" else exit_codes.OK), err
    return result


def show_json(name: str) -> dict[str, Any]:
    code, out, err = flujo(["threads", "show", name, "--json"])
    assert code == exit_codes.OK, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_one_thread_over_three_runs(state_db: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "planner.yaml"
    blueprint.write_text(PLANNER, encoding="utf-8")
    start = ["run", str(blueprint), "--thread", "holiday"]

    first = run_json(*start, "--input", "Plan a holiday", "--answer", "Two of us")
    assert first["status"] == "completed"
    assert sent(prompts(state_db, first["run_id"])["chat/1/plan"]) == [("user", "Plan a holiday")]

    # Run 2 pauses at its first question: what it said so far is in the thread already.
    second = run_json(*start, "--input", "Book the train", "--no-input")
    assert second["status"] == "paused"
    partial = show_json("holiday")["turns"]
    assert [(t["role"], t["content"]) for t in partial] == [
        *said("Plan a holiday", "Two of us"),
        *said("Book the train", "")[:2],
    ]
    # Resumed (no --thread needed: the run record keeps it), it completes and replaces its partial turns.
    resumed = run_json("resume", second["run_id"], "--answer", "Just me")
    assert resumed["status"] == "completed"
    calls = prompts(state_db, second["run_id"])
    assert sent(calls["chat/1/plan"]) == [*said("Plan a holiday", "Two of us"), ("user", "Book the train")]
    assert sent(calls["chat/2/plan"])[-3:] == [("user", "Book the train"), ("assistant", ASK), ("user", "Just me")]

    third = run_json(*start, "--input", "Find a hotel", "--answer", "Four")
    calls = prompts(state_db, third["run_id"])
    # Run 3's first call is sent runs 1-2's eight turns (max_turns: 8 holds them all), then its message.
    earlier = [*said("Plan a holiday", "Two of us"), *said("Book the train", "Just me")]
    assert sent(calls["chat/1/plan"]) == [*earlier, ("user", "Find a hotel")]
    assert calls["chat/1/plan"]["history"] == {"conversation": "chat", "turns": 8, "dropped": 0, "mode": "messages"}
    # Its second call has ten turns before its message: the bound drops the oldest (run 1's first three).
    assert sent(calls["chat/2/plan"]) == [*earlier[3:], ("user", "Find a hotel"), ("assistant", ASK), ("user", "Four")]
    assert calls["chat/2/plan"]["history"] == {"conversation": "chat", "turns": 7, "dropped": 3, "mode": "messages"}

    shown = show_json("holiday")
    assert [(t["run_id"], t["index"], t["role"], t["content"]) for t in shown["turns"]] == [
        (run["run_id"], index, role, content)
        for run, (goal, who) in zip(
            (first, second, third),
            (("Plan a holiday", "Two of us"), ("Book the train", "Just me"), ("Find a hotel", "Four")),
            strict=True,
        )
        for index, (role, content) in enumerate(said(goal, who))
    ]
    assert all(isinstance(t["tokens"], int) and t["tokens"] > 0 for t in shown["turns"])
    assert [t["text"] for t in shown["turns"][:4]] == ["Plan a holiday", "Who is coming?", "Two of us", "Planned."]
    summary = shown["thread"]
    assert (summary["name"], summary["runs"], summary["turns"]) == ("holiday", 3, 12)
    assert summary["tokens"] == sum(t["tokens"] for t in shown["turns"])

    code, out, _ = flujo(["threads", "show", "holiday"])
    assert code == exit_codes.OK
    lines = out.splitlines()
    assert lines[0] == f"thread holiday: 3 runs, 12 turns, {summary['tokens']} tokens"
    headers = [line for line in lines if line.startswith("run ")]
    assert [h.split(" · ")[:2] for h in headers] == [
        [f"run {r['run_id']}", "completed"] for r in (first, second, third)
    ]
    assert lines[2:7] == [  # a person reads a decision agent's question, not its JSON (agents are sent the JSON)
        headers[0],
        "  User: Plan a holiday",
        "  Assistant: Who is coming?",
        "  User: Two of us",
        "  Assistant: Planned.",
    ]


def test_threads_list_and_delete(state_db: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "planner.yaml"
    blueprint.write_text(PLANNER, encoding="utf-8")
    code, out, err = flujo(["threads", "list"])  # looking never creates a store: it says where it looked
    assert (code, out) == (exit_codes.STORE, "") and f"there is no run store at {state_db}" in err
    assert "--state URI" in err and not state_db.exists()
    run_json("run", str(blueprint), "--input", "Plan a sprint", "--answer", "Me")  # a run in no thread
    code, out, err = flujo(["threads", "list"])
    assert (code, out) == (exit_codes.OK, "") and f"no threads in {state_db} yet" in err
    for thread, goal in (("work", "Plan a sprint"), ("home", "Paint the door"), ("home", "Buy paint")):
        run_json("run", str(blueprint), "--thread", thread, "--input", goal, "--answer", "Me")

    code, out, _ = flujo(["threads", "list", "--json"])
    listed = json.loads(out)["threads"]
    assert [(t["name"], t["runs"], t["turns"]) for t in listed] == [("home", 2, 8), ("work", 1, 4)]
    assert set(listed[0]) == {"name", "runs", "turns", "tokens", "first_run_at", "last_run_at"}
    code, out, _ = flujo(["threads", "list"])
    assert [line.split()[:4] for line in out.splitlines()] == [
        ["THREAD", "RUNS", "TURNS", "TOKENS"],
        ["home", "2", "8", str(listed[0]["tokens"])],
        ["work", "1", "4", str(listed[1]["tokens"])],
    ]

    code, out, _ = flujo(["threads", "delete", "home"])
    assert code == exit_codes.OK
    assert out == "deleted thread home: 8 turns of 2 runs (the runs stay in the run store)\n"
    code, out, _ = flujo(["threads", "delete", "work", "--json"])
    assert json.loads(out)["deleted"] | {"tokens": 0, "first_run_at": 0, "last_run_at": 0} == {
        "name": "work", "runs": 1, "turns": 4, "tokens": 0, "first_run_at": 0, "last_run_at": 0,
    }  # fmt: skip
    code, out, _ = flujo(["threads", "list", "--json"])
    assert json.loads(out) == {"threads": []}
    # The next run of a deleted thread starts a new conversation.
    again = run_json("run", str(blueprint), "--thread", "home", "--input", "Fix the roof", "--answer", "Me")
    assert sent(prompts(state_db, again["run_id"])["chat/1/plan"]) == [("user", "Fix the roof")]


@pytest.mark.parametrize("command", ["show", "delete"])
def test_an_unknown_thread_is_one_line_and_exit_code_1(state_db: Path, command: str) -> None:
    asyncio.run(_create_store(state_db))
    code, out, err = flujo(["threads", command, "nowhere"])
    assert (code, out) == (exit_codes.FAILED, "")
    assert err == (
        f"error: no thread named 'nowhere' in {state_db}\nhint: list its threads with: flujo threads list; or look"
        " in another store: cd to the project's directory, set FLUJO_STATE_URI, or pass --state URI\n"
    )


async def _create_store(path: Path) -> None:
    await (await open_store(str(path))).close()


def test_a_bad_thread_name_is_a_usage_error(state_db: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "planner.yaml"
    blueprint.write_text(PLANNER, encoding="utf-8")
    for args in (["threads", "show", "no spaces"], ["run", str(blueprint), "--thread", "no spaces"]):
        code, out, err = flujo(args)
        assert (code, out) == (exit_codes.USAGE, ""), err
        assert err.startswith("error: thread name 'no spaces' is not valid\nhint: use letters, digits")


def test_thread_on_a_blueprint_without_a_conversation_is_refused_before_it_runs(state_db: Path) -> None:
    hello = Path(__file__).resolve().parents[2] / "docs" / "examples" / "hello.yaml"
    code, out, err = flujo(["run", str(hello), "--thread", "t", "--answer", "Ada", "--json"])
    assert (code, out) == (exit_codes.USAGE, "")
    assert "error: --thread t needs a conversation: true loop, and 'hello' has none" in err
    code, out, _ = flujo(["threads", "list", "--json"])
    assert json.loads(out) == {"threads": []}

    async def runs() -> int:
        async with await open_store(str(state_db)) as store:
            return len(await store.list_runs())

    assert asyncio.run(runs()) == 0


def test_the_documented_threads_show_output_is_the_real_one(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/conversation.md: after its two documented runs, ``flujo threads show trip`` prints the block it
    shows (run ids and times aside)."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    page = (root / "docs" / "conversation.md").read_text(encoding="utf-8")
    runs = re.findall(r"^\$ flujo (run docs/examples/thread\.yaml .+) 2>/dev/null$", page, flags=re.MULTILINE)
    [shown] = re.findall(r"^```text\n(thread trip: .*?)^```$", page, flags=re.MULTILINE | re.DOTALL)
    assert len(runs) == 2
    for command in runs:
        assert flujo(shlex.split(command))[0] == exit_codes.OK
    code, out, _ = flujo(["threads", "show", "trip"])
    assert code == exit_codes.OK

    def neutral(text: str) -> str:
        return re.sub(r"run [0-9a-f]{16} · (\w+) · [\d-]{10} [\d:]{5}", r"run ID · \1 · TIME", text)

    assert neutral(out) == neutral(shown)


def test_threads_show_masks_secrets_like_lens(state_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store keeps answers and replies as typed; ``threads show`` (text and ``--json``) masks every
    kind of secret redaction knows, as lens does."""
    monkeypatch.setenv("MY_SERVICE_TOKEN", "env-secret-value-42")
    blueprint = tmp_path / "planner.yaml"
    blueprint.write_text(PLANNER, encoding="utf-8")
    goal = "my password is hunter2xyz; aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY; env-secret-value-42"
    answer = "key sk-proj-abcdefghijklmnop1234 and Authorization: Basic dXNlcjpwYXNzd29yZA=="
    run_json("run", str(blueprint), "--thread", "leaky", "--input", goal, "--answer", answer)
    code, text, err = flujo(["threads", "show", "leaky"])
    assert code == exit_codes.OK, err
    shown = json.dumps(show_json("leaky")) + text
    for secret in ("hunter2xyz", "sk-proj-abcdefghijklmnop1234", "dXNlcjpwYXNzd29yZA==", "wJalrXUtnFEMI", "env-secret"):
        assert secret not in shown
    assert "User: my password is [REDACTED]; aws secret [REDACTED]; [REDACTED]" in text
    assert "User: key [REDACTED] and Authorization: Basic [REDACTED]" in text
