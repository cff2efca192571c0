"""One process that runs a conversation with or without the provenance, for instruction counts.

``python benchmarks/provenance_run.py N on|off``: N iterations of ``benchmarks/conversation_run.py``'s
blueprint (a scripted clarifier and a HITL step, ``truncate_tokens`` 1,024: from about iteration 10 every
call drops turns and says why) through ``Engine.run`` into a new SQLite store, as ``flujo run`` runs it.
``off`` turns the provenance off as ``benchmarks/test_provenance.py`` does (no origins, no turn numbers on
the steps' events, no ``why``). Run under ``valgrind --tool=callgrind`` at two sizes, the difference of the
instruction counts over the difference of N is the cost of an iteration, start-up left out
(docs/performance.md, "Why each message is there"). Prints the run's status and how many prompt events
stored a ``why``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: the tree under test first

import core.conversation.injection as injection
import core.conversation.turns as turns
from benchmarks import conversation_run
from blueprints import load_pipeline
from core import Engine, NullReporter, Redactor, load_settings
from core.store import open_store
from core.testing import ScriptedHuman


@contextlib.contextmanager
def provenance_off() -> Iterator[None]:
    """Within it, the engine records no provenance: no origins on the turns, no turn numbers on the steps'
    events, no ``why`` on the prompts (``benchmarks/test_provenance.py``'s "without" too)."""
    saved = injection._why, injection.stored, injection._as_before, turns.step_origin, turns.told
    injection._why = lambda *args: {}  # type: ignore[assignment]
    injection.stored = lambda why, history: {}  # type: ignore[assignment]
    injection._as_before = lambda why, history, path: why  # type: ignore[assignment]
    turns.step_origin = lambda *args, **kwargs: None  # type: ignore[assignment]
    turns.told = lambda origin, number: {}  # type: ignore[assignment]
    try:
        yield
    finally:
        injection._why, injection.stored, injection._as_before, turns.step_origin, turns.told = saved


async def _run(iterations: int, folder: Path) -> str:
    blueprint, answers_file = conversation_run.write(
        iterations, folder, history="{strategy: truncate_tokens, max_tokens: 1024}"
    )
    answers = json.loads(answers_file.read_text())["answer"]
    pipeline = load_pipeline(blueprint, load_settings())
    store = await open_store(str(folder / "flujo.db"))
    try:
        engine = Engine(store=store, human=ScriptedHuman(answers), reporter=NullReporter(), redactor=Redactor())
        outcome = await engine.run(pipeline, "Plan the offsite")
        prompts = [e for e in await store.events(outcome.run_id, kind="agent.prompt")]
    finally:
        await store.close()
    whys = sum(1 for event in prompts if "why" in event.payload)
    return f"{outcome.status}: {len(prompts)} prompt events, {whys} with a why"


def main() -> None:
    iterations, mode = int(sys.argv[1]), sys.argv[2]
    if mode not in ("on", "off"):
        raise SystemExit("usage: provenance_run.py N on|off")
    with tempfile.TemporaryDirectory() as folder, provenance_off() if mode == "off" else contextlib.nullcontext():
        print(asyncio.run(_run(iterations, Path(folder))))


if __name__ == "__main__":
    main()
