"""Which runs a live process executes, asked without claiming them (``RunStore.claimed_runs``).

A claim is held by the process that took it, for as long as that process lives: another process's claim
is seen as held while it lives and as gone the moment it is killed (SIGKILL), on SQLite (a byte-range lock,
asked with ``F_GETLK``) and on PostgreSQL (a session advisory lock, read from ``pg_locks``). Asking takes no
claim and drops none of the asking process's own.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core import RunRecord
from core.store import MemoryStore, open_store
from core.store.rows import claims
from core.store.sqlite_backend.store import CLAIMS_SUFFIX
from tests.support.cli_helpers import ROOT

# A process that claims the runs named on its command line, says so, and waits (until killed).
HOLDER = """\
import asyncio, sys
from core.store import open_store

async def main():
    store = await open_store(sys.argv[1])
    for run_id in sys.argv[2:]:
        assert await store.claim_run(run_id), run_id
    print("held", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


@pytest.fixture(params=["sqlite", "postgres"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_uri"))
    return str(tmp_path / "flujo.db")


@contextmanager
def _holder(uri: str, *run_ids: str) -> Iterator[subprocess.Popen[str]]:
    """A live process holding the claims of ``run_ids`` (killed on the way out if it still lives)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, uri, *run_ids],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the event: its claims are taken
        assert line == "held\n", process.communicate(timeout=60)[1]
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=60)


async def _created(uri: str, *run_ids: str) -> None:
    async with await open_store(uri) as store:
        for run_id in run_ids:
            await store.create_run(RunRecord(run_id=run_id, pipeline_name="demo", status="running"))


async def _claimed(uri: str, run_ids: list[str]) -> set[str]:
    async with await open_store(uri, mode="read") as store:
        return await store.claimed_runs(run_ids)


async def _released(uri: str, run_ids: list[str]) -> set[str]:
    """``claimed_runs`` once the killed holder's claims are gone: at once on SQLite (the kernel drops a lock
    as the process exits); on PostgreSQL when the server has seen the session end (it drops its locks then)."""
    deadline = time.monotonic() + 60
    while (held := await _claimed(uri, run_ids)) and time.monotonic() < deadline and uri.startswith("postgres"):
        await asyncio.sleep(0.05)
    return held


@pytest.mark.slow
async def test_a_claim_is_held_while_its_process_lives_and_gone_once_it_is_killed(uri: str) -> None:
    await _created(uri, "aaaa", "bbbb", "cccc")
    with _holder(uri, "aaaa", "bbbb") as holder:
        assert await _claimed(uri, ["aaaa", "bbbb", "cccc"]) == {"aaaa", "bbbb"}
        assert await _claimed(uri, ["aaaa", "bbbb", "cccc"]) == {"aaaa", "bbbb"}  # asking took nothing
        holder.kill()
        holder.wait(timeout=60)
    assert await _released(uri, ["aaaa", "bbbb", "cccc"]) == set()
    async with await open_store(uri) as store:  # and the runs can be claimed at once
        assert await store.claim_run("aaaa")
        assert await store.claimed_runs(["aaaa", "bbbb"]) == {"aaaa"}  # this store's own claim


def test_asking_never_drops_a_claim_of_the_asking_process(tmp_path: Path) -> None:
    # POSIX locks belong to the process, and closing any descriptor of the file drops them all: asking
    # must use the descriptor the process claims with, never open and close one of its own.
    lock = str(tmp_path / "flujo.db.claims")
    assert claims.claim(lock, "mine")
    try:
        assert claims.held(lock, ["mine", "free"]) == {"mine"}
        claim = "import sys; from core.store.rows import claims; print(claims.claim(*sys.argv[1:]))"
        other = subprocess.run(
            [sys.executable, "-c", claim, lock, "mine"],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
        )  # fmt: skip
        assert other.stdout == "False\n"  # still this process's
    finally:
        claims.release(lock, "mine")


def test_nothing_is_held_before_any_process_claimed_anything(tmp_path: Path) -> None:
    lock = tmp_path / ("flujo.db" + CLAIMS_SUFFIX)
    assert claims.held(str(lock), ["aaaa"]) == set()
    assert not lock.exists()  # asking creates nothing


async def test_the_memory_store_knows_its_own_claims() -> None:
    store = MemoryStore()
    await store.create_run(RunRecord(run_id="aaaa", pipeline_name="demo", status="running"))
    assert await store.claimed_runs(["aaaa"]) == set()
    assert await store.claim_run("aaaa")
    assert await store.claimed_runs(["aaaa", "zzzz"]) == {"aaaa"}
