"""A ``python:`` tool that asks for its call's context (a parameter annotated ``ToolCallContext``), through the
real ``flujo`` command: the model is never told of that parameter, the function is given the run id, the
call's ``P/tool/N`` path and its attempt, sync (in a thread) or async; killed with SIGKILL in the middle of a
call, it is called again on ``flujo resume`` as attempt 2 at the same path (docs/durability.md, "Tool calls"),
which is what lets it make its side effect idempotent. ``flujo validate`` refuses two such parameters."""

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

from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo_process, wait_until

# String annotations (``from __future__``): the context parameter is found by its resolved hint.
TOOLS = '''\
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from core import ToolCallContext

HERE = Path(__file__).parent


def _called(tool: str, call: ToolCallContext, order: str) -> None:
    seen = {"tool": tool, "order": order, "run_id": call.run_id, "path": call.path, "attempt": call.attempt}
    with open(HERE / "calls.jsonl", "a", encoding="utf-8") as calls:
        calls.write(json.dumps(seen) + "\\n")


def ship(order: str, call: ToolCallContext) -> str:
    """Ship an order."""
    _called("ship", call, order)
    if call.attempt == 1 and os.environ.get("BLOCK_FIRST_SHIPMENT"):
        (HERE / "shipping").write_text(call.path, encoding="utf-8")
        threading.Event().wait()  # until the process is killed
    assert call.on_progress is not None
    call.on_progress(f"shipping {order}, attempt {call.attempt}")
    return f"shipped {order}"


async def track(where: ToolCallContext, /, order: str) -> str:
    """Track an order."""
    _called("track", where, order)
    return f"{order} is on its way"
'''

BLUEPRINT = """\
version: "0.1"
tools:
  ship: {python: "order_tools:ship"}
  track: {python: "order_tools:track"}
agents:
  helper:
    model: scripted
    tools: [ship, track]
    replies:
      - {tool: ship, arguments: {order: "A-1"}}
      - {tool: track, arguments: {order: "A-1"}}
      - "A-1 is shipped and on its way."
steps:
  - {kind: step, name: answer, uses: agents.helper}
"""

ANSWER = "A-1 is shipped and on its way."


def _schema(order_only: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {order_only: {"type": "string"}},
        "required": [order_only],
        "additionalProperties": False,
    }


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "order_tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.yaml").write_text(BLUEPRINT, encoding="utf-8")
    return tmp_path


def _env(folder: Path) -> dict[str, str]:
    return {"FLUJO_STATE_URI": str(folder / "flujo.db")}


def _calls(folder: Path) -> list[dict[str, Any]]:
    path = folder / "calls.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def _only_run(folder: Path) -> str:
    with contextlib.closing(sqlite3.connect(folder / "flujo.db")) as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs").fetchall()
    return str(run_id)


def _tools_sent(folder: Path, run_id: str) -> list[list[dict[str, Any]]]:
    """The tool definitions sent with each model turn, as the run recorded them (``agent.prompt`` events)."""

    async def read() -> list[list[dict[str, Any]]]:
        async with await open_store(str(folder / "flujo.db"), mode="read") as store:
            events = await store.events(run_id)
        return [list(e.payload["tools"]) for e in events if e.kind == "agent.prompt"]

    return asyncio.run(read())


def test_the_model_is_never_told_of_the_context_and_each_call_is_given_its_run_path_and_attempt(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path)
    run = flujo_process(["run", "flow.yaml", "--input", "ship A-1"], env=_env(folder), cwd=folder)
    assert run.returncode == exit_codes.OK, run.stderr
    assert run.stdout == ANSWER + "\n"
    assert "shipping A-1, attempt 1" in run.stderr  # on_progress, from the sync function's thread
    run_id = _only_run(folder)
    assert _calls(folder) == [
        {"tool": "ship", "order": "A-1", "run_id": run_id, "path": "answer/tool/1", "attempt": 1},
        {"tool": "track", "order": "A-1", "run_id": run_id, "path": "answer/tool/2", "attempt": 1},  # async
    ]
    sent = _tools_sent(folder, run_id)
    assert len(sent) == 3
    for tools in sent:
        assert [(tool["name"], tool["input_schema"]) for tool in tools] == [
            ("ship", _schema("order")),
            ("track", _schema("order")),
        ]


def test_a_call_killed_mid_way_runs_again_on_resume_as_attempt_2_at_the_same_path(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **_env(folder), "BLOCK_FIRST_SHIPMENT": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", "flow.yaml", "--input", "ship A-1", "--json"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=folder,
    )  # fmt: skip
    try:
        wait_until((folder / "shipping").exists, process=process)  # the function is inside its first call
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL
    run_id = _only_run(folder)
    assert (folder / "shipping").read_text(encoding="utf-8") == "answer/tool/1"

    resumed = flujo_process(["resume", run_id, "--json"], env=_env(folder), cwd=folder)
    assert resumed.returncode == exit_codes.OK, resumed.stderr
    result = json.loads(resumed.stdout)
    assert (result["status"], result["output"]) == ("completed", ANSWER)
    assert _calls(folder) == [
        {"tool": "ship", "order": "A-1", "run_id": run_id, "path": "answer/tool/1", "attempt": 1},
        {"tool": "ship", "order": "A-1", "run_id": run_id, "path": "answer/tool/1", "attempt": 2},
        {"tool": "track", "order": "A-1", "run_id": run_id, "path": "answer/tool/2", "attempt": 1},
    ]


def test_validate_accepts_a_context_parameter_and_refuses_two_in_one_located_line(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    valid = flujo_process(["validate", "flow.yaml"], cwd=folder)
    assert valid.returncode == exit_codes.OK, valid.stderr
    (folder / "order_tools.py").write_text(
        TOOLS + "\n\ndef both(order: str, a: ToolCallContext, b: ToolCallContext) -> str:\n    return order\n",
        encoding="utf-8",
    )
    (folder / "flow.yaml").write_text(BLUEPRINT.replace("order_tools:track", "order_tools:both"), encoding="utf-8")
    refused = flujo_process(["validate", "flow.yaml"], cwd=folder)
    assert refused.returncode == exit_codes.FAILED
    assert refused.stderr.splitlines()[0] == (
        "flow.yaml:4:19: error: tools.track (python: order_tools:both): both takes two "
        "ToolCallContext parameters, 'a' and 'b'; a call has one context"
    )
