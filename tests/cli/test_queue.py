"""Queued runs and workers (docs/scale.md): ``flujo submit`` queues runs, ``flujo worker`` processes execute
each exactly once (counted by the side effects of ``command:`` agents), on SQLite and on a real PostgreSQL;
a worker killed mid-run leaves its run to another, which resumes it with no committed step run again;
SIGTERM is graceful; runs of one thread never overlap; ``flujo cancel`` stops queued and running runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import RunRecord
from core.store import PostgresStore, SqliteStore, open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo_process, wait_until

pytestmark = pytest.mark.slow

FAST = """\
version: "0.1"
agents:
  effect: {command: [sh, -c, 'cat >> "%(dir)s/effects/$FLUJO_RUN_ID"; echo ok']}
steps:
  - {kind: step, name: act, uses: agents.effect}
"""

# A conversation (so runs can share a thread) of two steps; the second waits for the file "go".
GATED = """\
version: "0.1"
agents:
  first: {command: [sh, -c, 'cat > /dev/null; printf x >> "%(dir)s/effects/$FLUJO_RUN_ID.first"; echo ok']}
  gated:
    command:
      - sh
      - -c
      - 'cat > /dev/null; touch "%(dir)s/started/$FLUJO_RUN_ID"; while [ ! -e "%(dir)s/go" ]; do sleep 0.05; done;
        printf x >> "%(dir)s/effects/$FLUJO_RUN_ID.gated"; echo done'
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 1
      body:
        - {kind: step, name: first, uses: agents.first}
        - {kind: step, name: gated, uses: agents.gated}
"""

ASKING = """\
version: "0.1"
agents:
  effect: {command: [sh, -c, 'cat >> "%(dir)s/effects/$FLUJO_RUN_ID"; echo ok']}
  person: {model: scripted, replies: ["July"]}
steps:
  - {kind: hitl, name: month, message: "Which month?"}
  - {kind: step, name: act, uses: agents.effect}
"""


@pytest.fixture(params=["sqlite", "postgres"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_uri"))
    return str(tmp_path / "state" / "flujo.db")


def _workdir(tmp_path: Path, blueprint: str) -> Path:
    for name in ("effects", "started"):
        (tmp_path / name).mkdir(exist_ok=True)
    (tmp_path / "bp.yaml").write_text(blueprint % {"dir": tmp_path}, encoding="utf-8")
    return tmp_path


def _flujo(workdir: Path, uri: str, *args: str) -> subprocess.CompletedProcess[str]:
    with contextlib.chdir(workdir):
        return flujo_process(list(args), env={"FLUJO_STATE_URI": uri})


def _worker(workdir: Path, uri: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "worker", *args],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": uri},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _submit(workdir: Path, uri: str, *args: str) -> list[str]:
    done = _flujo(workdir, uri, "submit", "bp.yaml", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _runs(uri: str) -> dict[str, RunRecord]:
    async def read() -> dict[str, RunRecord]:
        async with await open_store(uri) as store:
            return {run.run_id: run for run in await store.list_runs(limit=10_000)}

    return asyncio.run(read())


def _wait_for(path: Path) -> None:
    """Until ``path`` appears: no deadline, the test's time limit (tests/conftest.py) ends a hang."""
    wait_until(path.exists)


def _finish(worker: subprocess.Popen[str]) -> str:
    _, err = worker.communicate()
    assert worker.returncode == 0, err
    return err


def test_workers_execute_every_queued_run_exactly_once(tmp_path: Path, uri: str) -> None:
    workdir = _workdir(tmp_path, FAST)
    count = 100
    (workdir / "inputs.jsonl").write_text("".join(f'"input {i}"\n' for i in range(count)), encoding="utf-8")
    ids = _submit(workdir, uri, "--inputs", "inputs.jsonl")
    assert len(set(ids)) == count and {r.status for r in _runs(uri).values()} == {"queued"}
    listed = _flujo(workdir, uri, "lens", "list", "--status", "queued", "--limit", "1000").stdout
    assert sorted(line.split()[0] for line in listed.splitlines()[1:]) == sorted(ids)
    workers = [_worker(workdir, uri, "--until-idle") for _ in range(8 if uri.startswith("postgres") else 4)]
    logs = [_finish(worker) for worker in workers]
    effects = {path.name: path.read_text() for path in (workdir / "effects").iterdir()}
    assert sorted(effects) == sorted(ids)  # every run's side effect, each written once
    assert sorted(effects.values()) == sorted(f"input {i}" for i in range(count))
    assert {r.status for r in _runs(uri).values()} == {"completed"}
    started = [line.split()[1] for log in logs for line in log.splitlines() if line.startswith("started ")]
    assert sorted(started) == sorted(ids)  # each run started by exactly one worker
    assert sum(int(log.rsplit(": ", 1)[1].split()[0]) for log in logs if "completed" in log) == count


def test_a_worker_killed_mid_run_leaves_it_to_another_with_no_committed_step_run_again(
    tmp_path: Path, uri: str
) -> None:
    workdir = _workdir(tmp_path, GATED)
    [run_id] = _submit(workdir, uri, "--input", "hello")
    first = _worker(workdir, uri)
    _wait_for(workdir / "started" / run_id)  # step "first" committed; "gated" in flight
    assert _runs(uri)[run_id].status == "running"
    listed = _flujo(workdir, uri, "lens", "list", "--status", "running")
    assert "HELD BY" in listed.stdout and f"pid {first.pid} on" in listed.stdout, listed.stdout
    first.send_signal(signal.SIGKILL)
    first.communicate()
    (workdir / "go").touch()
    log = _finish(_worker(workdir, uri, "--until-idle"))
    assert f"completed {run_id}" in log
    assert (workdir / "effects" / f"{run_id}.first").read_text() == "x"  # committed: not run again
    assert (workdir / "effects" / f"{run_id}.gated").read_text() == "x"
    assert _runs(uri)[run_id].status == "completed"


SAYS = """\
version: "0.1"
agents:
  speaker: {model: scripted, replies: ["%s"]}
steps:
  - {kind: step, name: say, uses: agents.speaker}
"""


def test_a_worker_executes_the_blueprint_as_it_is_when_each_run_was_submitted(tmp_path: Path, uri: str) -> None:
    """One worker, alive throughout: two runs of a blueprint (each with scripted agents of its own: both get
    the first reply), then the file is edited and a third run submitted, which the worker executes as edited
    (the blueprint it loaded for the first two is not used again: the third run's source hash would refuse it)."""
    workdir = _workdir(tmp_path, SAYS % "v1")
    worker = _worker(workdir, uri)
    try:
        first = _submit(workdir, uri, "--input", "one") + _submit(workdir, uri, "--input", "two")
        wait_until(lambda: {_runs(uri)[run_id].status for run_id in first} == {"completed"}, process=worker)
        (workdir / "bp.yaml").write_text(SAYS % "v2", encoding="utf-8")
        [edited] = _submit(workdir, uri, "--input", "three")
        wait_until(lambda: _runs(uri)[edited].status not in ("queued", "running"), process=worker)
    finally:
        worker.send_signal(signal.SIGTERM)
    log = _finish(worker)
    runs = _runs(uri)
    assert [runs[run_id].output for run_id in [*first, edited]] == ["v1", "v1", "v2"], log
    assert runs[edited].status == "completed"


def test_each_run_a_worker_executes_gets_a_scripted_agents_first_reply(tmp_path: Path) -> None:
    """A worker shares a blueprint's compiled pipeline between its runs, but not a scripted agent, which takes
    its replies in turn: each run starts from the first, as with flujo run."""
    workdir = _workdir(tmp_path, SAYS.replace('["%s"]', '["first", "second"]'))
    uri = str(tmp_path / "state" / "flujo.db")
    runs = _submit(workdir, uri, "--input", "one") + _submit(workdir, uri, "--input", "two")
    _finish(_worker(workdir, uri, "--until-idle"))
    assert [_runs(uri)[run_id].output for run_id in runs] == ["first", "first"]


# Three questions; between the first and the second, a step that waits for the file "go".
THREE_QUESTIONS = """\
version: "0.1"
agents:
  gate:
    command:
      - sh
      - -c
      - 'cat > /dev/null; touch "%(dir)s/started/$FLUJO_RUN_ID"; while [ ! -e "%(dir)s/go" ]; do sleep 0.05; done;
        echo ok'
steps:
  - {kind: hitl, name: first, message: "First?"}
  - {kind: step, name: wait, uses: agents.gate}
  - {kind: hitl, name: second, message: "Second?"}
  - {kind: hitl, name: third, message: "Third?"}
"""


def _submitted_run_whose_worker_died(workdir: Path, uri: str) -> str:
    """A run submitted with answers A1–A3 whose worker was SIGKILLed after "first" took A1 (committed) while
    "wait" was in flight; "wait" may then finish."""
    (workdir / "answers.json").write_text('["A1", "A2", "A3"]', encoding="utf-8")
    [run_id] = _submit(workdir, uri, "--input", "hello", "--answers", "answers.json")
    first = _worker(workdir, uri)
    _wait_for(workdir / "started" / run_id)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    (workdir / "go").touch()
    return run_id


def _answers_of(workdir: Path, uri: str, run_id: str) -> dict[str, object]:
    shown = json.loads(_flujo(workdir, uri, "lens", "show", run_id, "--json").stdout)
    return {step["name"]: step["output"] for step in shown["steps"] if step["name"] != "wait"}


def test_a_run_resumed_after_its_worker_died_gives_each_new_question_the_next_answer(tmp_path: Path, uri: str) -> None:
    workdir = _workdir(tmp_path, THREE_QUESTIONS)
    run_id = _submitted_run_whose_worker_died(workdir, uri)
    log = _finish(_worker(workdir, uri, "--until-idle"))
    assert f"completed {run_id}" in log
    assert _answers_of(workdir, uri, run_id) == {
        "first": "A1",
        "second": "A2",
        "third": "A3",
    }  # not A1 given again to "second"


def test_a_submitted_run_resumed_by_hand_after_its_worker_died_keeps_its_next_answers(tmp_path: Path, uri: str) -> None:
    workdir = _workdir(tmp_path, THREE_QUESTIONS)
    run_id = _submitted_run_whose_worker_died(workdir, uri)
    resumed = _flujo(workdir, uri, "resume", run_id, "--no-input")
    assert resumed.returncode == 0, resumed.stderr
    assert _answers_of(workdir, uri, run_id) == {
        "first": "A1",
        "second": "A2",
        "third": "A3",
    }  # the submitted answers, in order


def test_a_run_resumed_inside_a_sub_workflow_after_its_worker_died_gives_each_question_its_own_answer(
    tmp_path: Path, uri: str
) -> None:
    workdir = _workdir(tmp_path, THREE_QUESTIONS)
    (workdir / "bp.yaml").rename(workdir / "inner.yaml")
    (workdir / "bp.yaml").write_text(
        'version: "0.1"\nimports: {inner: inner.yaml}\nsteps:\n'
        '  - {kind: hitl, name: before, message: "Before?"}\n'
        "  - {kind: step, name: sub, uses: imports.inner}\n"
        '  - {kind: hitl, name: after, message: "After?"}\n',
        encoding="utf-8",
    )
    (workdir / "answers.json").write_text('["A0", "A1", "A2", "A3", "A4"]', encoding="utf-8")
    [run_id] = _submit(workdir, uri, "--input", "hello", "--answers", "answers.json")
    first = _worker(workdir, uri)
    _wait_for_any(workdir / "started")  # "before" and the child's "first" committed; the child's "wait" in flight
    first.send_signal(signal.SIGKILL)
    first.communicate()
    (workdir / "go").touch()
    assert f"completed {run_id}" in _finish(_worker(workdir, uri, "--until-idle"))
    [child] = [run.run_id for run in _runs(uri).values() if run.parent_run_id == run_id]
    answers = {}
    for shown_id in (run_id, child):
        shown = json.loads(_flujo(workdir, uri, "lens", "show", shown_id, "--json").stdout)
        answers.update({step["name"]: step["output"] for step in shown["steps"] if step["name"] not in ("wait", "sub")})
    assert answers == {"before": "A0", "first": "A1", "second": "A2", "third": "A3", "after": "A4"}


def _wait_for_any(folder: Path) -> None:
    wait_until(lambda: any(folder.iterdir()))


def test_sigterm_lets_a_run_finish_within_the_grace_period(tmp_path: Path) -> None:
    uri = str(tmp_path / "flujo.db")
    workdir = _workdir(tmp_path, GATED)
    [run_id] = _submit(workdir, uri, "--input", "hello")
    worker = _worker(workdir, uri, "--grace", "60")
    _wait_for(workdir / "started" / run_id)
    worker.send_signal(signal.SIGTERM)
    (workdir / "go").touch()
    log = _finish(worker)
    assert f"completed {run_id}" in log and _runs(uri)[run_id].status == "completed"


def test_sigterm_interrupts_a_run_after_the_grace_period_and_another_worker_resumes_it(tmp_path: Path) -> None:
    uri = str(tmp_path / "flujo.db")
    workdir = _workdir(tmp_path, GATED)
    [run_id] = _submit(workdir, uri, "--input", "hello")
    worker = _worker(workdir, uri, "--grace", "0")
    _wait_for(workdir / "started" / run_id)
    worker.send_signal(signal.SIGTERM)
    log = _finish(worker)
    assert f"interrupted {run_id}" in log
    record = _runs(uri)[run_id]
    assert record.status == "interrupted"
    (workdir / "go").touch()
    assert f"completed {run_id}" in _finish(_worker(workdir, uri, "--until-idle"))
    assert (workdir / "effects" / f"{run_id}.first").read_text() == "x"
    assert _runs(uri)[run_id].status == "completed"


def test_two_runs_of_one_thread_never_run_at_once(tmp_path: Path) -> None:
    uri = str(tmp_path / "flujo.db")
    workdir = _workdir(tmp_path, GATED)
    lines = ['{"input": "one", "thread": "ana"}', '{"input": "two", "thread": "ana"}', '"alone"']
    (workdir / "inputs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    one, two, alone = _submit(workdir, uri, "--inputs", "inputs.jsonl")
    worker = _worker(workdir, uri, "--concurrency", "3", "--until-idle")
    _wait_for(workdir / "started" / one)
    _wait_for(workdir / "started" / alone)  # a run of no thread is not held back: the worker took two runs
    runs = _runs(uri)
    assert runs[two].status == "queued" and not (workdir / "started" / two).exists()
    (workdir / "go").touch()
    _finish(worker)
    runs = _runs(uri)
    assert {runs[r].status for r in (one, two, alone)} == {"completed"}
    assert runs[one].thread == runs[two].thread == "ana" and runs[alone].thread is None


def test_cancel_a_queued_run_and_a_running_one(tmp_path: Path, uri: str) -> None:
    workdir = _workdir(tmp_path, GATED)
    running, queued = _submit(workdir, uri, "--inputs", _lines(workdir, ['"a"', '"b"']))
    worker = _worker(workdir, uri, "--until-idle")  # one at a time: "b" waits behind "a"
    _wait_for(workdir / "started" / running)
    done = _flujo(workdir, uri, "cancel", queued)
    assert done.returncode == 0 and f"cancelled run {queued}" in done.stderr, done.stderr
    done = _flujo(workdir, uri, "cancel", running)
    assert done.returncode == 0 and f"cancelling run {running}" in done.stderr, done.stderr
    log = _finish(worker)
    assert f"cancelled {running}" in log and queued not in log
    runs = _runs(uri)
    assert runs[running].status == runs[queued].status == "cancelled"
    assert not (workdir / "effects" / f"{running}.gated").exists()
    assert not (workdir / "started" / queued).exists()
    done = _flujo(workdir, uri, "cancel", queued)
    assert done.returncode == exit_codes.FAILED and "not queued" in done.stderr


def _lines(workdir: Path, lines: list[str]) -> str:
    (workdir / "inputs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "inputs.jsonl"


def test_inputs_lines_of_both_shapes_with_answers_a_simulated_person_and_a_pause(tmp_path: Path) -> None:
    uri = str(tmp_path / "flujo.db")
    workdir = _workdir(tmp_path, ASKING)
    plain, answered = _submit(
        workdir, uri, "--inputs", _lines(workdir, ['"no answer"', '{"input": "x", "answers": ["June"]}'])
    )
    [simulated] = _submit(workdir, uri, "--input", "y", "--simulate-user", "agents.person")
    log = _finish(_worker(workdir, uri, "--until-idle"))
    runs = _runs(uri)
    assert runs[plain].status == "paused" and f"paused {plain}" in log  # no one to answer: resumable
    assert runs[answered].status == "completed" and (workdir / "effects" / answered).read_text() == "June"
    assert runs[simulated].status == "completed" and (workdir / "effects" / simulated).read_text() == "July"
    resumed = _flujo(workdir, uri, "resume", plain, "--answer", "May")
    assert resumed.returncode == 0, resumed.stderr
    assert (workdir / "effects" / plain).read_text() == "May"


def test_submit_queues_nothing_for_an_invalid_blueprint_or_a_bad_inputs_line(tmp_path: Path) -> None:
    uri = str(tmp_path / "flujo.db")
    workdir = _workdir(tmp_path, FAST)
    (workdir / "bad.yaml").write_text('version: "0.1"\nsteps:\n  - {kind: step, name: a, uses: agents.nope}\n')
    done = _flujo(workdir, uri, "submit", "bad.yaml", "--input", "x")
    assert done.returncode == exit_codes.BLUEPRINT and "nothing ran" in done.stderr
    done = _flujo(workdir, uri, "submit", "bp.yaml", "--inputs", _lines(workdir, ['"ok"', "[1, 2]"]))
    assert done.returncode == exit_codes.USAGE and "inputs.jsonl:2" in done.stderr
    assert not Path(uri).exists() or _runs(uri) == {}


def test_the_worked_example_of_scale_md(tmp_path: Path) -> None:
    """docs/scale.md: a batch of bookings answered by a simulated person, given answers first."""
    uri = str(tmp_path / "flujo.db")
    lines = [
        '"table for the Lopez family"',
        '"table for the Smiths"',
        '{"input": "table for Ada", "answers": ["2", "yes"]}',
    ]
    (tmp_path / "bookings.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert "\n".join(lines) in (ROOT / "docs" / "scale.md").read_text(encoding="utf-8")
    blueprint = str(ROOT / "docs" / "examples" / "persona.yaml")
    ids = _submit_file(tmp_path, uri, blueprint, "--inputs", "bookings.jsonl", "--simulate-user", "agents.tester")
    log = _finish(_worker(tmp_path, uri, "--concurrency", "4", "--until-idle"))
    assert "3 run(s): 3 completed" in log
    runs = _runs(uri)
    assert [runs[i].output for i in ids] == ["4 guests, confirmed: true"] * 2 + ["2 guests, confirmed: true"]


def _submit_file(workdir: Path, uri: str, blueprint: str, *args: str) -> list[str]:
    done = _flujo(workdir, uri, "submit", blueprint, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


TWO_QUESTIONS = """\
version: "0.1"
steps:
  - {kind: hitl, name: month, message: "Which month?"}
  - {kind: hitl, name: day, message: "Which day?"}
"""


def test_a_queued_run_resumed_by_hand_leaves_the_queue_whether_it_pauses_or_completes(tmp_path: Path, uri: str) -> None:
    workdir = _workdir(tmp_path, TWO_QUESTIONS)
    pausing, completing = _submit(workdir, uri, "--inputs", _lines(workdir, ['"a"', '"b"']))
    done = _flujo(workdir, uri, "resume", pausing, "--answer", "June", "--no-input")
    assert done.returncode == exit_codes.PAUSED, done.stderr
    done = _flujo(workdir, uri, "resume", completing, "--answer", "June", "--answer", "3", "--no-input")
    assert done.returncode == exit_codes.OK, done.stderr
    log = _finish(_worker(workdir, uri, "--until-idle"))
    assert "started" not in log and "0 run(s)" in log  # neither is taken again
    runs = _runs(uri)
    assert (runs[pausing].status, runs[completing].status) == ("paused", "completed")
    assert runs[completing].output == "3"
    done = _flujo(workdir, uri, "cancel", pausing)  # paused by hand: not the queue's to cancel
    assert done.returncode == exit_codes.FAILED and f"run {pausing} is paused, not queued" in done.stderr
    done = _flujo(workdir, uri, "resume", pausing, "--answer", "4", "--no-input")
    assert done.returncode == exit_codes.OK and done.stdout.strip() == "4", done.stderr


def _thread_run(workdir: Path, uri: str, text: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", "bp.yaml", "--thread", "ana", "--input", text],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": uri},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _started_run(workdir: Path) -> str:
    _wait_for_any(workdir / "started")
    return next((workdir / "started").iterdir()).name


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts; those still running when it ends (it failed) are killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_a_run_of_a_thread_is_refused_while_a_worker_executes_another_run_of_it(
    tmp_path: Path, uri: str, processes: list[subprocess.Popen[str]]
) -> None:
    workdir = _workdir(tmp_path, GATED)
    [queued] = _submit(workdir, uri, "--input", "one", "--thread", "ana")
    worker = _worker(workdir, uri, "--until-idle")
    processes.append(worker)
    _wait_for(workdir / "started" / queued)
    refused = _flujo(workdir, uri, "run", "bp.yaml", "--thread", "ana", "--input", "two")
    assert refused.returncode == exit_codes.FAILED, refused.stderr
    assert f"error: thread ana is in use: run {queued} is being executed by pid {worker.pid} on" in refused.stderr
    assert list(_runs(uri)) == [queued]  # nothing was stored for the refused run
    (workdir / "go").touch()
    assert f"completed {queued}" in _finish(worker)
    later = _flujo(workdir, uri, "run", "bp.yaml", "--thread", "ana", "--input", "two")
    assert later.returncode == exit_codes.OK, later.stderr
    assert "continuing with 2 turn(s) from 1 earlier run(s)" in later.stderr


def test_a_worker_passes_over_a_queued_run_whose_thread_a_direct_run_holds(
    tmp_path: Path, uri: str, processes: list[subprocess.Popen[str]]
) -> None:
    workdir = _workdir(tmp_path, GATED)
    direct = _thread_run(workdir, uri, "by hand")
    processes.append(direct)
    direct_id = _started_run(workdir)
    threaded, alone = _submit(workdir, uri, "--inputs", _lines(workdir, ['{"input": "q", "thread": "ana"}', '"p"']))
    worker = _worker(workdir, uri, "--until-idle")  # one run at a time, oldest first: "q" is looked at first
    processes.append(worker)
    _wait_for(workdir / "started" / alone)  # so "q" was passed over in the pick that took "p"
    assert not (workdir / "started" / threaded).exists() and _runs(uri)[threaded].status == "queued"
    refused = _flujo(workdir, uri, "resume", threaded)  # by hand: refused as well, and left in the queue
    assert refused.returncode == exit_codes.FAILED and f"run {direct_id} is being executed" in refused.stderr
    (workdir / "go").touch()
    _, err = direct.communicate()
    assert direct.returncode == exit_codes.OK, err
    log = _finish(worker)
    assert f"completed {threaded}" in log and f"completed {alone}" in log
    turns = _flujo(workdir, uri, "threads", "show", "ana", "--json")
    runs_in_order = [turn["run_id"] for turn in json.loads(turns.stdout)["turns"]]
    assert runs_in_order == [direct_id] * 2 + [threaded] * 2


# A question answered up front, a step, one that waits for the file "go" (and says which attempt it is), and
# a second question.
RETAKEN = """\
version: "0.1"
agents:
  first: {command: [sh, -c, 'cat > /dev/null; printf x >> "%(dir)s/effects/$FLUJO_RUN_ID.first"; echo ok']}
  gated:
    command:
      - sh
      - -c
      - 'cat > /dev/null; touch "%(dir)s/started/$FLUJO_RUN_ID"; while [ ! -e "%(dir)s/go" ]; do sleep 0.05; done;
        printf "$FLUJO_ATTEMPT" >> "%(dir)s/effects/$FLUJO_RUN_ID.gated"; echo done'
steps:
  - {kind: hitl, name: month, message: "Which month?"}
  - {kind: step, name: first, uses: agents.first}
  - {kind: step, name: gated, uses: agents.gated}
  - {kind: hitl, name: day, message: "Which day?"}
"""


def test_a_run_taken_again_after_its_worker_was_killed_is_one_transaction_to_take_and_one_to_finish(
    tmp_path: Path, uri: str
) -> None:
    """A worker SIGKILLed while "gated" runs (the answer to "month" and "first" committed); another worker (in
    this process, its statements counted) takes the run again and finishes it: nothing is read outside the
    transaction that takes it (its journal, attempts and answers given come with it), the transactions
    between that one and the one that finishes it each record what the run did, "first" is not run again,
    "gated" runs as its second attempt, and each question gets its own answer."""
    workdir = _workdir(tmp_path, RETAKEN)
    (workdir / "answers.json").write_text('["July", "Monday"]', encoding="utf-8")
    [run_id] = _submit(workdir, uri, "--input", "hello", "--answers", "answers.json")
    first = _worker(workdir, uri)
    _wait_for(workdir / "started" / run_id)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    (workdir / "go").touch()
    with contextlib.chdir(workdir):
        if uri.startswith("postgres"):
            _retake_on_postgresql(uri, run_id)
        else:
            _retake_on_sqlite(uri, run_id)
    assert (workdir / "effects" / f"{run_id}.first").read_text() == "x"  # committed: not run again
    assert (workdir / "effects" / f"{run_id}.gated").read_text() == "2"  # the killed one was attempt 1
    assert _runs(uri)[run_id].status == "completed"
    assert _answers_of(workdir, uri, run_id) == {"month": "July", "first": "ok", "gated": "done", "day": "Monday"}


async def _retake(store: SqliteStore | PostgresStore, run_id: str) -> None:
    """Take the run again and execute it as ``flujo worker`` does (its ``_execute``), in this process; close
    the store."""
    import io

    from rich.console import Console

    from flujo_cli.commands.worker import _Worker

    log = io.StringIO()
    worker = _Worker(
        store=store, state=None, console=Console(file=log), concurrency=1, grace_s=0.0, reconnect_for_s=0.0
    )
    try:
        taken = await store.take_queued()
        assert taken is not None and taken.record.run_id == run_id and taken.journal is not None
        await worker._execute(taken)
        worker._flush()
        assert f"completed {run_id}" in log.getvalue()
    finally:
        await store.close()


def _retake_on_sqlite(uri: str, run_id: str) -> None:
    writes: list[str] = []  # the statements of its writer connection: every transaction
    reads: list[str] = []  # those of its reader connection (aiosqlite's)

    async def retake() -> None:
        store = await SqliteStore(uri).open()
        assert store._writer is not None and store._db is not None
        store._writer._conn.set_trace_callback(writes.append)
        reader = store._db
        await reader._execute(reader._conn.set_trace_callback, reads.append)  # type: ignore[no-untyped-call]
        await _retake(store, run_id)

    asyncio.run(retake())
    assert reads == []  # nothing read outside a transaction
    transactions: list[list[str]] = []
    for statement in writes:
        if statement == "BEGIN IMMEDIATE":
            transactions.append([])
        transactions[-1].append(statement)
    assert all(t[-1] == "COMMIT" for t in transactions)
    take, *executed, finish = transactions
    assert any("UPDATE queue SET taken = 1" in s for s in take)
    assert any("FROM steps" in s for s in take) and any("FROM events" in s for s in take)
    assert any("DELETE FROM queue" in s for s in finish) and any("UPDATE runs" in s for s in finish)
    for transaction in executed:  # what the run did: its attempt, its process, its steps
        assert any("INTO steps" in s or "INTO events" in s for s in transaction), transaction
        assert not any("queue" in s for s in transaction), transaction
    assert not any("SELECT" in s and "FROM texts" not in s for t in executed for s in t)


def _retake_on_postgresql(uri: str, run_id: str) -> None:
    from tests.support.round_trips import RoundTripProxy

    async def retake(proxied: str) -> None:
        store = await open_store(proxied)
        assert isinstance(store, PostgresStore)
        await _retake(store, run_id)

    with RoundTripProxy(uri) as proxy:
        asyncio.run(retake(proxy.proxied))
        sent = proxy.statements
    sent = sent[sent.index("BEGIN") :]  # from the take on (opening the store looked at its schema)
    assert sent.count("BEGIN") == 1 and sent.count("COMMIT") == 1  # the take; every other write is one statement
    commit = sent.index("COMMIT")
    take, after = sent[:commit], sent[commit + 1 :]
    assert any("UPDATE queue SET taken = 1" in s for s in take)
    assert any("FROM steps" in s for s in take) and any("FROM events" in s for s in take)
    assert len([s for s in after if "DELETE FROM queue" in s]) == 1  # the finish
    reads = [s for s in after if s.startswith("SELECT") and "advisory" not in s and "nextval" not in s]
    assert all(s.startswith("SELECT id, body FROM texts WHERE run_id") for s in reads), reads  # a step's texts
