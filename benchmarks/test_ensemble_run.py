"""What a user runs: an ensemble compiled from YAML, on the SQLite store (issue 19).

The blueprint and answers come from ``benchmarks/ensemble_run.py``: four participants, a note taker that
speaks every round and a writer, a critic (JSON replies) and an editor (a person, answered from
``--answers``) who take turns by conditions on the history and the context; two turns a round, the editor
asked every third round, ``max_total_turns`` rounds. Figures are as measured (docs/performance.md); the
conversational loop's targets (benchmarks/test_flujo_run.py) are the yardstick.

- ``test_engine_rounds``: the engine alone, as ``flujo run`` builds it (``load_pipeline``, then
  ``gc.freeze()``, the SQLite store, a ``Redactor``), N rounds; ``extra_info`` has the cost per round and
  the cost of a cycle of three rounds (writer, critic, editor) at the end against the same near round 10.
- ``test_ensemble_run_process``: whole ``flujo run`` processes of 1, 10, 100 and 1,000 rounds with their
  peak RSS; each checks the run's ``--json`` output (rounds, turns, how it ended).

``make test`` runs each once with the benchmark disabled, at 4 rounds (so the editor is asked once; the
process only at that size), so none can rot; ``make bench`` measures.
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import sizes
from benchmarks.ensemble_run import argv, questions, write
from benchmarks.sizes import size
from benchmarks.test_flujo_run import TimedHuman, flujo_environment, frozen_rounds, measured, process_rounds
from core import NullReporter

CYCLE = 3  # rounds: the writer, the critic, the editor


def _rounds(wanted: int) -> int:
    """``wanted``, or at most 4 when ``make test`` runs the benchmark once, untimed."""
    return size(wanted, min(wanted, 4))


def _expected(rounds: int) -> dict[str, Any]:
    return {"rounds": rounds, "turns": 2 * rounds, "ended": "turn_limit"}


class RoundClock(NullReporter):
    """A reporter that shows nothing and notes when each round's first turn started (``review/N/...``)."""

    def __init__(self) -> None:
        super().__init__()
        self.started: dict[int, float] = {}

    def step_started(self, path: str, name: str, kind: str) -> None:
        parts = path.split("/")
        if len(parts) == 3 and parts[1].isdigit():
            self.started.setdefault(int(parts[1]), time.perf_counter())

    def growth(self) -> float:
        """Median time of a cycle of three rounds at the end, over the same for cycles starting at rounds
        5-15 (a cycle, not a round: the three kinds of round cost differently)."""
        times = [self.started[number] for number in sorted(self.started)]
        spans = [times[i + CYCLE] - times[i] for i in range(len(times) - CYCLE)]
        if len(spans) < 30:
            return 1.0
        return statistics.median(spans[-10:]) / statistics.median(spans[4:15])


@pytest.mark.parametrize("wanted", [10, 100, 1000])
def test_engine_rounds(benchmark: BenchmarkFixture, tmp_path: Path, wanted: int) -> None:
    from blueprints import load_pipeline, validate_file
    from core import Engine, Redactor, load_settings
    from core.store import open_store

    rounds = _rounds(wanted)
    blueprint, answers_file = write(rounds, tmp_path)
    settings = load_settings()
    assert validate_file(blueprint, settings=settings) == []  # as flujo validate: no error, no warning
    answers = json.loads(answers_file.read_text())["editor"]
    pipeline = load_pipeline(blueprint, settings)
    counter = itertools.count()
    clocks: list[RoundClock] = []
    humans: list[TimedHuman] = []

    async def run() -> Any:
        store = await open_store(str(tmp_path / f"{next(counter)}.db"))
        clock, human = RoundClock(), TimedHuman(answers)
        clocks.append(clock)
        humans.append(human)
        try:
            engine = Engine(store=store, human=human, reporter=clock, redactor=Redactor())
            outcome = await engine.run(pipeline, "Plan the offsite")
        finally:
            await store.close()
        assert outcome.status == "completed", outcome.error
        return outcome.output

    output = frozen_rounds(benchmark, run, large=wanted >= 1000)
    assert output == _expected(rounds)
    assert len(humans[-1].asked) == questions(rounds)
    assert sorted(clocks[-1].started) == list(range(1, rounds + 1))
    if benchmark.enabled and benchmark.stats is not None:
        per_round = benchmark.stats.stats.median / rounds
        growth = statistics.median(clock.growth() for clock in clocks)
        benchmark.extra_info.update(ms_per_round=round(per_round * 1000, 3), last_vs_10th=round(growth, 2))
        print(f"\n{rounds} rounds: {per_round * 1000:.3f} ms each; the last ones cost {growth:.2f}x")


# Under make test one process is enough to keep this one from rotting (each costs a second or so).
@pytest.mark.slow
@pytest.mark.parametrize("rounds", [1, 10, 100, 1000] if sizes.FULL else [4])
def test_ensemble_run_process(benchmark: BenchmarkFixture, tmp_path: Path, rounds: int) -> None:
    blueprint, answers = write(rounds, tmp_path / f"n{rounds}")
    printed = tmp_path / "output.json"
    command, env = measured(argv(blueprint, answers), str(printed)), flujo_environment()
    counter = itertools.count()
    code, rss = process_rounds(
        benchmark, command, env, lambda: str(tmp_path / f"{next(counter)}.db"), large=rounds >= 1000
    )
    assert code == 0
    result = json.loads(printed.read_text())
    assert result["status"] == "completed"
    assert result["output"] == _expected(rounds)
    assert len(result["answers"]) == questions(rounds)
    benchmark.extra_info.update(rounds=rounds, peak_rss_kib=rss)
