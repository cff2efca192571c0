"""``flujo lens trace RUN`` into a pipe on the 10,000-event run of benchmarks/test_lens.py: the time to its first
line and to its end, and its CPU time, for one or more source trees alternated round by round (issue 19).

    .venv/bin/python benchmarks/piped_trace.py [--rounds N] [--db DB] [TREE ...] [-- TRACE_ARGS ...]

Writes the run to DB (a temporary file by default; reused when it exists), then, each round, starts
``python -m flujo_cli.main lens trace RUN --state DB TRACE_ARGS`` once per TREE (this checkout by default)
with PYTHONPATH at that tree, its stdout a pipe, and reads it to the end. Prints, per tree, the median and
minimum wall time to the first line, to the end, and the CPU time (user + system) of the process. To compare
with older code: ``git archive main | tar -x -C /tmp/before``, ``.venv/bin/python -m compileall -q
/tmp/before``, then pass ``/tmp/before .`` as the trees. On a shared machine, read the CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.test_lens import RUN, _write  # the benchmark's own run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--db", default=str(Path(tempfile.gettempdir()) / "flujo-lens-bench.db"))
    parser.add_argument("trees", nargs="*", default=[str(Path(__file__).resolve().parent.parent)])
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    options = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if not Path(options.db).exists():
        asyncio.run(_write(Path(options.db)))
    figures: dict[str, list[tuple[float, float, float]]] = {tree: [] for tree in options.trees}
    for _ in range(options.rounds):
        for tree in options.trees:
            figures[tree].append(_trace(Path(tree).resolve(), options.db, extra))
    for tree, rows in figures.items():
        first, whole, cpu = (sorted(row[i] for row in rows) for i in range(3))
        print(
            f"{tree}: first line {statistics.median(first):.2f} s (min {first[0]:.2f}), "
            f"whole {statistics.median(whole):.2f} s (min {whole[0]:.2f}), "
            f"CPU {statistics.median(cpu):.2f} s (min {cpu[0]:.2f}); medians of {len(rows)} rounds"
        )


def _trace(tree: Path, db: str, extra: list[str]) -> tuple[float, float, float]:
    """One command: (seconds to the first line, seconds to the end, CPU seconds)."""
    argv = [sys.executable, "-m", "flujo_cli.main", "lens", "trace", RUN, "--state", db, *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree
    )
    assert process.stdout is not None
    process.stdout.readline()
    first = time.perf_counter() - started
    process.stdout.read()
    process.stdout.close()
    if process.wait() != 0:
        raise SystemExit(f"{tree}: exit code {process.returncode}")
    whole = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return first, whole, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


if __name__ == "__main__":
    main()
