"""Time or profile the SQLite store's share of ``test_engine_iterations``: what runs on its connection's thread.

``python benchmarks/store_profile.py N [--rounds R] [--profile]``: the blueprint of
``benchmarks/conversation_run.py`` (N iterations) compiled with ``load_pipeline``, a ``Redactor``, no
terminal, on a SQLite store in a temporary directory. Each write transaction
(``core.store.sqlite_backend.transaction.run_transaction``, the whole of a step's write; on aiosqlite's thread
in code before the writer connection) is timed: per iteration, the encoding of the values (``Batch.encode``),
the rest of the statements, the ``COMMIT`` (and the share of the slowest 1 % of commits: SQLite's automatic
checkpoints), the CPU of the transactions, and the event loop thread's CPU. With ``--profile``, a cProfile of
the transactions of one run instead. After one warm-up run; docs/performance.md.
To compare two source trees, run the same file with ``PYTHONPATH`` pointing at each (it imports flujo from
``sys.path``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import json
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: the tree under test first

from benchmarks.conversation_run import write
from blueprints import load_pipeline
from core import Engine, NullReporter, Redactor, load_settings
from core.store import open_store
from core.store.sqlite_backend import batch as sqlite_batch
from core.store.sqlite_backend import store as sqlite_store
from core.store.sqlite_backend import transaction


class Timings:
    def __init__(self) -> None:
        self.encode = self.work = self.thread = 0.0
        self.commits: list[float] = []


def instrument(timings: Timings, profile: cProfile.Profile | None) -> None:
    """Time (or profile) each write transaction (``transaction.run_transaction``, on whichever thread runs it:
    the event loop's through the store's writer connection, or aiosqlite's for an in-memory store)."""
    encode = sqlite_batch.Batch.encode

    def timed_encode(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return encode(self, *args, **kwargs)
        finally:
            timings.encode += time.perf_counter() - started

    sqlite_batch.Batch.encode = timed_encode  # type: ignore[method-assign]

    def run_transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], Any]) -> Any:
        cpu = time.thread_time()
        conn.execute("BEGIN IMMEDIATE")
        try:
            started = time.perf_counter()
            if profile is not None:
                profile.enable()
            result = work(conn)
            if profile is not None:
                profile.disable()
            committing = time.perf_counter()
            conn.execute("COMMIT")
            timings.commits.append(time.perf_counter() - committing)
            timings.work += committing - started
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        timings.thread += time.thread_time() - cpu
        return result

    transaction.run_transaction = run_transaction  # type: ignore[assignment]
    writer_module = sys.modules.get("core.store.sqlite_backend.writer")
    if writer_module is not None:  # the code since the writer connection
        writer_module.run_transaction = run_transaction  # type: ignore[attr-defined]
    else:  # older code: every such write was one call on aiosqlite's thread

        async def in_one_call(db: Any, work: Callable[[sqlite3.Connection], Any]) -> Any:
            return await db._execute(lambda: run_transaction(db._conn, work))

        sqlite_store.in_one_call = in_one_call  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("iterations", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp())
    blueprint, answers_file = write(args.iterations, directory)
    answers = json.loads(answers_file.read_text())["answer"]
    pipeline = load_pipeline(blueprint, load_settings())
    counter = itertools.count()
    timings = Timings()
    profile = cProfile.Profile() if args.profile else None
    instrument(timings, None)

    class Human:
        def __init__(self) -> None:
            self._answers = iter(answers)

        async def ask(self, question: Any) -> str:
            return next(self._answers)

    async def run() -> None:
        store = await open_store(str(directory / f"{next(counter)}.db"))
        try:
            engine = Engine(store=store, human=Human(), reporter=NullReporter(), redactor=Redactor())
            outcome = await engine.run(pipeline, "Plan the offsite")
        finally:
            await store.close()
        assert outcome.status == "completed", outcome

    asyncio.run(run())  # warm-up
    if profile is not None:
        instrument(timings, profile)
        asyncio.run(run())
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(25)
        return
    per = 1000 / args.iterations
    for _ in range(args.rounds):
        timings.__init__()  # type: ignore[misc]
        cpu, main_cpu = time.process_time(), time.thread_time()
        asyncio.run(run())
        cpu, main_cpu = time.process_time() - cpu, time.thread_time() - main_cpu
        commits = sorted(timings.commits)
        slowest = sum(commits[-max(1, len(commits) // 100) :])
        print(
            f"{args.iterations} iterations, ms per iteration: CPU {cpu * per:.3f} (event loop thread"
            f" {main_cpu * per:.3f}; in write transactions {timings.thread * per:.3f}); in them: encoding"
            f" {timings.encode * per:.3f}, statements {(timings.work - timings.encode) * per:.3f}, COMMIT"
            f" {sum(commits) * per:.3f} (median {statistics.median(commits) * 1e6:.0f} us; slowest 1 %"
            f" {slowest * per:.3f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
