"""flujo's start-up against its dependencies' import, as whole processes measured interleaved (issue 36, item 4).

Three processes, one after the other in every round, so that whatever else the machine runs weighs on each
alike:

- ``deps``: ``python -c "import typer, pydantic, jinja2, yaml, rich, aiosqlite"``, the floor: what any
  program built on the same libraries pays before doing anything;
- ``one_step``: ``flujo run benchmarks/data_one_step.yaml --input hello --no-input`` (one ``model: echo``
  agent, its run written to a SQLite store);
- ``conversation``: a 1-iteration conversational run of ``benchmarks/conversation_run.py`` (a scripted
  clarifier asks, the answer comes from ``--answers``).

No network and no API key: ``echo`` and ``scripted`` are flujo's offline models. Each kind keeps its store
across rounds (a warm-up round creates and migrates it), as a user's store exists before the run, and the
blueprint files it validated (``~/.cache/flujo``), as a user runs a blueprint again; with ``--cold`` each
run validates its blueprint, as the first run after an edit does. The figures
are the medians of wall-clock and CPU time (user + system, from ``RUSAGE_CHILDREN``) of each kind, and their
ratios to ``deps``; the targets are ``TARGETS``. Used by ``benchmarks/test_cli_startup.py``, and from a shell,
to compare trees in one sitting (each ``--tree`` is put first on ``PYTHONPATH``; rounds alternate between them)::

    .venv/bin/python -m benchmarks.startup_ratio --rounds 30 --tree /tmp/su-before --tree .

Times on these machines move by ±20 % between sittings. ``--instructions`` counts instead, with callgrind
(``valgrind``, not installed by ``make``), the instructions of one process of each kind per tree, after the
warm-up round: the same count in any sitting, and the ratios of those counts.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.conversation_run import argv as conversation_argv
from benchmarks.conversation_run import write

HERE = Path(__file__).resolve().parent
DEPENDENCIES = "import typer, pydantic, jinja2, yaml, rich, aiosqlite"
KINDS = ("deps", "one_step", "conversation")
# The most each kind may take, as a multiple of ``deps`` (issue 36: flujo's own code at most half of that).
TARGETS = {"one_step": 1.5, "conversation": 1.6}


@dataclass(frozen=True)
class Cost:
    """One process: its wall-clock and CPU (user + system) seconds."""

    wall: float
    cpu: float


@dataclass
class Sitting:
    """The costs of each kind of process, round by round."""

    costs: dict[str, list[Cost]] = field(default_factory=lambda: {kind: [] for kind in KINDS})

    def median(self, kind: str, which: str) -> float:
        return statistics.median(getattr(cost, which) for cost in self.costs[kind])

    def ratio(self, kind: str, which: str, deps: Sitting | None = None) -> float:
        """``kind``'s median over the dependencies' median (``deps``'s, when given: see ``pooled``)."""
        return self.median(kind, which) / (deps or self).median("deps", which)

    def summary(self, deps: Sitting | None = None) -> dict[str, float]:
        """Medians in milliseconds and ratios to the dependencies' import, by kind and measure."""
        found: dict[str, float] = {}
        for kind in KINDS:
            for which in ("wall", "cpu"):
                found[f"{kind}_{which}_ms"] = round(
                    (deps if kind == "deps" and deps else self).median(kind, which) * 1000, 1
                )
                if kind != "deps":
                    found[f"{kind}_{which}_ratio"] = round(self.ratio(kind, which, deps), 3)
        return found

    def summary_of(self, kind: str) -> dict[str, float]:
        """The medians of ``kind`` and of the dependencies' import, and the ratios (when only ``kind`` ran)."""
        found: dict[str, float] = {}
        for which in ("wall", "cpu"):
            found[f"deps_{which}_ms"] = round(self.median("deps", which) * 1000, 1)
            found[f"{kind}_{which}_ms"] = round(self.median(kind, which) * 1000, 1)
            found[f"{which}_ratio"] = round(self.ratio(kind, which), 3)
        return found


def pooled(sittings: list[Sitting]) -> Sitting:
    """The dependencies' imports of every tree of a sitting as one: it is the same process whatever the tree
    (only ``PYTHONPATH`` differs), so every tree is divided by the same, steadier, median."""
    return Sitting(
        {"deps": [cost for found in sittings for cost in found.costs["deps"]], "one_step": [], "conversation": []}
    )


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(command: list[str], env: dict[str, str], cwd: Path) -> Cost:
    """Run ``command`` to its end; what it cost. A process that fails is an error, not a figure."""
    cpu, wall = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    cost = Cost(time.perf_counter() - wall, _children_cpu() - cpu)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}: {done.stderr[-2000:]}")
    return cost


@dataclass(frozen=True)
class Commands:
    """The three processes of a sitting for one tree of flujo's code (``tree`` first on ``PYTHONPATH``)."""

    tree: Path
    directory: Path  # where the stores, the conversation's files and the empty home are
    cold: bool = False  # each run without the validated blueprint files of the runs before (user_cache.py)

    def environment(self, store: str) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items() if not name.startswith("FLUJO_")}
        home = self.directory / "home"
        home.mkdir(parents=True, exist_ok=True)
        return {**env, "PYTHONPATH": str(self.tree), "HOME": str(home), "FLUJO_STATE_URI": str(store)}

    def argv(self, kind: str) -> list[str]:
        if kind == "deps":
            return [sys.executable, "-c", DEPENDENCIES]
        flujo = [sys.executable, "-m", "flujo_cli.main"]
        if kind == "one_step":
            return [*flujo, "run", str(HERE / "data_one_step.yaml"), "--input", "hello", "--no-input"]
        folder = self.directory / "conversation"
        blueprint, answers = folder / "chat.yaml", folder / "answers.json"
        if not blueprint.exists():
            write(1, folder)
        return [*flujo, *conversation_argv(blueprint, answers)]

    def run(self, kind: str, *, prefix: Sequence[str] = ()) -> Cost:
        env = self.environment(str(self.directory / f"{kind}.db"))
        if self.cold:
            shutil.rmtree(self.directory / "home" / ".cache", ignore_errors=True)
        return timed([*prefix, *self.argv(kind)], env, self.directory)

    def instructions(self, kind: str) -> int:
        """The instructions callgrind counts in one process of ``kind`` (all its threads)."""
        out = self.directory / f"callgrind-{kind}.out"
        self.run(kind, prefix=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"])
        return callgrind_total(out.read_text())


def callgrind_total(report: str) -> int:
    """The total count of a callgrind output file."""
    for line in report.splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise ValueError("callgrind wrote no total")


def compile_methods(tree: Path) -> None:
    """Keep the methods of ``tree``'s dataclasses, as ``make`` does (flujo_cli/method_cache.py): where
    ``PYTHONDONTWRITEBYTECODE`` is set the flujo command never writes them. A tree from before has none."""
    if (tree / "flujo_cli" / "compile_methods.py").exists():
        env = {**os.environ, "PYTHONPATH": str(tree)}
        # From ``tree``: ``-m`` puts the working directory first on the path, before ``PYTHONPATH``.
        run = [sys.executable, "-m", "flujo_cli.compile_methods"]
        subprocess.run(run, env=env, cwd=tree, check=True, capture_output=True)


def _prepared(trees: list[Path], directory: Path, cold: bool) -> list[Commands]:
    """The processes of each tree, in a folder of its own, its dataclass methods compiled."""
    commands = [Commands(tree.resolve(), directory / f"tree{number}", cold) for number, tree in enumerate(trees)]
    for made in commands:
        compile_methods(made.tree)
    return commands


def sitting(trees: list[Path], rounds: int, directory: Path, *, warmup: int = 1, cold: bool = False) -> list[Sitting]:
    """``rounds`` measured rounds (after ``warmup`` unmeasured ones): in each, for each tree in turn, the
    three kinds of process one after the other. One ``Sitting`` per tree, in the order given. ``cold``:
    every run validates its blueprint, as the first run after an edit does."""
    commands = _prepared(trees, directory, cold)
    sittings = [Sitting() for _ in trees]
    for round_number in range(warmup + rounds):
        for made, found in zip(commands, sittings, strict=True):
            for kind in KINDS:
                cost = made.run(kind)
                if round_number >= warmup:
                    found.costs[kind].append(cost)
    return sittings


def instruction_counts(trees: list[Path], directory: Path, *, cold: bool = False) -> list[dict[str, int]]:
    """Each tree's instructions per kind of process, counted after one warm-up round."""
    commands = _prepared(trees, directory, cold)
    for made in commands:
        for kind in KINDS:
            made.run(kind)
    return [{kind: made.instructions(kind) for kind in KINDS} for made in commands]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--tree", type=Path, action="append", help="a tree of flujo's code (default: this one)")
    parser.add_argument("--cold", action="store_true", help="no blueprint validated before: as after an edit")
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind instead")
    arguments = parser.parse_args()
    trees = arguments.tree or [HERE.parent]
    if arguments.instructions:
        with tempfile.TemporaryDirectory() as scratch:
            counts = instruction_counts(trees, Path(scratch), cold=arguments.cold)
        print("instructions (callgrind), and ratios to the dependencies' import")
        for tree, count in zip(trees, counts, strict=True):
            ratios = "  ".join(f"{kind} {count[kind] / count['deps']:.2f}" for kind in KINDS[1:])
            print(f"{tree}: " + "  ".join(f"{kind} {count[kind] / 1e6:,.0f} M" for kind in KINDS) + f"   {ratios}")
        return
    with tempfile.TemporaryDirectory() as scratch:
        found = sitting(trees, arguments.rounds, Path(scratch), cold=arguments.cold)
    print(f"{arguments.rounds} rounds, interleaved; medians (ms) and ratios to the dependencies' import (pooled)")
    deps = pooled(found)
    for tree, measured in zip(trees, found, strict=True):
        summary = measured.summary(deps)
        print(f"\n{tree}")
        for kind in KINDS:
            line = f"  {kind:13} wall {summary[f'{kind}_wall_ms']:7.1f}  cpu {summary[f'{kind}_cpu_ms']:7.1f}"
            if kind != "deps":
                line += f"   ratio wall {summary[f'{kind}_wall_ratio']:.2f}  cpu {summary[f'{kind}_cpu_ratio']:.2f}"
                line += f"  (target <= {TARGETS[kind]})"
            print(line)


if __name__ == "__main__":
    main()
