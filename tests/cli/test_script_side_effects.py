"""Side effects of script agents across a crash (docs/durability.md, at-least-once): a ``command:`` agent's
process dies with the ``flujo`` process that started it (SIGKILL included) and with a cancelled step, and
script agents are told the run id, their step's path and which attempt of that step they are, so they can
make their side effects idempotent."""

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

from core import AgentCall, Settings
from core.agents import AgentSpec, build_agent
from tests.support.cli_helpers import ROOT, alive, flujo_process, wait_until

# Attempt 1 writes its pid, then waits before its side effect (long enough to be killed first); any later
# attempt reports what it was told.
SLOW_EFFECT = """\
import os, pathlib, sys, time
here = pathlib.Path(sys.argv[1])
sys.stdin.read()
if os.environ["FLUJO_ATTEMPT"] == "1":
    (here / "pid").write_text(str(os.getpid()))
    time.sleep(60)
    (here / "side_effect").write_text("done")
print(os.environ["FLUJO_ATTEMPT"] + " " + os.environ["FLUJO_STEP_PATH"] + " " + os.environ["FLUJO_RUN_ID"])
"""

BLUEPRINT = """\
version: "0.1"
agents:
  effect: {command: [%(python)s, effect.py, %(here)s]}
steps:
  - kind: loop
    name: work
    loop:
      max_loops: 1
      body:
        - {kind: step, name: act, uses: agents.effect}
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_command_dies_with_a_killed_run_and_resume_runs_it_again_as_attempt_2(tmp_path: Path) -> None:
    (tmp_path / "effect.py").write_text(SLOW_EFFECT, encoding="utf-8")
    blueprint = BLUEPRINT % {"python": json.dumps(sys.executable), "here": json.dumps(str(tmp_path))}
    (tmp_path / "flow.yaml").write_text(blueprint, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    with contextlib.chdir(tmp_path):
        run = subprocess.Popen(
            [sys.executable, "-m", "flujo_cli.main", "run", "flow.yaml"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    try:
        wait_until(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text() != "", process=run)
        command_pid = int((tmp_path / "pid").read_text())
        assert alive(command_pid)
        run.kill()  # SIGKILL: flujo can clean nothing up
        run.communicate()
        wait_until(lambda: not alive(command_pid))  # the kernel kills it with its parent
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert not (tmp_path / "side_effect").exists()

    with contextlib.chdir(tmp_path):
        with contextlib.closing(sqlite3.connect(tmp_path / "flujo.db")) as db:
            [(run_id, status)] = db.execute("SELECT run_id, status FROM runs").fetchall()
        assert status == "running"  # what a crash leaves behind
        resumed = flujo_process(["resume", run_id, "--json"], env={"FLUJO_STATE_URI": str(tmp_path / "flujo.db")})
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == f"2 work/1/act {run_id}"


def test_a_cancelled_command_step_kills_the_command_and_what_it_started(tmp_path: Path) -> None:
    script = (
        "import subprocess, sys, time, pathlib\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"pathlib.Path({str(tmp_path / 'pids')!r}).write_text(f'{{__import__(\"os\").getpid()}} {{child.pid}}')\n"
        "time.sleep(60)\n"
    )
    agent = build_agent(AgentSpec(name="cmd", command=(sys.executable, "-c", script)), Settings())

    async def cancel_it() -> None:
        task = asyncio.create_task(agent.run(AgentCall(input="go", step="act")))
        while not (tmp_path / "pids").exists() or " " not in (tmp_path / "pids").read_text():
            await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    wait_until(lambda: not any(alive(pid) for pid in pids))


def test_script_agents_are_told_the_run_id_step_path_and_attempt(tmp_path: Path) -> None:
    """A failing command is attempt 1; resumed, the same step is attempt 2. A Python agent sees the same
    facts as ``context["run"]``."""
    (tmp_path / "facts.py").write_text(
        "import os, sys\n"
        "sys.stdin.read()\n"
        "if os.environ['FLUJO_ATTEMPT'] == '1':\n"
        "    sys.exit('first attempt fails')\n"
        "print(os.environ['FLUJO_RUN_ID'], os.environ['FLUJO_STEP_PATH'], os.environ['FLUJO_ATTEMPT'])\n",
        encoding="utf-8",
    )
    (tmp_path / "facts_py.py").write_text(
        "def facts(input, context):\n    run = context['run']\n"
        "    return f\"{run['run_id']} {run['step_path']} {run['attempt']}\"\n",
        encoding="utf-8",
    )
    (tmp_path / "flow.yaml").write_text(
        f"""\
version: "0.1"
agents:
  py: {{python: "facts_py:facts"}}
  cmd: {{command: [{json.dumps(sys.executable)}, facts.py]}}
steps:
  - {{kind: step, name: first, uses: agents.py}}
  - kind: conditional
    name: pick
    condition_expression: "'a/b'"
    branches:
      a/b:
        - {{kind: step, name: second, uses: agents.cmd}}
""",
        encoding="utf-8",
    )
    env = {"FLUJO_STATE_URI": str(tmp_path / "flujo.db"), "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    with contextlib.chdir(tmp_path):
        failed = flujo_process(["run", "flow.yaml", "--json"], env=env)
        assert failed.returncode != 0
        run_id = json.loads(failed.stdout)["run_id"]
        assert "first attempt fails" in failed.stdout + failed.stderr
        resumed = flujo_process(["resume", run_id, "--json"], env=env)
    assert resumed.returncode == 0, resumed.stderr
    # The branch key "a/b" is one path segment, escaped (docs/durability.md).
    assert json.loads(resumed.stdout)["output"] == f"{run_id} pick/a%2Fb/second 2"
    shown = flujo_process(["lens", "show", run_id, "--json"], env=env)
    steps = {step["path"]: step["output"] for step in json.loads(shown.stdout)["steps"]}
    assert steps["first"] == f"{run_id} first 1"  # replayed on resume, never run again
    # Each start is in the trace. Read as JSON: the printed tree wraps the command's path (this clone's
    # Python) at the width of a pipe, and a long path may split "started, attempt 2" across two lines.
    trace = json.loads(flujo_process(["lens", "trace", run_id, "--json"], env=env).stdout)
    assert _started(trace["spans"]) == [("first", 1), ("pick/a%2Fb/second", 1), ("pick/a%2Fb/second", 2)]


def _started(spans: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(step path, attempt) of each ``agent.started`` event in ``lens trace --json``'s spans, in order."""
    found: list[tuple[str, int]] = []
    for span in spans:  # steps have events; a conditional's branch has children only
        events = span.get("events", [])
        found += [(span["path"], e["payload"]["attempt"]) for e in events if e["kind"] == "agent.started"]
        found += _started(span.get("children", []))
    return found


def test_an_agent_called_outside_the_engine_is_attempt_1() -> None:
    agent = build_agent(
        AgentSpec(name="cmd", command=(sys.executable, "-c", "import os; print(os.environ['FLUJO_ATTEMPT'])")),
        Settings(),
    )
    assert asyncio.run(agent.run(AgentCall(input="", step="s"))).output == 1
    assert signal.SIGKILL  # the module is imported for the Linux-only test above
