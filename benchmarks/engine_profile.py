"""Time or profile the engine as ``test_engine_iterations`` runs it, optionally without the store's cost.

``python benchmarks/engine_profile.py N [--null-store] [--profile] [--rounds R] [--no-freeze] [--ensemble |
--plain]``: the blueprint of ``benchmarks/conversation_run.py`` (N iterations; with ``--ensemble``, that of
``benchmarks/ensemble_run.py``, N rounds, whose person is asked every third round; with ``--plain``, the loop
without ``conversation: true``) compiled with ``load_pipeline`` and then, as ``flujo run`` does,
``gc.freeze()`` (unless ``--no-freeze``), a ``Redactor``, no terminal, on a SQLite store in a temporary
directory or, with ``--null-store``, on a store that keeps no step and no event (what is left is the engine's
own work). After one warm-up run it prints, per round, the CPU time per iteration and the time between
consecutive questions near iteration 10 and at the end, in wall-clock and in CPU time (the latter holds on a
machine shared with other work); with ``--profile``, a cProfile of one run instead, by total then cumulative
time. docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import itertools
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import conversation_run, ensemble_run
from blueprints import load_pipeline
from core import Engine, NullReporter, Redactor, StepRecord, TraceEvent, load_settings
from core.store import MemoryStore, open_store


class NullStore(MemoryStore):
    """A store that keeps no step and no event: the engine's cost without the store's."""

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        return None

    async def record_events(self, run_id: str, events: Sequence[TraceEvent]) -> None:
        return None


class Human:
    """Answers from the list, noting when each question came."""

    def __init__(self, answers: list[str]) -> None:
        self._answers = iter(answers)
        self.asked: list[float] = []
        self.asked_cpu: list[float] = []

    async def ask(self, question: Any) -> str:
        self.asked.append(time.perf_counter())
        self.asked_cpu.append(time.process_time())
        return next(self._answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("iterations", type=int)
    parser.add_argument("--null-store", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-freeze", action="store_true", help="no gc.freeze() after loading")
    parser.add_argument("--ensemble", action="store_true", help="the ensemble of benchmarks/ensemble_run.py, N rounds")
    parser.add_argument("--plain", action="store_true", help="the same loop without conversation: true")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp())
    if args.ensemble:
        blueprint, answers_file = ensemble_run.write(args.iterations, directory)
        answers = json.loads(answers_file.read_text())["editor"]
    else:
        blueprint, answers_file = conversation_run.write(args.iterations, directory, conversation=not args.plain)
        answers = json.loads(answers_file.read_text())["answer"]
    pipeline = load_pipeline(blueprint, load_settings())
    if not args.no_freeze:
        gc.freeze()  # as flujo run does once the blueprint is loaded: later full collections need not scan it
    counter = itertools.count()

    async def run() -> Human:
        human = Human(answers)
        store = NullStore() if args.null_store else await open_store(str(directory / f"{next(counter)}.db"))
        try:
            engine = Engine(store=store, human=human, reporter=NullReporter(), redactor=Redactor())
            outcome = await engine.run(pipeline, "Plan the offsite")
        finally:
            await store.close()
        assert outcome.status == "completed", outcome
        return human

    asyncio.run(run())  # warm-up
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        asyncio.run(run())
        profile.disable()
        stats = pstats.Stats(profile)
        print(f"{stats.total_calls / args.iterations:.0f} function calls per iteration")  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(40)
        return
    for _ in range(args.rounds):
        started = time.process_time()
        human = asyncio.run(run())
        cpu = (time.process_time() - started) * 1000 / args.iterations
        line = f"{args.iterations} iterations: CPU {cpu:.3f} ms per iteration"
        for clock, times in (("", human.asked), ("CPU ", human.asked_cpu)):
            gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
            if len(gaps) >= 30:
                near, last = statistics.median(gaps[5:25]) * 1000, statistics.median(gaps[-20:]) * 1000
                line += f"; {clock}between questions near 10: {near:.3f} ms, at the end: {last:.3f} ms"
                line += f" ({last / near:.2f} x)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
