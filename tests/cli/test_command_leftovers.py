"""What a ``kill -9`` of flujo leaves of a ``command:`` agent: the command dies with flujo (its parent-death
signal), but what the command started lives on in its process group. A resumed run ends it before it runs
the step again (docs/durability.md); nothing else is ever ended."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core.agents.child_process import end_leftovers, group_mark
from core.model import codec
from tests.support.cli_helpers import ROOT, alive, flujo_process, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups are read from /proc")

# Attempt 1 starts a process of its own (as a wrapper or `sh -c "sleep 7; ..."` does), says its pid, and
# waits to be killed; a later attempt reports which attempt it is.
WRAPPER = """\
import os, pathlib, subprocess, sys, time
here = pathlib.Path(sys.argv[1])
sys.stdin.read()
if os.environ["FLUJO_ATTEMPT"] == "1":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    (here / "pids.tmp").write_text(f"{os.getpid()} {child.pid}")
    (here / "pids.tmp").rename(here / "pids")
    time.sleep(300)
print("attempt " + os.environ["FLUJO_ATTEMPT"])
"""

BLUEPRINT = """\
version: "0.1"
agents:
  wrapper: {command: [%(python)s, %(script)s, %(here)s]}
steps:
  - {kind: step, name: act, uses: agents.wrapper}
"""


@pytest.mark.slow
def test_resume_ends_what_a_killed_runs_command_started_before_running_the_step_again(tmp_path: Path) -> None:
    (tmp_path / "wrapper.py").write_text(WRAPPER, encoding="utf-8")
    script = json.dumps(str(tmp_path / "wrapper.py"))
    blueprint = BLUEPRINT % {"python": json.dumps(sys.executable), "script": script, "here": json.dumps(str(tmp_path))}
    (tmp_path / "flow.yaml").write_text(blueprint, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    run = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", str(tmp_path / "flow.yaml")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    grandchild = 0
    try:
        wait_until(lambda: (tmp_path / "pids").exists(), process=run)  # the command started its own process
        command, grandchild = (int(pid) for pid in (tmp_path / "pids").read_text().split())
        run.kill()  # SIGKILL: flujo can clean nothing up
        run.communicate(timeout=60)
        wait_until(lambda: not alive(command))  # the command died with flujo (parent-death signal)
        assert alive(grandchild)  # what the command started outlives it: the defect this fixes
        with contextlib.closing(sqlite3.connect(tmp_path / "flujo.db")) as db:
            [(run_id,)] = db.execute("SELECT run_id FROM runs").fetchall()
            process = codec.kind_code("agent.process")  # as the store writes the kind (m011)
            [(payload,)] = db.execute("SELECT payload FROM events WHERE kind = ?", (process,)).fetchall()
        assert json.loads(codec.grow(codec.unpack(payload)))["group"] == command
        resumed = flujo_process(["resume", run_id, "--json"], env={"FLUJO_STATE_URI": str(tmp_path / "flujo.db")})
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["output"] == "attempt 2"
        assert not alive(grandchild)  # ended before the step ran again, by the resume itself
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
        if grandchild and alive(grandchild):
            os.kill(grandchild, 9)


def test_only_the_runs_own_processes_of_that_group_are_ended(tmp_path: Path) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
    other = subprocess.Popen(sleeper, process_group=0, env={**os.environ, "FLUJO_RUN_ID": "another-run"})
    ours = subprocess.Popen(sleeper, process_group=0, env={**os.environ, "FLUJO_RUN_ID": "our-run"})
    try:
        other_mark, ours_mark = group_mark(other.pid), group_mark(ours.pid)
        assert other_mark is not None and ours_mark is not None
        boot, since = ours_mark
        assert end_leftovers(other.pid, boot=boot, since=other_mark[1], run_id="our-run") == 0  # not the run's
        assert end_leftovers(ours.pid, boot=boot, since=since + 10**9, run_id="our-run") == 0  # a later group
        assert end_leftovers(ours.pid, boot="another boot", since=since, run_id="our-run") == 0  # rebooted since
        assert other.poll() is None and ours.poll() is None
        assert end_leftovers(ours.pid, boot=boot, since=since, run_id="our-run") == 1
        assert ours.wait(timeout=60) == -9 and other.poll() is None
    finally:
        for process in (other, ours):
            process.kill()
            process.wait()
