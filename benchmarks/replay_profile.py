"""Time or profile a replay against the engine running afresh, as ``benchmarks/test_replay.py`` compares them.

``python benchmarks/replay_profile.py N [--tool] [--only fresh|replay|load] [--profile] [--rounds R]
[--warm-up W] [--dry]``: the blueprint of ``benchmarks/conversation_run.py`` (N iterations, its history
bounded by ``truncate_turns``, as ``test_replay.py`` has it; with ``--tool``, its clarifier calls a Python
tool first every iteration) is run once through the engine into a SQLite store in a temporary directory
(the recording). Then, after a warm-up of each (``W`` runs, default 1), rounds of: the engine running it
afresh on a copy of that store (``fresh``), ``load_recording`` of the recorded run (``load``), and
``load_recording`` then the engine with that ``Replay`` on another copy (``replay``), as ``flujo run
--replay`` does, ``gc.freeze()`` once the blueprint, then the recording, are loaded. It prints each one's
CPU time (every thread: the store's writer's too), the lowest and the median of the rounds, and the
replay's median over the fresh run's.

``--only`` runs one of them, for callgrind, whose count of instructions does not move with the machine's
load: one run's is the count with ``--warm-up 0 --rounds 1`` less the count with ``--dry`` too (each round
compiles the blueprint and collects the garbage, then runs nothing). ``--profile``: a cProfile of one
replay instead, by total then cumulative time. docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import conversation_run
from blueprints import load_pipeline
from core import Answering, Engine, NullReporter, Pipeline, Redactor, Replay, load_recording, load_settings
from core.store import open_store
from core.testing import ScriptedHuman

HISTORY = "{strategy: truncate_turns, max_turns: 20}"
INPUT = "Plan the offsite"


class Sitting:
    """The blueprint, its answers and the store holding its recorded run, in ``directory``."""

    def __init__(self, iterations: int, directory: Path, *, tool: bool) -> None:
        self.blueprint, answers_file = conversation_run.write(iterations, directory, history=HISTORY, tool=tool)
        self.directory = directory
        self.answers = json.loads(answers_file.read_text())["answer"]
        self.store = directory / "recorded.db"
        self.run_id = "recorded"
        self.copies = 0
        asyncio.run(self.fresh(self.store, self.pipeline(), run_id=self.run_id))

    def pipeline(self) -> Pipeline:
        """The blueprint compiled anew: a scripted model takes its replies in turn, so each run needs its own."""
        return load_pipeline(self.blueprint, load_settings())

    def copy(self) -> Path:
        self.copies += 1
        path = self.directory / f"{self.copies}.db"
        shutil.copy(self.store, path)  # closed: its log was checkpointed into the file
        return path

    async def fresh(self, path: Path, pipeline: Pipeline, run_id: str | None = None) -> str:
        store = await open_store(str(path))
        try:
            human = ScriptedHuman(self.answers)
            engine = Engine(store=store, human=human, reporter=NullReporter(), redactor=Redactor())
            outcome = await engine.run(pipeline, INPUT, run_id=run_id)
        finally:
            await store.close()
        assert outcome.status == "completed", outcome.error
        return outcome.status

    async def load(self) -> int:
        async with await open_store(str(self.store), mode="read") as store:
            recording = await load_recording(store, self.run_id, Redactor())
        return len(recording.calls)

    async def replay(self, path: Path, pipeline: Pipeline) -> int:
        store = await open_store(str(path))
        try:
            redactor = Redactor()
            recording = await load_recording(store, self.run_id, redactor)
            gc.freeze()  # as flujo run does once the recording is loaded
            served = Replay(recording)
            engine = Engine(
                store=store,
                human=ScriptedHuman(),
                reporter=NullReporter(),
                redactor=redactor,
                answering=Answering(replay=recording.replayed_answers()),
                replay=served,
            )
            outcome = await engine.run(pipeline, INPUT)
        finally:
            await store.close()
        assert outcome.status == "completed" and served.clean, (outcome.error, served.report())
        return served.log.served


Work = Callable[[Pipeline], object]


def _cpu(work: Work, pipeline: Pipeline) -> float:
    """The CPU time of ``work(pipeline)``, the garbage collected first (outside the time)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()  # the blueprint (and the recording, in a replay) lives as long as the run
    started = time.process_time()
    work(pipeline)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("iterations", type=int)
    parser.add_argument("--tool", action="store_true", help="the clarifier calls a tool every iteration")
    parser.add_argument("--only", choices=["fresh", "replay", "load"])
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warm-up", type=int, default=1, help="runs of each before the rounds (default 1)")
    parser.add_argument("--dry", action="store_true", help="each round compiles and collects, runs nothing")
    args = parser.parse_args()
    sitting = Sitting(args.iterations, Path(tempfile.mkdtemp()), tool=args.tool)
    kinds: dict[str, Work] = {
        "fresh": lambda pipeline: asyncio.run(sitting.fresh(sitting.copy(), pipeline)),
        "load": lambda pipeline: asyncio.run(sitting.load()),
        "replay": lambda pipeline: asyncio.run(sitting.replay(sitting.copy(), pipeline)),
    }
    empty = Pipeline(steps=(), name="none")  # what load is given: it compiles nothing

    def pipeline(kind: str) -> Pipeline:
        """The blueprint compiled anew for a run (each needs its own), outside any time."""
        return empty if kind == "load" else sitting.pipeline()

    if args.only:
        kinds = {args.only: kinds[args.only]}
    try:
        for _ in range(args.warm_up):
            for kind, work in kinds.items():
                work(pipeline(kind))
        if args.profile:
            kind = "replay" if "replay" in kinds else next(iter(kinds))
            work, compiled = kinds[kind], pipeline(kind)
            profile = cProfile.Profile()
            profile.enable()
            work(compiled)
            profile.disable()
            stats = pstats.Stats(profile)
            stats.sort_stats("tottime").print_stats(30)
            stats.sort_stats("cumulative").print_stats(40)
            return
        costs: dict[str, list[float]] = {kind: [] for kind in kinds}
        for _ in range(args.rounds):
            for kind, work in kinds.items():
                costs[kind].append(_cpu((lambda _: None) if args.dry else work, pipeline(kind)))
        print(f"{args.iterations} iterations, {args.rounds} rounds, CPU ms:")
        for kind, times in costs.items():
            each = ", ".join(f"{t * 1000:.0f}" for t in times)
            print(f"  {kind}: lowest {min(times) * 1000:.1f}, median {statistics.median(times) * 1000:.1f}  ({each})")
        if "fresh" in costs and "replay" in costs:
            ratio = statistics.median(costs["replay"]) / statistics.median(costs["fresh"])
            print(f"  replay / fresh: {ratio:.3f}")
    finally:
        shutil.rmtree(sitting.directory)


if __name__ == "__main__":
    main()
