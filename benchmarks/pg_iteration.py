"""A conversational iteration on PostgreSQL against SQLite, in CPU and in round trips (issue 36 item 2).

``python benchmarks/pg_iteration.py N [--rounds R] [--state URI] [--tree DIR ...]``: the blueprint of
``benchmarks/conversation_run.py`` (N iterations of a scripted agent step and a HITL step, each committed
with its trace events), compiled with ``load_pipeline``, run through ``Engine.run`` as ``flujo run`` does
(``gc.freeze()``, a ``Redactor``, no terminal) on a SQLite file and on PostgreSQL, the two stores opened
before and the runs alternating, R rounds after a warm-up run on each. Per round it prints this process's
CPU time per iteration on each store, their ratio, the server's CPU per iteration (its backends' time from
``/proc``, where readable) and, from one more run through ``tests/support/round_trips.py``'s counting proxy,
the round trips of each committed step (``record_step``) and of a whole iteration.

PostgreSQL is the server of ``--state`` (a superuser's URI: each run gets a new schema) or, by default, the
tests' throwaway server (tests/support/postgres_server.py: 127.0.0.1, ``fsync=off``).

With ``--tree DIR`` (one or more source trees, e.g. a checkout of main and this one), the rounds alternate
between the trees instead, each round a process of this script with ``PYTHONPATH=DIR``, and a table of
medians closes. docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: the tree under test first


class Human:
    def __init__(self, answers: list[str]) -> None:
        self._answers = iter(answers)

    async def ask(self, question: Any) -> str:
        return next(self._answers)


def _backend_cpu(pids: Sequence[int]) -> float | None:
    """The CPU seconds the server processes ``pids`` have used, or None when ``/proc`` does not tell."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


async def _flujo_backends(uri: str) -> list[int]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as db:
        rows = await (await db.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'flujo'")).fetchall()
    return [int(row[0]) for row in rows]


async def measure(iterations: int, rounds: int, server_uri: str) -> list[dict[str, float | None]]:
    from benchmarks import conversation_run
    from blueprints import load_pipeline
    from core import Engine, NullReporter, Redactor, load_settings
    from core.store import open_store
    from tests.support.postgres_server import empty_store_uri

    directory = Path(tempfile.mkdtemp())
    blueprint, answers_file = conversation_run.write(iterations, directory)
    answers = json.loads(answers_file.read_text())["answer"]
    pipeline = load_pipeline(blueprint, load_settings())
    gc.freeze()
    sqlite = await open_store(str(directory / "flujo.db"))
    postgres = await open_store(empty_store_uri(server_uri))

    async def run(store: Any) -> None:
        engine = Engine(store=store, human=Human(answers), reporter=NullReporter(), redactor=Redactor())
        outcome = await engine.run(pipeline, "Plan the offsite")
        assert outcome.status == "completed", outcome

    async def cpu(store: Any, pids: Sequence[int] = ()) -> tuple[float, float | None]:
        server_before = _backend_cpu(pids) if pids else None
        started = time.process_time()
        await run(store)
        spent = (time.process_time() - started) * 1000 / iterations
        server_after = _backend_cpu(pids) if pids else None
        server = None if server_before is None or server_after is None else server_after - server_before
        return spent, None if server is None else server * 1000 / iterations

    results: list[dict[str, float | None]] = []
    try:
        await run(sqlite)
        await run(postgres)
        pids = await _flujo_backends(server_uri)
        for number in range(rounds):
            order: list[Callable[[], Awaitable[tuple[float, float | None]]]] = [
                lambda: cpu(sqlite),
                lambda: cpu(postgres, pids),
            ]
            measured = [await measure() for measure in (order if number % 2 == 0 else order[::-1])]
            (lite, _), (pg, server) = measured if number % 2 == 0 else measured[::-1]
            results.append({"sqlite_ms": lite, "postgres_ms": pg, "ratio": pg / lite, "server_ms": server})
    finally:
        await sqlite.close()
        await postgres.close()
    with _proxy_module().RoundTripProxy(empty_store_uri(server_uri)) as proxy:
        store = await open_store(proxy.proxied)
        steps: list[int] = []
        record_step = store.record_step

        async def counted(*args: Any, **kwargs: Any) -> None:
            before = proxy.count
            await record_step(*args, **kwargs)
            steps.append(proxy.count - before)

        store.record_step = counted  # type: ignore[method-assign]
        try:
            before = proxy.count
            await run(store)
            whole = proxy.count - before
        finally:
            await store.close()
    for result in results:
        result["trips_per_step"] = statistics.mean(steps)
        result["most_trips_per_step"] = max(steps)
        result["trips_per_iteration"] = whole / iterations
    return results


def _proxy_module() -> Any:
    """tests/support/round_trips.py of this script's tree (the tree under test may be older than it)."""
    path = Path(__file__).resolve().parent.parent / "tests" / "support" / "round_trips.py"
    spec = importlib.util.spec_from_file_location("flujo_round_trips", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _server(state: str | None) -> tuple[str, Callable[[], None]]:
    if state is not None:
        return state, lambda: None
    from tests.support import postgres_server

    server = postgres_server.start()
    return server.uri, server.stop


def _trees(args: argparse.Namespace, uri: str) -> None:
    """Alternate the rounds between the source trees ``args.tree``, one process per tree and round."""
    found: dict[str, list[dict[str, float | None]]] = {tree: [] for tree in args.tree}
    for number in range(args.rounds):
        for tree in args.tree if number % 2 == 0 else args.tree[::-1]:
            env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
            command = [sys.executable, __file__, str(args.iterations), "--rounds", "1", "--state", uri, "--json"]
            output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            result = json.loads(output.splitlines()[-1])[0]
            found[tree].append(result)
            print(f"{tree}: {_line(result)}", flush=True)
    print(f"medians over {args.rounds} rounds of {args.iterations} iterations:")
    for tree, results in found.items():
        middle = {key: median([r[key] for r in results]) for key in results[0]}
        print(f"{tree}: {_line(middle)}")


def median(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def _line(result: dict[str, float | None]) -> str:
    server = result.get("server_ms")
    return (
        f"CPU per iteration: SQLite {result['sqlite_ms']:.3f} ms, PostgreSQL {result['postgres_ms']:.3f} ms"
        f" ({result['ratio']:.2f} x); server {'?' if server is None else f'{server:.3f}'} ms;"
        f" round trips per committed step {result['trips_per_step']:.2f} (at most {result['most_trips_per_step']:.0f}),"
        f" per iteration {result['trips_per_iteration']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("iterations", type=int)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--state", help="a PostgreSQL superuser's URI (default: the tests' throwaway server)")
    parser.add_argument("--tree", action="append", default=[], help="a source tree to measure (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the rounds as one JSON line")
    args = parser.parse_args()
    uri, stop = _server(args.state)
    try:
        if args.tree:
            _trees(args, uri)
            return
        results = asyncio.run(measure(args.iterations, args.rounds, uri))
    finally:
        stop()
    if args.json:
        print(json.dumps(results))
        return
    for result in results:
        print(_line(result), flush=True)


if __name__ == "__main__":
    main()
