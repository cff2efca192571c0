"""Instructions per conversational iteration on SQLite and on PostgreSQL, counted by callgrind (issue 36, item 2).

CPU time on these machines moves by ±20 % between runs of the same code, so a 5 % change in what a store's
write costs cannot be seen in ``pg_iteration.py``'s CPU ratio. Instructions can: callgrind counts those this
process executes, exactly (not the server's, nor the kernel's while the process waits on a socket).

``python benchmarks/pg_instructions.py [--tree DIR ...] [--small N] [--large M]`` runs, under
``valgrind --tool=callgrind``, ``N`` and then ``M`` iterations of ``benchmarks/conversation_run.py``'s
blueprint through ``Engine.run`` (as ``pg_iteration.py`` runs them), on a SQLite file and on the tests'
throwaway PostgreSQL server (tests/support/postgres_server.py), for each tree (default: this one), and prints
``(I(M) - I(N)) / (M - N)``: the instructions of one iteration, start-up and imports cancelled out.
``python benchmarks/pg_instructions.py run N STORE`` is one such run (``STORE``: ``sqlite`` or a URI).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: the tree under test first

HERE = Path(__file__).resolve()


class Human:
    def __init__(self, answers: list[str]) -> None:
        self._answers = iter(answers)

    async def ask(self, question: Any) -> str:
        return next(self._answers)


async def iterations(count: int, store_uri: str) -> None:
    """``count`` conversational iterations through ``Engine.run`` on the store ``store_uri`` names."""
    from benchmarks import conversation_run
    from blueprints import load_pipeline
    from core import Engine, NullReporter, Redactor, load_settings
    from core.store import open_store

    directory = Path(tempfile.mkdtemp())
    blueprint, answers_file = conversation_run.write(count, directory)
    answers = json.loads(answers_file.read_text())["answer"]
    pipeline = load_pipeline(blueprint, load_settings())
    gc.freeze()
    store = await open_store(str(directory / "flujo.db") if store_uri == "sqlite" else store_uri)
    try:
        engine = Engine(store=store, human=Human(answers), reporter=NullReporter(), redactor=Redactor())
        outcome = await engine.run(pipeline, "Plan the offsite")
        assert outcome.status == "completed", outcome
    finally:
        await store.close()


def counted(tree: Path, count: int, store_uri: str) -> int:
    """The instructions callgrind counts in one ``run`` process of ``tree``."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        subprocess.run(
            [*valgrind, sys.executable, str(HERE), "run", str(count), store_uri],
            env={**os.environ, "PYTHONPATH": str(tree)},
            capture_output=True,
            check=True,
        )
        for line in out.read_text().splitlines():
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise RuntimeError(f"callgrind wrote no total for {tree}")


def main() -> None:
    if sys.argv[1:2] == ["run"]:
        asyncio.run(iterations(int(sys.argv[2]), sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, action="append", help="a tree of flujo's code (default: this one)")
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=400)
    arguments = parser.parse_args()
    from tests.support import postgres_server

    server = postgres_server.start()
    try:
        for tree in arguments.tree or [HERE.parent.parent]:
            per: dict[str, float] = {}
            for kind in ("sqlite", "postgresql"):

                def uri(kind: str = kind) -> str:
                    return "sqlite" if kind == "sqlite" else postgres_server.empty_store_uri(server.uri)

                small, large = counted(tree, arguments.small, uri()), counted(tree, arguments.large, uri())
                per[kind] = (large - small) / (arguments.large - arguments.small)
            print(
                f"{tree}: instructions per iteration: SQLite {per['sqlite'] / 1e6:.3f} M, PostgreSQL "
                f"{per['postgresql'] / 1e6:.3f} M ({per['postgresql'] / per['sqlite']:.2f} x)",
                flush=True,
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
