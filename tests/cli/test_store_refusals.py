"""A store that refuses a run's writes, and what ``flujo run`` offers then.

- A SQLite store deleted (or replaced) while a run uses it: the process would go on writing to a file
  nobody can open again, and the run said ``completed`` while it was lost. Its next write is refused
  instead: one line, exit code 7, and no ``flujo resume`` offered (there is nothing left to resume from).
- A store locked as the run is created: the run was never stored, so no ``flujo resume`` is offered for it
  (one was, and it answered ``no run matches``)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from core import StoreGone
from core.store import open_store
from flujo_cli import exit_codes
from tests.core.test_store import run
from tests.support.cli_helpers import flujo_process

# The second step deletes the store the run writes to (the command sees FLUJO_STATE_URI), then echoes.
BLUEPRINT = """\
version: "0.1"
agents:
  e: {model: echo}
  remover: {command: [sh, -c, 'rm -f "$FLUJO_STATE_URI" "$FLUJO_STATE_URI-wal" "$FLUJO_STATE_URI-shm"; cat']}
steps:
  - {kind: step, name: first, uses: agents.e}
  - {kind: step, name: remove, uses: agents.remover}
  - {kind: step, name: after, uses: agents.e}
"""


def test_a_run_whose_store_is_deleted_stops_at_its_next_write(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(BLUEPRINT, encoding="utf-8")
    store = tmp_path / "runs.db"
    done = flujo_process(["run", "flow.yaml", "--input", "hi"], env={"FLUJO_STATE_URI": str(store)}, cwd=tmp_path)
    assert done.returncode == exit_codes.STORE, done.stderr
    assert "completed" not in done.stderr and "Traceback" not in done.stderr
    assert f"the run store {store} was deleted or replaced while this process was using it" in done.stderr
    assert "flujo resume" not in done.stderr


async def test_a_replaced_store_refuses_writes_and_stays_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with await open_store(str(path)) as store:
        await store.create_run(run("r1"))
        path.rename(tmp_path / "moved.db")
        path.write_bytes(b"")  # another file at the same path
        with pytest.raises(StoreGone, match="was deleted or replaced"):
            await store.create_run(run("r2"))
        with pytest.raises(StoreGone):
            await store.reconnect()
        with pytest.raises(StoreGone):
            await store.create_run(run("r3"))
    assert path.read_bytes() == b""  # the file now at that path was never written to


def test_a_run_the_store_refused_to_create_is_not_offered_to_resume(tmp_path: Path) -> None:
    echo = BLUEPRINT.split("  remover")[0] + "steps: [{kind: step, name: s, uses: agents.e}]\n"
    (tmp_path / "echo.yaml").write_text(echo, encoding="utf-8")
    store = tmp_path / "runs.db"
    env = {"FLUJO_STATE_URI": str(store), "FLUJO_SQLITE__BUSY_TIMEOUT_S": "0.2"}
    assert flujo_process(["run", "echo.yaml", "--input", "hi"], env=env, cwd=tmp_path).returncode == exit_codes.OK
    with contextlib.closing(sqlite3.connect(store, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        done = flujo_process(["run", "echo.yaml", "--input", "hi"], env=env, cwd=tmp_path)
        other.execute("ROLLBACK")
    assert done.returncode == exit_codes.STORE, done.stderr
    assert "is locked" in done.stderr and "Traceback" not in done.stderr
    assert "flujo resume" not in done.stderr and "is saved up to" not in done.stderr
