"""Replaying a recorded 1,000-iteration conversation costs what the engine costs, no more (issue 33).

The recording: the blueprint of ``benchmarks/conversation_run.py`` (``conversation: true``, a scripted
clarifier asking questions of ~180 characters, a HITL step answered from ``--answers`` with ~180-character
answers, ``max_loops`` iterations), its history bounded by ``truncate_turns`` (the last 20 turns, so every
prompt is a system prompt and 20 turns, as a real conversation sends), run once by a whole ``flujo run``
process into a SQLite store: that is set-up, not measured. Two shapes: ``conversation`` (one agent call an
iteration) and ``tool_calls`` (the clarifier calls a Python tool first: a model turn, the tool call, a model
turn). Each round then works on a copy of that store (copied outside its time), and compares, in the same
sitting and interleaved round by round, the replay with its floor:

- ``test_replay_engine``: the engine as ``flujo run`` builds it (``load_pipeline``, ``gc.freeze()``, the
  SQLite store, a ``Redactor``). The floor is the engine running the blueprint afresh (scripted agents, the
  answers given: the engine's own cost); the replay is ``load_recording`` of the recorded run, then the
  engine with that ``Replay`` (every agent call compared with the recorded prompt and served, every tool
  call and answer served), as ``flujo run --replay`` does. Measured: the replay, from opening the store to
  closing it.
- ``test_replay_process``: the same as whole processes: ``flujo run FILE --replay RUN_ID`` against ``flujo
  run FILE --input ... --answers FILE`` (both ``--no-input --json``), on the same copies.
- ``test_load_recording``: ``load_recording`` of the recorded run alone (read, decode, mask).

The replay's cost is asserted (``make bench`` only) against its floor's in CPU time (the SQLite writer's
thread, and a child process, included; wall-clock time moves with whatever else the machine runs): the
median replay costs at most ``CEILING`` (process) or ``ENGINE_CEILING`` (the engine alone, where reading
the recording weighs more: it is the one thing a replay does that a fresh run does not) times the median
fresh run. ``extra_info`` has both medians, in CPU and wall-clock time, and their ratios. Figures:
docs/performance.md ("Replaying a recorded run").

``make test`` runs each once with the benchmark disabled, on 3-iteration recordings, so none can rot.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.conversation_run import argv, write
from benchmarks.sizes import size
from benchmarks.test_flujo_run import TimedHuman, flujo_environment
from blueprints import load_pipeline
from core import (
    Answering,
    Engine,
    NullReporter,
    Pipeline,
    Recording,
    Redactor,
    Replay,
    load_recording,
    load_settings,
)
from core.store import open_store
from core.testing import ScriptedHuman

T = TypeVar("T")
ITERATIONS = size(1000, 3)
HISTORY = "{strategy: truncate_turns, max_turns: 20}"
INPUT = "Plan the offsite"
# The shapes of conversation recorded: how many calls each iteration makes (a model turn, a tool call and a
# model turn when the clarifier calls a tool first).
SHAPES = {"conversation": 1, "tool_calls": 3}
CEILING = 1.2  # a replay's median CPU time over the fresh run's, at most, as whole processes
ENGINE_CEILING = 1.4  # the same for the engine alone (load_recording included: docs/performance.md)
ROUNDS = size(5, 1)  # measured rounds of each, after a warm-up round; 3 for whole processes (seconds each)


@dataclass(frozen=True)
class Recorded:
    """The recorded run: its blueprint and answers file, the SQLite store holding it, and its id."""

    blueprint: Path
    answers: Path
    store: Path
    run_id: str
    calls: int  # the agent and tool calls it made

    def copy(self, to: Path) -> Path:
        """A copy of the store at ``to`` (SQLite's backup: whole, whatever its journal holds)."""
        source, target = sqlite3.connect(self.store), sqlite3.connect(to)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()
        return to


@pytest.fixture(scope="module", params=list(SHAPES))
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """A ``conversation: true`` run of ``ITERATIONS`` iterations in one of the ``SHAPES``, recorded by a whole
    ``flujo run`` process."""
    directory = tmp_path_factory.mktemp("replay")
    blueprint, answers = write(ITERATIONS, directory, history=HISTORY, tool=request.param == "tool_calls")
    store = directory / "recorded.db"
    done = subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", *argv(blueprint, answers), "--json"],
        env={**_environment(tmp_path_factory.mktemp("home")), "FLUJO_STATE_URI": str(store)},
        cwd=directory,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    return Recorded(blueprint, answers, store, result["run_id"], SHAPES[request.param] * ITERATIONS)


def _environment(home: Path) -> dict[str, str]:
    """The environment of the processes measured: no ``FLUJO_*`` setting of the shell (the module fixture
    runs before each test's isolation), an empty home, flujo importable."""
    env = {
        name: value
        for name, value in flujo_environment().items()
        if not name.startswith("FLUJO_") or name.startswith("FLUJO_TEST_")
    }
    return {**env, "HOME": str(home)}


@dataclass(frozen=True)
class Cost:
    """What a run cost, in seconds."""

    cpu: float
    wall: float


class Clock:
    """CPU time of this process (every thread: the SQLite writer's too) and of the children it waited for."""

    def __init__(self) -> None:
        self.cpu = _cpu()
        self.wall = time.perf_counter()

    def cost(self) -> Cost:
        return Cost(_cpu() - self.cpu, time.perf_counter() - self.wall)


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@dataclass
class Sitting:
    """The costs of the fresh runs (the floor) and the replays of one benchmark, round by round."""

    fresh: list[Cost]
    replay: list[Cost]

    def ratio(self, which: str) -> float:
        fresh = statistics.median(getattr(cost, which) for cost in self.fresh)
        replay = statistics.median(getattr(cost, which) for cost in self.replay)
        return float(replay / fresh)

    def report(self, benchmark: BenchmarkFixture, name: str) -> float:
        """Put the medians and ratios into ``extra_info``, print them, and give the CPU ratio."""
        medians = {
            f"{kind}_{which}_ms": round(statistics.median(getattr(cost, which) for cost in costs) * 1000, 1)
            for kind, costs in (("fresh", self.fresh), ("replay", self.replay))
            for which in ("cpu", "wall")
        }
        ratios = {"ratio_cpu": round(self.ratio("cpu"), 3), "ratio_wall": round(self.ratio("wall"), 3)}
        benchmark.extra_info.update(iterations=ITERATIONS, rounds=len(self.replay), **medians, **ratios)
        print(f"\n{name}, {ITERATIONS} iterations, {len(self.replay)} rounds: {medians} {ratios}")
        return ratios["ratio_cpu"]


def measured_rounds(
    benchmark: BenchmarkFixture,
    fresh: Callable[[T], Any],
    replay: Callable[[T], Any],
    prepare: Callable[[], T],
    *,
    rounds: int = ROUNDS,
) -> tuple[Any, Any, Sitting]:
    """Rounds of ``fresh`` then ``replay``, after a warm-up round, each given its own ``prepare()`` (a new
    copy of the recorded store, say), made outside its time: ``replay`` is what ``benchmark`` measures;
    ``fresh`` runs in its set-up. Both are timed by a ``Clock`` too (the ratio is of those). Each starts with
    the previous round's garbage collected. The last results of both and the costs of the measured rounds."""
    sitting = Sitting([], [])
    results: dict[str, Any] = {}

    def setup() -> tuple[tuple[T], dict[str, Any]]:
        given = prepare()
        _collected()
        clock = Clock()
        results["fresh"] = fresh(given)
        sitting.fresh.append(clock.cost())
        given = prepare()
        _collected()
        return (given,), {}

    def timed(given: T) -> Any:
        clock = Clock()
        results["replay"] = replay(given)
        sitting.replay.append(clock.cost())
        return results["replay"]

    gc.freeze()  # as flujo run freezes what it loaded before a run
    try:
        benchmark.pedantic(timed, setup=setup, rounds=rounds, warmup_rounds=size(1, 0))
    finally:
        gc.unfreeze()
    if benchmark.enabled:  # the warm-up round is not one of the measured
        del sitting.fresh[0], sitting.replay[0]
    return results["fresh"], results["replay"], sitting


def _collected() -> None:
    """The previous run's garbage collected (a replay's recording was frozen with what lives on), and what
    lives on frozen again, as a new ``flujo run`` process starts without either."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _copies(recorded: Recorded, directory: Path) -> Callable[[], Path]:
    """A new copy of the recorded store at each call."""
    numbers = itertools.count()
    return lambda: recorded.copy(directory / f"{next(numbers)}.db")


def test_replay_engine(benchmark: BenchmarkFixture, recorded: Recorded, tmp_path: Path) -> None:
    settings = load_settings()
    answers = json.loads(recorded.answers.read_text())["answer"]
    nobody = ScriptedHuman()  # every answer of the replay is the recording's
    copies = _copies(recorded, tmp_path)

    def prepare() -> tuple[Path, Pipeline]:
        """A copy of the store, and the blueprint compiled anew (a scripted model takes its replies in turn:
        each run needs its own, as each ``flujo run`` process has)."""
        return copies(), load_pipeline(recorded.blueprint, settings)

    async def fresh(path: Path, pipeline: Pipeline) -> str:
        store = await open_store(str(path))
        try:
            engine = Engine(store=store, human=TimedHuman(answers), reporter=NullReporter(), redactor=Redactor())
            outcome = await engine.run(pipeline, INPUT)
        finally:
            await store.close()
        return outcome.status  # small: asyncio.run's result is repr'd at its end (CPython 3.11)

    async def replay(path: Path, pipeline: Pipeline) -> tuple[str, dict[str, Any]]:
        store = await open_store(str(path))
        try:
            redactor = Redactor()
            recording = await load_recording(store, recorded.run_id, redactor)
            gc.freeze()  # as flujo run does once the recording is loaded: it lives as long as the run
            served = Replay(recording)
            answering = Answering(replay=recording.replayed_answers())
            engine = Engine(
                store=store,
                human=nobody,
                reporter=NullReporter(),
                redactor=redactor,
                answering=answering,
                replay=served,
            )
            outcome = await engine.run(pipeline, INPUT)
        finally:
            await store.close()
        return outcome.status, served.report()

    status, (replayed, report), sitting = measured_rounds(
        benchmark, lambda given: asyncio.run(fresh(*given)), lambda given: asyncio.run(replay(*given)), prepare
    )
    assert (status, replayed) == ("completed", "completed")
    assert report["clean"] and not report["diverged"]
    assert (report["replayed_calls"], report["replayed_answers"]) == (recorded.calls, ITERATIONS)
    assert nobody.asked == []
    if benchmark.enabled:
        assert sitting.report(benchmark, "the engine, replaying") <= ENGINE_CEILING


@pytest.mark.slow
def test_replay_process(benchmark: BenchmarkFixture, recorded: Recorded, tmp_path: Path) -> None:
    env = _environment(tmp_path / "home")
    command = [sys.executable, "-m", "flujo_cli.main"]
    fresh_argv = [*command, *argv(recorded.blueprint, recorded.answers), "--json"]
    replay_argv = [*command, "run", str(recorded.blueprint), "--replay", recorded.run_id, "--no-input", "--json"]

    def run(arguments: list[str], store: Path) -> dict[str, Any]:
        done = subprocess.run(arguments, env={**env, "FLUJO_STATE_URI": str(store)}, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    fresh, replayed, sitting = measured_rounds(
        benchmark,
        lambda store: run(fresh_argv, store),
        lambda store: run(replay_argv, store),
        _copies(recorded, tmp_path),
        rounds=size(3, 1),
    )
    assert fresh["status"] == replayed["status"] == "completed"
    assert fresh["output"] == replayed["output"]
    report = replayed["replay"]
    assert report["clean"] and not report["diverged"]
    assert (report["replayed_calls"], report["replayed_answers"]) == (recorded.calls, ITERATIONS)
    if benchmark.enabled:
        assert sitting.report(benchmark, "flujo run --replay, whole processes") <= CEILING


def test_load_recording(benchmark: BenchmarkFixture, recorded: Recorded) -> None:
    loaded: list[Recording] = []

    async def load() -> None:  # the recording kept aside: asyncio.run's result is repr'd at its end (3.11)
        async with await open_store(str(recorded.store), mode="read") as store:
            loaded.append(await load_recording(store, recorded.run_id, Redactor()))

    def fresh() -> None:
        loaded.clear()  # the previous round's recording, dropped and collected outside the time
        gc.collect()

    benchmark.pedantic(lambda: asyncio.run(load()), setup=fresh, rounds=size(10, 1), warmup_rounds=size(1, 0))
    (recording,) = loaded
    assert (len(recording.calls), len(recording.answers)) == (recorded.calls, ITERATIONS)
    if benchmark.enabled and benchmark.stats is not None:
        per_call = benchmark.stats.stats.median / recorded.calls
        benchmark.extra_info.update(calls=recorded.calls, ms_per_call=round(per_call * 1000, 4))
