"""What only the SQLite store does when it prunes or only looks: giving the space back (VACUUM), keeping a
run another process executes, and opening a file without creating or changing it (``mode="read"``).
The behaviour both stores share is in tests/core/test_store.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import core.store.sqlite_backend.store as sqlite_module
from core import RunRecord, StepRecord, StoreError, TraceEvent
from core.store import open_store

REPO = Path(__file__).resolve().parents[2]


def _query(path: Path, sql: str) -> list[Any]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


async def _seed(path: Path, runs: int, *, events: int = 200) -> None:
    async with await open_store(str(path)) as store:
        for n in range(runs):
            run_id = f"run-{n}"
            await store.create_run(RunRecord(run_id, "demo", "completed", created_at=float(n)))
            payloads = [
                TraceEvent("agent.prompt", "s", {"text": f"{run_id} {i} {secrets.token_hex(200)}"}, 1.0)
                for i in range(events)
            ]
            await store.record_step(StepRecord(run_id, "s", "s", "step", "completed", output="x" * 300), payloads)


async def test_prune_gives_the_space_back(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    await _seed(path, 4)
    async with await open_store(str(path), mode="existing") as store:
        pruned = await store.prune_runs(keep=1)
    assert pruned.deleted == ("run-2", "run-1", "run-0") and pruned.vacuumed
    assert pruned.size_before is not None and pruned.size_after is not None
    assert pruned.size_after < pruned.size_before / 2  # one run of four left, plus the schema
    assert os.path.getsize(path) == pruned.size_after
    assert _query(path, "SELECT DISTINCT run_id FROM texts") == [("run-3",)]
    assert _query(path, "SELECT count(*) FROM events") == [(200,)]
    assert _query(path, "PRAGMA integrity_check") == [("ok",)]


async def test_a_busy_database_is_pruned_but_not_vacuumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT_S", 0.1)
    path = tmp_path / "flujo.db"
    await _seed(path, 2, events=5)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as reader:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM runs").fetchall()  # a read transaction left open
        async with await open_store(str(path)) as store:
            pruned = await store.prune_runs(keep=1)
            assert (pruned.deleted, pruned.vacuumed) == (("run-0",), False)
            assert [r.run_id for r in await store.list_runs()] == ["run-1"]
        reader.execute("COMMIT")


_HOLDER = """
import asyncio, sys
from core.store import open_store

async def main(path: str) -> None:
    store = await open_store(path)
    assert await store.claim_run("run-0")
    print("claimed", flush=True)
    sys.stdin.read()  # hold the claim until the test closes stdin
    await store.close()

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.slow
async def test_a_run_another_process_executes_is_never_pruned(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    await _seed(path, 2, events=1)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        env=os.environ | {"PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "claimed\n"
        async with await open_store(str(path)) as store:
            pruned = await store.prune_runs(keep=0)
            assert (pruned.deleted, pruned.live) == (("run-1",), ("run-0",))
            assert [r.run_id for r in await store.list_runs()] == ["run-0"]
    finally:
        holder.communicate(input="", timeout=30)
    assert holder.returncode == 0


async def test_reading_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "flujo.db"
    for mode in ("read", "existing"):
        with pytest.raises(StoreError, match=f"there is no run store at {path}") as caught:
            await open_store(str(path), mode=mode)  # type: ignore[arg-type]
        assert caught.value.hint and "FLUJO_STATE_URI" in caught.value.hint
    assert not path.parent.exists()


async def test_reading_an_empty_file_says_it_is_not_a_store_yet_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    path.touch()
    for mode in ("read", "existing"):
        with pytest.raises(StoreError, match=r"flujo.db is not a flujo store yet \(empty file\)"):
            await open_store(str(path), mode=mode)  # type: ignore[arg-type]
    assert path.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flujo.db"]
    sqlite3.connect(path).close()  # an SQLite database with no table: the same, in other words
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA user_version = 3")
    with pytest.raises(StoreError, match=r"not a flujo store yet \(a database with no tables\)"):
        await open_store(str(path), mode="read")
    async with await open_store(str(path)) as store:  # the first writer makes it a store
        assert await store.list_runs() == []
    async with await open_store(str(path), mode="read") as store:
        assert await store.list_runs() == []


async def test_reading_a_store_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "flujo.db"
    await _seed(path, 1, events=2)
    before = path.read_bytes()
    async with await open_store(str(path), mode="read") as store:
        assert [r.run_id for r in await store.list_runs()] == ["run-0"]
        assert len(await store.events("run-0")) == 2
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flujo.db"]  # no -wal or -shm left behind


async def test_reading_someone_elses_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreError, match="is not a flujo database"):
        await open_store(str(path), mode="read")


@pytest.mark.parametrize("damage", ["status = 'archived'", "created_at = 'yesterday'", "created_at = 1e999"])
def test_prune_cleans_up_runs_whose_rows_flujo_cannot_read(tmp_path: Path, damage: str) -> None:
    """A run with a status this flujo does not know, or a start time that is not a time (a newer flujo, a
    hand-edited or damaged store): lens prune removes it or keeps it, and says so, never a traceback;
    reading it is one line with a hint."""
    path = tmp_path / "flujo.db"
    asyncio.run(_seed(path, 3, events=1))
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(f"UPDATE runs SET {damage} WHERE run_id = 'run-0'")
    env = {**os.environ, "FLUJO_STATE_URI": str(path), "PYTHONPATH": str(REPO)}
    listed = subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", "lens", "list"], capture_output=True, text=True, env=env
    )
    assert listed.returncode == 7 and "unexpected" not in listed.stderr, listed.stderr
    assert "run-0" in listed.stderr or "archived" in listed.stderr
    # Damaged times sort as the newest (SQLite orders text and infinity after numbers) and have no age.
    kept = ["run-2", "run-2"] if damage.startswith("status") else ["run-0", "run-0"]
    if damage.startswith("status"):
        kept[1] = ""  # its start time is fine: it is older than a second like the others
    for args, left in zip((["--keep", "1"], ["--older-than", "1s"]), kept, strict=True):
        pruned = subprocess.run(
            [sys.executable, "-m", "flujo_cli.main", "lens", "prune", "--json", *args],
            capture_output=True,
            text=True,
            env=env,
        )
        assert pruned.returncode == 0 and "unexpected" not in pruned.stderr, pruned.stderr
        assert [row[0] for row in _query(path, "SELECT run_id FROM runs")] == ([left] if left else [])


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
async def test_a_new_store_and_its_folder_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    """The store keeps what users typed, as typed (docs/durability.md): nobody else may read it."""
    path = tmp_path / "project" / ".flujo" / "flujo.db"
    old_umask = os.umask(0o022)  # the usual umask, which would leave them readable by all
    try:
        async with await open_store(str(path)) as store:
            await store.create_run(RunRecord("run-1", "demo", "running", created_at=1.0))
            assert await store.claim_run("run-1")
            await store.release_run("run-1")
    finally:
        os.umask(old_umask)
    made = [path.parent, path, *(p for p in path.parent.iterdir() if p != path)]
    assert {p.name for p in made} >= {".flujo", "flujo.db", "flujo.db.claims"}
    for made_path in made:
        expected = 0o700 if made_path.is_dir() else 0o600
        assert made_path.stat().st_mode & 0o777 == expected, made_path
