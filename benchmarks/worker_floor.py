"""The floor of ``flujo worker``: the same one-step runs through ``Engine.run`` in one process, the blueprint
compiled once (issue 36; ``benchmarks/test_queue.py`` measures workers against it).

``python benchmarks/worker_floor.py N [--state URI] [--blueprint FILE]``: compiles the blueprint (by default
``BLUEPRINT``: one step, a built-in agent, no subprocess) with ``load_pipeline`` once, opens the store
(``--state``: a SQLite file or a PostgreSQL URI; by default a SQLite file in a temporary directory), then
runs ``N`` runs with the inputs ``"run 0"``, ``"run 1"``, … one after another through one ``Engine`` (a
``Redactor`` of the settings' secrets, no terminal), as a program using flujo as a library would. It prints
``ready`` when the loop starts (a caller timing the whole process can time the loop from that line, as it
times a worker from its first line) and then one line: ``N runs in S s: R runs/s``.

To compare two source trees, run it with ``PYTHONPATH`` pointing at each (it imports flujo from
``sys.path``). docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: the tree under test first

from blueprints import load_pipeline
from core import Engine, NullReporter, Redactor, load_settings, secret_values
from core.store import open_store

BLUEPRINT = """\
version: "0.1"
name: queued
steps:
  - kind: step
    name: echo
    agent: {id: flujo.builtins.stringify}
"""
"""One step, a built-in agent that returns its input as text: what is measured is flujo's work per run."""


async def floor(runs: int, state: str, blueprint: Path) -> float:
    """Run ``runs`` runs of ``blueprint`` on the store at ``state``; the seconds the loop took."""
    settings = load_settings()
    pipeline = load_pipeline(blueprint, settings)
    store = await open_store(state)
    try:
        engine = Engine(
            store=store,
            reporter=NullReporter(),
            redactor=Redactor(extra_patterns=settings.redact_patterns, secret_values=secret_values(settings)),
        )
        print("ready", flush=True)
        started = time.perf_counter()
        for number in range(runs):
            outcome = await engine.run(pipeline, f"run {number}")
            assert outcome.status == "completed", outcome
        return time.perf_counter() - started
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=int)
    parser.add_argument("--state", help="the store: a SQLite file or a PostgreSQL URI (default: a new SQLite file)")
    parser.add_argument("--blueprint", type=Path, help="the blueprint (default: BLUEPRINT, written to a temp dir)")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp())
    blueprint = args.blueprint
    if blueprint is None:
        blueprint = directory / "bp.yaml"
        blueprint.write_text(BLUEPRINT, encoding="utf-8")
    seconds = asyncio.run(floor(args.runs, args.state or str(directory / "flujo.db"), blueprint))
    print(f"{args.runs} runs in {seconds:.3f} s: {args.runs / seconds:.1f} runs/s", flush=True)


if __name__ == "__main__":
    main()
