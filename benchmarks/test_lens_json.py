"""``flujo lens trace RUN --json`` of a run of 100,000 events, as a user runs it (issue 34): the time to its first
bytes, against a floor measured in the same sitting (the same command on a run of one iteration: start-up,
opening the store, the run's record), and the process's peak memory at 10,000 and 100,000 events.

The runs are benchmarks/test_lens.py's conversational loop (an agent step and a question each iteration, the
agent sent the latest ten turns again), 33,333 iterations (100,000 events) and 3,333 (10,000), written once per
session. The document is one line (as it always was), written a part at a time (lens/json_trace.py): its
first bytes are the run's own fields, out before its events are read. Targets: first bytes under 0.5 s on a
quiet machine; peak memory at 100,000 events within 1.2 times the peak at 10,000 (asserted here: a benchmark,
not a timed test). Figures in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.sizes import size
from benchmarks.test_lens import RUN, _write

LARGE = size(33_333, 300)  # iterations: 3 events each, and the loop's exit
SMALL = size(3_333, 30)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """The stores of a run of ``LARGE``, ``SMALL`` and 1 iteration(s), by iterations."""
    folder = tmp_path_factory.mktemp("lens_json")
    found = {}
    for iterations in (LARGE, SMALL, 1):
        found[iterations] = folder / f"{iterations}.db"
        asyncio.run(_write(found[iterations], iterations))
    return found


def _trace(db: Path) -> tuple[float, float, int, int]:
    """``flujo lens trace RUN --json`` in a new process, its stdout a pipe read to the end: (seconds to its
    first bytes, seconds to its end, bytes, the process's peak resident memory in KiB)."""
    argv = [sys.executable, "-m", "flujo_cli.main", "lens", "trace", RUN, "--state", str(db), "--json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    assert process.stdout is not None
    first = process.stdout.read1(65536)
    first_s = time.perf_counter() - started
    read = len(first)
    while chunk := process.stdout.read1(1 << 20):
        read += len(chunk)
    process.stdout.close()
    _, status, usage = os.wait4(process.pid, 0)  # this process's own peak, not every child's so far
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0 and first.startswith(b'{"run": {"run_id": "' + RUN.encode())
    return first_s, time.perf_counter() - started, read, usage.ru_maxrss


def test_json_trace_first_bytes(benchmark: BenchmarkFixture, runs: dict[int, Path]) -> None:
    """The benchmark's figures are the time to the first bytes of the 100,000-event run's document;
    ``extra_info`` has the floor (a one-iteration run, rounds alternated with the large one) and the time to
    the document's end."""
    floors: list[float] = []
    ends: list[float] = []

    def trace() -> float:
        floors.append(_trace(runs[1])[0])
        first, end, _, _ = _trace(runs[LARGE])
        ends.append(end)
        return first

    benchmark.pedantic(trace, rounds=size(5, 1), warmup_rounds=size(1, 0))
    benchmark.extra_info["floor_first_bytes_ms"] = round(statistics.median(floors) * 1000)
    benchmark.extra_info["end_s"] = round(statistics.median(ends), 2)
    benchmark.extra_info["events"] = 3 * LARGE + 1


def test_json_trace_memory_is_flat(benchmark: BenchmarkFixture, runs: dict[int, Path]) -> None:
    """Peak resident memory of the whole command at 100,000 events within 1.2 times that at 10,000 (before
    it was written a part at a time: 645 MB against 111 MB)."""
    peaks: dict[int, int] = {}

    def both() -> None:
        for iterations in (SMALL, LARGE):
            peaks[iterations] = _trace(runs[iterations])[3]

    benchmark.pedantic(both, rounds=1, warmup_rounds=0)
    benchmark.extra_info["peak_mb"] = {3 * n + 1: round(kib / 1024, 1) for n, kib in peaks.items()}
    assert peaks[LARGE] <= 1.2 * peaks[SMALL], peaks
