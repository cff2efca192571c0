"""The real ``flujo`` command on a real PostgreSQL (tests/support/postgres_server.py): a run crashed with SIGKILL
resumes in another process at once with no committed step run again, 16 processes run at once with no row
lost and under the server's max_connections, bad stores are one line and exit code 7 without a password,
and ``flujo store copy`` moves a store SQLite → PostgreSQL → SQLite with nothing lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core import RunRecord, RunStore
from core.store import open_store
from flujo_cli import exit_codes
from tests.cli.test_durability import ANSWERS, BLUEPRINT, _answer_args
from tests.support.cli_helpers import ROOT, flujo, flujo_process, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "chat.yaml").write_text(BLUEPRINT, encoding="utf-8")
    return tmp_path


def _flujo(workdir: Path, uri: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    with contextlib.chdir(workdir):
        return flujo_process(list(args), env={"FLUJO_STATE_URI": uri, **(env or {})})


def _sql(uri: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri, autocommit=True) as db:
        cursor = db.execute(sql)  # type: ignore[arg-type]  # the tests' own queries
        return cursor.fetchall() if cursor.description else []


def test_a_run_killed_mid_step_resumes_in_another_process_at_once_without_rerunning_a_step(
    workdir: Path, postgres_uri: str
) -> None:
    calls = workdir / "calls"
    crashed = _flujo(workdir, postgres_uri, "run", "chat.yaml", *_answer_args(ANSWERS),
                     env={"DURABILITY_KILL_AT": f"{calls}:3"})  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    [(run_id, status)] = _sql(postgres_uri, "SELECT run_id, status FROM runs")
    assert status == "running"  # what a crash leaves behind; its claim died with its connection
    committed = _sql(postgres_uri, "SELECT path FROM steps WHERE kind = 'step' ORDER BY seq")
    assert [path for (path,) in committed] == ["chat/1/clarify", "chat/2/clarify"]

    answered = _sql(postgres_uri, f"SELECT count(*) FROM steps WHERE kind = 'hitl' AND run_id = '{run_id}'")[0][0]
    counting = {"DURABILITY_KILL_AT": f"{calls}:99"}  # counts the calls, kills none
    resumed = _flujo(workdir, postgres_uri, "resume", run_id[:8], "--json", *_answer_args(ANSWERS[answered:]),
                     env=counting)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["status"] == "completed" and result["output"].count("User:") == 4  # none lost, none doubled
    # The run makes 4 agent calls: 3 before the crash (the third died in flight), then only the 2 not
    # committed (re-running the committed ones would make 7).
    assert calls.read_text() == "5"
    assert _sql(postgres_uri, "SELECT status FROM runs") == [("completed",)]


def test_a_run_another_process_executes_is_refused_until_that_process_is_killed(
    workdir: Path, postgres_uri: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": postgres_uri,
           "DURABILITY_HOLD": str(workdir / "go")}  # fmt: skip
    with contextlib.chdir(workdir):
        holder = subprocess.Popen(
            [sys.executable, "-m", "flujo_cli.main", "run", "chat.yaml", *_answer_args(ANSWERS)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
    try:
        wait_until((workdir / "go.waiting").exists, process=holder)  # inside its first agent call, claim held
        [(run_id,)] = _sql(postgres_uri, "SELECT run_id FROM runs")
        refused = _flujo(workdir, postgres_uri, "resume", run_id, *_answer_args(ANSWERS[1:]))
        assert refused.returncode == exit_codes.FAILED, refused.stderr
        assert f"run {run_id} is being executed by another flujo process (pid {holder.pid} on " in refused.stderr
        holder.kill()  # SIGKILL: the server ends its session and drops the claim
        holder.wait()
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.communicate()
    resumed = _flujo(workdir, postgres_uri, "resume", run_id, "--json", *_answer_args(ANSWERS[1:]))
    assert resumed.returncode == 0, resumed.stderr
    assert _sql(postgres_uri, "SELECT status FROM runs") == [("completed",)]


def test_sixteen_processes_run_on_one_postgresql_at_once(
    workdir: Path, postgres_uri: str, postgres_server: str
) -> None:
    peak = _ConnectionWatch(postgres_server)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": postgres_uri}
    with contextlib.chdir(workdir), peak:
        processes = [
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "flujo_cli.main", "run", "chat.yaml", "--json"),
                    *_answer_args([f"{answer} (writer {n:02})" for answer in ANSWERS]),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for n in range(16)
        ]
        results = [process.communicate() for process in processes]
    failed = {n: err for n, ((_, err), p) in enumerate(zip(results, processes, strict=True)) if p.returncode != 0}
    assert not failed, "\n".join(f"writer {n} exited {processes[n].returncode}:\n{err}" for n, err in failed.items())
    outputs = [json.loads(out) for out, _ in results]
    assert len({result["run_id"] for result in outputs}) == 16
    for result in outputs:
        writer = result["output"].split("(writer ")[1][:2]
        assert all(f"(writer {writer})" in line for line in result["output"].splitlines() if line.startswith("User"))
    per_run = _sql(postgres_uri, "SELECT run_id, count(*) FROM steps WHERE status = 'completed' GROUP BY run_id")
    assert len(per_run) == 16 and len({count for _, count in per_run}) == 1  # every run has all its steps
    events = _sql(postgres_uri, "SELECT run_id, count(*) FROM events GROUP BY run_id")
    assert len(events) == 16 and len({count for _, count in events}) == 1
    assert _sql(postgres_uri, "SELECT count(*) FROM runs WHERE status = 'completed'") == [(16,)]
    max_connections = int(_sql(postgres_server, "SHOW max_connections")[0][0])
    # With the default pool settings: at most pool_max_size (4) + 1 (claims) connections per process.
    print(f"\n16 processes: at most {peak.most} connections at once (max_connections {max_connections})")
    assert 0 < peak.most <= 16 * 5 < max_connections


class _ConnectionWatch:
    """Counts flujo's connections to the server (``pg_stat_activity``) while the block runs; ``most`` is
    the largest count seen."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.most = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        with psycopg.connect(self.uri, autocommit=True) as db:
            while not self._done.wait(0.02):
                row = db.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'flujo'").fetchone()
                self.most = max(self.most, int(row[0]) if row else 0)

    def __enter__(self) -> _ConnectionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=30)


# --- bad stores: one line, exit code 7, never a password --------------------------------------------


def _one_line_error(code: int, err: str, secret: str) -> str:
    assert code == exit_codes.STORE, err
    assert "Traceback" not in err and secret not in err
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: "), err
    return lines[0]


def test_an_unreachable_server_is_one_line(state_db: Path) -> None:
    with contextlib.closing(__import__("socket").socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once closed
    uri = f"postgresql://flujo:hunter2-secret@127.0.0.1:{port}/runs"
    for args in (["lens", "list"], ["resume", "abc"], ["threads", "list"]):
        code, _, err = flujo([*args, "--state", uri])
        line = _one_line_error(code, err, "hunter2-secret")
        assert line.startswith(f"error: cannot reach the PostgreSQL server of postgresql://flujo:***@127.0.0.1:{port}")


def test_a_uri_too_malformed_to_parse_keeps_its_password_out_of_the_error(state_db: Path) -> None:
    # The driver quotes the whole URI in its message; an unclosed [ made the password unreadable to the mask.
    for uri in ("postgresql://flujo:hunter2-secret@[::1", "postgresql://flujo:hunter2%2Dsecret@[::1/runs"):
        code, _, err = flujo(["lens", "list", "--state", uri])
        assert code == exit_codes.STORE and "Traceback" not in err, err
        assert "hunter2" not in err and "flujo:***@" in err, err


def test_wrong_credentials_are_one_line(state_db: Path, postgres_server: str) -> None:
    uri = postgres_server.replace(":pg-test-s3cret@", ":wrong-s3cret@")
    code, _, err = flujo(["lens", "list", "--state", uri])
    assert _one_line_error(code, err, "wrong-s3cret").startswith("error: PostgreSQL refused the credentials for ")


def test_missing_permissions_are_one_line_and_nothing_is_created(
    state_db: Path, workdir: Path, postgres_server: str
) -> None:
    _sql(postgres_server, "DROP ROLE IF EXISTS reader")
    _sql(postgres_server, "CREATE ROLE reader LOGIN PASSWORD 'reader-s3cret'")
    _sql(postgres_server, "CREATE SCHEMA IF NOT EXISTS locked")  # owned by postgres: reader may not create in it
    uri = postgres_server.replace("postgres:pg-test-s3cret@", "reader:reader-s3cret@")
    uri += "?options=-csearch_path%3Dlocked"
    run = ["run", str(workdir / "chat.yaml"), "--state", uri, *_answer_args(ANSWERS)]
    code, _, err = flujo(run)  # no USAGE on the schema: it is not even in its search_path
    assert "no schema of postgresql://reader:***@" in _one_line_error(code, err, "reader-s3cret")
    _sql(postgres_server, "GRANT USAGE ON SCHEMA locked TO reader")
    code, _, err = flujo(run)  # USAGE, but no CREATE
    assert "permission denied for schema locked" in _one_line_error(code, err, "reader-s3cret")
    assert _sql(postgres_server, "SELECT to_regclass('locked.schema_migrations')") == [(None,)]


def test_a_newer_schema_is_one_line_and_nothing_is_lost(state_db: Path, postgres_uri: str) -> None:
    async def seed() -> None:
        async with await open_store(postgres_uri) as store:
            await store.create_run(RunRecord("kept", "demo", "completed", created_at=1.0))

    asyncio.run(seed())
    _sql(postgres_uri, "INSERT INTO schema_migrations (name, applied_at) VALUES ('m999_from_the_future', 0)")
    code, _, err = flujo(["lens", "show", "kept", "--state", postgres_uri])
    assert "was written by a newer flujo" in _one_line_error(code, err, "pg-test-s3cret")
    assert _sql(postgres_uri, "SELECT run_id, status FROM runs") == [("kept", "completed")]


def test_lens_names_the_postgresql_store_without_its_password(state_db: Path, postgres_uri: str) -> None:
    asyncio.run(_open_and_close(postgres_uri))
    code, out, err = flujo(["lens", "show", "nope", "--state", postgres_uri])
    assert (code, out) == (exit_codes.FAILED, "") and "pg-test-s3cret" not in err
    assert err.startswith("error: no run matches 'nope' in postgresql://postgres:***@127.0.0.1:")
    assert "--state URI" in err


async def _open_and_close(uri: str) -> None:
    await (await open_store(uri)).close()


# --- flujo store copy ----------------------------------------------------------------------------------


async def _everything(store: RunStore) -> dict[str, Any]:
    """All a store holds, read through the store interface."""
    runs = await store.list_runs(limit=1000)
    return {
        "runs": runs,
        "steps": {run.run_id: await store.steps(run.run_id) for run in runs},
        "events": {run.run_id: await store.events(run.run_id) for run in runs},
        "threads": await store.list_threads(),
        "turns": {t.name: await store.thread_turns(t.name) for t in await store.list_threads()},
    }


async def _read(uri: str) -> dict[str, Any]:
    async with await open_store(uri, mode="read") as store:
        return await _everything(store)


def test_store_copy_round_trip_sqlite_postgresql_sqlite(state_db: Path, workdir: Path, postgres_uri: str) -> None:
    first = str(workdir / "first.db")
    chat = str(workdir / "chat.yaml")
    for _ in range(2):  # real runs: a conversation in a thread, and a paused run
        code, _, err = flujo(["run", chat, "--state", first, "--thread", "offsite", *_answer_args(ANSWERS)])
        assert code == exit_codes.OK, err
    code, out, err = flujo(["run", chat, "--state", first, "--json", "--no-input", *_answer_args(ANSWERS[:2])])
    assert code == exit_codes.PAUSED, err
    paused_id = json.loads(out)["run_id"]

    code, _, err = flujo(["store", "copy", first, postgres_uri])
    assert code == exit_codes.OK, err
    assert "copied 3 runs (" in err and "the counts read back match" in err and "pg-test-s3cret" not in err
    code, out, err = flujo(["store", "copy", postgres_uri, str(workdir / "back.db"), "--json"])
    assert code == exit_codes.OK, err
    counts = json.loads(out)
    assert counts["runs"] == 3 and counts["turns"] == 10 and counts["events"] > counts["steps"] > 0
    assert counts["from"].startswith("postgresql://postgres:***@") and counts["to"] == str(workdir / "back.db")

    original = asyncio.run(_read(first))
    assert asyncio.run(_read(postgres_uri)) == original
    assert asyncio.run(_read(str(workdir / "back.db"))) == original

    # The copy resumes where the original paused, from PostgreSQL.
    code, _, err = flujo(["resume", paused_id, "--state", postgres_uri, *_answer_args(ANSWERS[2:])])
    assert code == exit_codes.OK, err

    code, _, err = flujo(["store", "copy", first, postgres_uri])  # into a store that holds runs
    assert code == exit_codes.STORE and "error: the store to copy into already holds runs" in err
    code, _, err = flujo(["store", "copy", first, first])
    assert code == exit_codes.USAGE and "FROM and TO are the same store" in err
    code, _, err = flujo(["store", "copy", str(workdir / "nowhere.db"), str(workdir / "x.db")])
    assert code == exit_codes.STORE and "there is no run store at" in err
    assert not (workdir / "nowhere.db").exists() and not (workdir / "x.db").exists()
