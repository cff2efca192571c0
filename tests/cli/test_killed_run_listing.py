"""A run whose process was killed is listed as interrupted, and resumes at once (docs/lens.md, durability.md).

A real ``flujo run`` is stopped in the middle of its work (a ``command:`` agent that waits on a FIFO no one
writes), SIGKILLed, and then: ``lens list`` shows the run ``interrupted (process N is gone)`` (plain and
``--json``), not ``running`` held by the dead process; ``lens show`` says interrupted too; and ``flujo
resume`` takes it at once and completes it. While the process lives, the run is ``running``, held by it.
On SQLite and on a real PostgreSQL.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import ROOT, flujo_process

pytestmark = pytest.mark.slow

# The first call says it started (its pid, into the FIFO "started") and then waits on the FIFO "release",
# which nobody writes: the run is busy in its step until the test kills it. Later calls answer at once.
AGENT = """\
import os, sys
folder = sys.argv[1]
sys.stdin.read()
attempts = os.path.join(folder, "attempts")
first = not os.path.exists(attempts)
with open(attempts, "a") as out:
    out.write("x")
if first:
    with open(os.path.join(folder, "started"), "w") as started:
        started.write(str(os.getpid()))
    open(os.path.join(folder, "release")).read()
print("done")
"""

BLUEPRINT = """\
version: "0.1"
name: long_work
agents:
  worker: {command: [%(python)s, %(agent)s, %(folder)s]}
steps:
  - {kind: step, name: work, uses: agents.worker}
"""

PARENT = """\
version: "0.1"
name: parent
imports: {long: child.yaml}
steps:
  - {kind: step, name: work, uses: imports.long}
"""


@pytest.fixture(params=["sqlite", "postgres"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_uri"))
    return str(tmp_path / "state" / "flujo.db")


def _flujo(folder: Path, uri: str, *args: str) -> subprocess.CompletedProcess[str]:
    with contextlib.chdir(folder):
        return flujo_process(list(args), env={"FLUJO_STATE_URI": uri})


def _listed(folder: Path, uri: str) -> dict[str, Any]:
    done = _flujo(folder, uri, "lens", "list", "--json")
    assert done.returncode == 0, done.stderr
    [run] = json.loads(done.stdout)["runs"]
    assert isinstance(run, dict)
    return run


@contextlib.contextmanager
def _busy_run(folder: Path, uri: str, *, child: bool = False) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A ``flujo run`` inside its agent call, waiting there; with the pid of the agent's process. ``child``:
    the agent's step is in a sub-workflow, whose child run the run's process executes."""
    (folder / "agent.py").write_text(AGENT, encoding="utf-8")
    names = {"python": sys.executable, "agent": folder / "agent.py", "folder": folder}
    blueprint = BLUEPRINT % {k: json.dumps(str(v)) for k, v in names.items()}
    (folder / ("child.yaml" if child else "bp.yaml")).write_text(blueprint, encoding="utf-8")
    if child:
        (folder / "bp.yaml").write_text(PARENT, encoding="utf-8")
    for fifo in ("started", "release"):
        os.mkfifo(folder / fifo)
    started = os.open(folder / "started", os.O_RDONLY | os.O_NONBLOCK)  # before the agent opens it to write
    agent = 0
    run = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", "bp.yaml", "--input", "hello"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": uri},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([started], [], [], 120)  # the event: the agent is running
        assert ready, f"the agent never started: {run.poll()}"
        agent = int(os.read(started, 64))
        yield run, agent
    finally:
        os.close(started)
        if run.poll() is None:
            run.kill()
        run.communicate(timeout=60)
        if agent:
            with contextlib.suppress(ProcessLookupError):
                os.kill(agent, signal.SIGKILL)  # left waiting on "release" by the run killed above


def test_a_killed_run_is_listed_interrupted_and_resumes_at_once(tmp_path: Path, uri: str) -> None:
    with _busy_run(tmp_path, uri) as (run, _):
        live = _listed(tmp_path, uri)
        assert (live["status"], live["status_note"]) == ("running", None)
        plain = _flujo(tmp_path, uri, "lens", "list").stdout
        assert "HELD BY" in plain and f"pid {run.pid} on " in plain, plain

        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
        run_id = live["run_id"]
        gone = _listed(tmp_path, uri)
        deadline = time.monotonic() + 60  # PostgreSQL drops the session's locks once it sees it end
        while gone["status"] == "running" and uri.startswith("postgres") and time.monotonic() < deadline:
            time.sleep(0.05)
            gone = _listed(tmp_path, uri)
        assert (gone["run_id"], gone["status"], gone["status_note"]) == (
            run_id, "interrupted", f"process {run.pid} is gone",
        )  # fmt: skip

        plain = _flujo(tmp_path, uri, "lens", "list").stdout
        [line] = [line for line in plain.splitlines() if line.startswith(run_id)]
        assert f"⏹ interrupted (process {run.pid} is gone)" in line, plain
        assert "HELD BY" not in plain, plain
        for status, listed in (("interrupted", True), ("running", False)):
            done = _flujo(tmp_path, uri, "lens", "list", "--status", status, "--json")
            assert [r["run_id"] for r in json.loads(done.stdout)["runs"]] == ([run_id] if listed else [])
        shown = json.loads(_flujo(tmp_path, uri, "lens", "show", run_id, "--json").stdout)
        assert shown["run"]["status"] == "interrupted"

        resumed = _flujo(tmp_path, uri, "resume", run_id, "--json")
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["output"] == "done"
        done = _listed(tmp_path, uri)
        assert (done["status"], done["status_note"]) == ("completed", None)


def test_the_child_run_of_a_killed_run_is_listed_interrupted_too(tmp_path: Path) -> None:
    # A child run is never claimed (its parent's process executes it): it was listed "running" for ever.
    uri = str(tmp_path / "state" / "flujo.db")
    with _busy_run(tmp_path, uri, child=True) as (run, _):
        live = json.loads(_flujo(tmp_path, uri, "lens", "list", "--json").stdout)["runs"]
        assert [r["status"] for r in live] == ["running", "running"]  # the run and its child
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
        gone = json.loads(_flujo(tmp_path, uri, "lens", "list", "--json").stdout)["runs"]
        assert sorted((r["parent_run_id"] is None, r["status"], r["status_note"]) for r in gone) == [
            (False, "interrupted", "its process is gone"),
            (True, "interrupted", f"process {run.pid} is gone"),
        ]
        [child] = [r["run_id"] for r in gone if r["parent_run_id"] is not None]
        shown = json.loads(_flujo(tmp_path, uri, "lens", "show", child, "--json").stdout)
        assert shown["run"]["status"] == "interrupted"
        listed = _flujo(tmp_path, uri, "lens", "list", "--status", "running", "--json").stdout
        assert json.loads(listed)["runs"] == []

        [parent] = [r["run_id"] for r in gone if r["parent_run_id"] is None]
        resumed = _flujo(tmp_path, uri, "resume", parent, "--json")
        assert resumed.returncode == 0, resumed.stderr
        done = json.loads(_flujo(tmp_path, uri, "lens", "list", "--json").stdout)["runs"]
        assert {r["status"] for r in done} == {"completed"}
