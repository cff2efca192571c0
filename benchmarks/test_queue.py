"""Queued runs per second: ``flujo submit`` 100 runs of a one-step blueprint (a built-in agent, no
subprocess), then 1, 2 or 4 ``flujo worker --until-idle`` processes drain the queue, on SQLite and on the
tests' PostgreSQL server. A round is timed from the workers' start to the last one's exit, so it includes
their start-up (about a second of imports each). Figures in docs/performance.md; run with ``make bench``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.sizes import size
from benchmarks.worker_floor import BLUEPRINT  # the runs the floor measures, queued
from tests.support.cli_helpers import ROOT

RUNS = int(os.environ.get("FLUJO_BENCH_QUEUE_RUNS", str(size(100, 4))))


def _flujo(workdir: Path, uri: str, *args: str, tree: Path = ROOT) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", *args],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(tree), "FLUJO_STATE_URI": uri},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_queued_runs_per_second(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, tmp_path: Path, backend: str, workers: int
) -> None:
    (tmp_path / "bp.yaml").write_text(BLUEPRINT, encoding="utf-8")
    (tmp_path / "inputs.jsonl").write_text("".join(f'"run {i}"\n' for i in range(RUNS)), encoding="utf-8")
    rounds = iter(range(100))

    def setup() -> tuple[tuple[str], dict[str, str]]:
        uri = (
            str(tmp_path / f"flujo-{next(rounds)}.db")
            if backend == "sqlite"
            else request.getfixturevalue("postgres_uri")
        )
        submitted = _flujo(tmp_path, uri, "submit", "bp.yaml", "--inputs", "inputs.jsonl")
        _, err = submitted.communicate()
        assert submitted.returncode == 0, err
        return (uri,), {}

    def drain(uri: str) -> None:
        procs = [_flujo(tmp_path, uri, "worker", "--until-idle") for _ in range(workers)]
        for proc in procs:
            _, err = proc.communicate()
            assert proc.returncode == 0, err

    benchmark.pedantic(drain, setup=setup, rounds=3)
    if benchmark.stats is not None:  # None when make test runs it once, untimed
        benchmark.extra_info["runs_per_second"] = RUNS / benchmark.stats.stats.median


# The floor (issue 36): one worker's throughput against the same runs through ``Engine.run`` in one process
# (``benchmarks/worker_floor.py``), interleaved round by round in one sitting.
FLOOR_RUNS = size(200, 4)
FLOOR_ROUNDS = size(5, 1)
FLOOR_SCRIPT = ROOT / "benchmarks" / "worker_floor.py"
# What each round runs: the floor, then one worker at -c 1, one at -c 2, and two -c 1 workers side by side.
SHAPES = {"floor": (), "c1": (("-c", "1"),), "c2": (("-c", "2"),), "2x c1": (("-c", "1"), ("-c", "1"))}
# Another source tree (say main's, checked out with ``git worktree add``) whose workers each round runs too,
# in the same sitting: its shapes are named "before c1", ...
OTHER_TREE = os.environ.get("FLUJO_BENCH_OTHER_TREE")


def _timed(procs: list[subprocess.Popen[str]], first_line: str) -> tuple[float, float]:
    """Wait for ``procs`` (started now): the seconds until the last one exited, and the seconds from the
    moment the last of them printed its first line (``first_line`` of each's stderr or stdout: the worker's
    banner, the floor's ``ready``) to then: the whole processes, and their loops without start-up."""
    started = time.perf_counter()
    ready = started
    for proc in procs:
        stream = proc.stdout if first_line == "stdout" else proc.stderr
        assert stream is not None
        stream.readline()
        ready = time.perf_counter()
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    ended = time.perf_counter()
    return ended - started, ended - ready


@pytest.mark.timeout(3600)  # 4 to 7 whole-process rounds of 200 runs, 5 times, on a machine others load
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_worker_against_its_floor(
    benchmark: BenchmarkFixture, request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """``FLOOR_RUNS`` one-step runs per round: the floor; then, each on a queue of them submitted outside the
    time, ``flujo worker --until-idle -c 1``, ``-c 2``, and two ``-c 1`` workers at once. ``extra_info``:
    the median runs per second of each (whole processes, and the loop alone: from the first line each
    prints to its exit) and each worker's ratio to the floor."""
    (tmp_path / "bp.yaml").write_text(BLUEPRINT, encoding="utf-8")
    (tmp_path / "inputs.jsonl").write_text("".join(f'"run {i}"\n' for i in range(FLOOR_RUNS)), encoding="utf-8")
    stores = iter(range(1000))
    shapes = {name: (ROOT, workers) for name, workers in SHAPES.items()}
    if OTHER_TREE:
        shapes |= {f"before {name}": (Path(OTHER_TREE), workers) for name, workers in SHAPES.items() if workers}
    times: dict[str, list[tuple[float, float]]] = {shape: [] for shape in shapes}

    def new_store() -> str:
        if backend == "sqlite":
            return str(tmp_path / f"flujo-{next(stores)}.db")
        from tests.support.postgres_server import empty_store_uri

        return empty_store_uri(request.getfixturevalue("postgres_server"))

    def one_round() -> None:
        for shape, (tree, workers) in shapes.items():
            uri = new_store()
            if shape == "floor":
                floor = subprocess.Popen(
                    [sys.executable, str(FLOOR_SCRIPT), str(FLOOR_RUNS), "--state", uri],
                    cwd=tmp_path,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                times[shape].append(_timed([floor], "stdout"))
                continue
            submitted = _flujo(tmp_path, uri, "submit", "bp.yaml", "--inputs", "inputs.jsonl")
            _, err = submitted.communicate()
            assert submitted.returncode == 0, err
            procs = [_flujo(tmp_path, uri, "worker", "--until-idle", *flags, tree=tree) for flags in workers]
            times[shape].append(_timed(procs, "stderr"))

    benchmark.pedantic(one_round, rounds=FLOOR_ROUNDS)
    rates = {
        shape: (
            FLOOR_RUNS / statistics.median(whole for whole, _ in seen),
            FLOOR_RUNS / statistics.median(loop for _, loop in seen),
        )
        for shape, seen in times.items()
    }
    floor_whole, floor_loop = rates["floor"]
    for shape, (whole, loop) in rates.items():
        benchmark.extra_info[f"{shape} runs/s"] = round(whole, 1)
        benchmark.extra_info[f"{shape} loop runs/s"] = round(loop, 1)
        if shape != "floor":
            benchmark.extra_info[f"{shape} / floor"] = round(whole / floor_whole, 3)
            benchmark.extra_info[f"{shape} loop / floor loop"] = round(loop / floor_loop, 3)
    print(f"\n{backend}, {FLOOR_RUNS} runs, {FLOOR_ROUNDS} rounds: {benchmark.extra_info}")
