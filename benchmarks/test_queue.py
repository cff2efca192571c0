"""Queued runs per second: ``flujo submit`` 100 runs of a one-step blueprint (a built-in agent, no
subprocess), then 1, 2 or 4 ``flujo worker --until-idle`` processes drain the queue, on SQLite and on the
tests' PostgreSQL server. A round is timed from the workers' start to the last one's exit, so it includes
their start-up (about a second of imports each). Figures in docs/performance.md; run with ``make bench``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.sizes import size
from tests.support.cli_helpers import ROOT

RUNS = int(os.environ.get("FLUJO_BENCH_QUEUE_RUNS", str(size(100, 4))))
BLUEPRINT = """\
version: "0.1"
name: queued
steps:
  - kind: step
    name: echo
    agent: {id: flujo.builtins.stringify}
"""


def _flujo(workdir: Path, uri: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", *args],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": uri},
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
