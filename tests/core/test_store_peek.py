"""The quick look shell completion takes at a run store (core/store/peek.py), on SQLite and on a real PostgreSQL
server: the newest top-level runs (by id prefix, by status), the threads, a run's steps and blueprint file;
nothing (never an error) from a store that is missing, unreachable or not a flujo store; and where the store
is (``project_state_uri``), found without the settings, as ``load_settings`` finds it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core import RunRecord, StepRecord, load_settings
from core.store import describe, open_store, peek_store, project_state_uri


async def _fill(uri: str) -> None:
    async with await open_store(uri) as store:
        for run_id, created_at, status, thread in (
            ("aa11", 10.0, "completed", "trip"),
            ("aa22", 20.0, "paused", None),
            ("bb33", 30.0, "failed", "trip"),
            ("cc44", 40.0, "completed", "work"),
        ):
            await store.create_run(
                RunRecord(run_id, "chat", status, source="/bp/chat.yaml", created_at=created_at, thread=thread)
            )
        await store.create_run(RunRecord("aa99", "review", "completed", created_at=50.0, parent_run_id="bb33"))
        for path, name, kind in (
            ("chat", "chat", "loop"),
            ("chat/1/ask", "ask", "step"),
            ("chat/1/answer", "answer", "hitl"),
        ):
            await store.record_step(StepRecord("bb33", path, name, kind, "completed"), [])


@pytest.fixture(params=["sqlite", "postgres"])
async def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    found = str(tmp_path / "flujo.db") if request.param == "sqlite" else str(request.getfixturevalue("postgres_uri"))
    await _fill(found)
    return found


def test_a_look_at_a_store(uri: str) -> None:
    peek = peek_store(uri)
    assert peek is not None
    with peek:
        # Newest first, top-level runs only (aa99 is a sub-workflow's child run).
        assert [(r.run_id, r.status) for r in peek.runs()] == [
            ("cc44", "completed"), ("bb33", "failed"), ("aa22", "paused"), ("aa11", "completed"),
        ]  # fmt: skip
        assert [r.run_id for r in peek.runs(prefix="aa")] == ["aa22", "aa11"]
        assert [r.run_id for r in peek.runs(limit=1)] == ["cc44"]
        assert [r.run_id for r in peek.runs(statuses=("paused", "failed"))] == ["bb33", "aa22"]
        assert peek.runs(statuses=()) == []
        assert [r.run_id for r in peek.runs(excluding=("completed",))] == ["bb33", "aa22"]
        first = peek.runs()[0]
        assert (first.pipeline_name, first.created_at) == ("chat", 40.0)
        assert [(t.name, t.runs, t.last_run_at) for t in peek.threads()] == [("work", 1, 40.0), ("trip", 2, 30.0)]
        assert (peek.run_id("bb"), peek.run_id("aa"), peek.run_id("zz"), peek.run_id("")) == ("bb33", None, None, None)
        assert [(s.path, s.name, s.kind) for s in peek.steps("bb33")] == [
            ("chat", "chat", "loop"), ("chat/1/ask", "ask", "step"), ("chat/1/answer", "answer", "hitl"),
        ]  # fmt: skip
        assert (peek.source("bb33"), peek.source("aa99"), peek.source("nope")) == ("/bp/chat.yaml", None, None)


def test_nothing_to_look_at_is_nothing_never_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "none" / "flujo.db"
    assert peek_store(str(missing)) is None and not missing.parent.exists()  # looking never creates
    assert peek_store(":memory:") is None
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (x)")
    peek = peek_store(str(foreign))
    assert peek is not None
    with peek:
        assert (peek.runs(), peek.threads(), peek.steps("x"), peek.source("x"), peek.run_id("x")) == (
            [],
            [],
            [],
            None,
            None,
        )
    not_sqlite = tmp_path / "text.db"
    not_sqlite.write_text("hello", encoding="utf-8")
    peek = peek_store(str(not_sqlite))
    assert peek is not None and peek.runs() == []
    # A server that is not there (a closed port on this machine) refuses at once: nothing.
    assert peek_store("postgresql://flujo@127.0.0.1:1/flujo") is None


def test_a_look_loads_nothing_of_the_engine_or_the_async_stores(tmp_path: Path) -> None:
    code = (
        "import sys; from core.store import peek_store, project_state_uri; import os; "
        "p = peek_store(project_state_uri(None, env=os.environ)); "
        "print(sorted(m for m in ('core.engine', 'core.store.sqlite_backend.store', 'aiosqlite', 'pydantic', "
        "'psycopg', 'core.policies', 'yaml') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("toml", "env", "state"),
    [
        (None, {}, None),  # .flujo/flujo.db in the working directory
        ('state_uri = "runs/flujo.db"\n', {}, None),  # relative to the file's folder, from a subfolder
        ("[history]\nmax_turns = 4\n", {}, None),  # a flujo.toml without state_uri: .flujo/flujo.db beside it
        ('state_uri = "/srv/flujo/state.db"\n', {}, None),
        ('state_uri = "postgresql://flujo@db.example/flujo"\n', {}, None),
        ('state_uri = "runs/flujo.db"\n', {"FLUJO_STATE_URI": "mine.db"}, None),  # the environment beats the file
        ('state_uri = "runs/flujo.db"\n', {"FLUJO_STATE_URI": "mine.db"}, "given.db"),  # --state beats both
        (None, {"FLUJO_STATE_URI": "sqlite:///abs.db"}, None),
    ],
)
def test_the_store_is_found_where_the_settings_find_it(
    toml: str | None, env: dict[str, str], state: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    here = project / "sub" / "folder"
    here.mkdir(parents=True)
    if toml is not None:
        (project / "flujo.toml").write_text(toml, encoding="utf-8")
    monkeypatch.chdir(here)
    overrides = {"state_uri": state} if state is not None else None
    expected = load_settings(cwd=here, env=env, overrides=overrides).state_uri
    assert describe(project_state_uri(state, env=env, cwd=here)) == describe(expected)
