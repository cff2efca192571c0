"""Where a 1-step run's start-up goes, part by part, against the dependencies' import (issue 36, item 4).

``startup_ratio.py`` says how far a run is from its target; this says what each layer adds on the way. Each
part is one process that does what the parts before it did, and one thing more, counted by callgrind (the
same count in any sitting):

- ``deps``: the floor, ``python -c "import typer, pydantic, jinja2, yaml, rich, aiosqlite"``;
- ``settings``: then flujo's settings read as the command line reads them (``settings_with_state``: from the
  cache folder, checked before; a run imports none of pydantic's models since session 20);
- ``core``: then the modules of ``core`` a run executes with (the engine, the SQLite store, the agents);
- ``blueprints``: then the blueprint language (its schema's dataclasses, checks and compiler);
- ``cli``: then the command line's modules a run imports (``flujo_cli.main``, the ``run`` command): a little
  more than the run imports, so it may exceed ``run``;
- ``run``: ``flujo run benchmarks/data_one_step.yaml`` itself, its blueprint validated before.

Every part but ``deps`` and ``run`` installs the dataclass-method cache first, as the ``flujo`` command
does (flujo_cli/method_cache.py). ``valgrind`` is not installed by ``make``::

    .venv/bin/python -m benchmarks.startup_parts [--tree DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.startup_ratio import DEPENDENCIES, HERE, Commands, callgrind_total, compile_methods

_CACHE = "from flujo_cli.method_cache import install\ninstall()\n"
_SETTINGS = "from flujo_cli.store_access import settings_with_state\nsettings_with_state(None)\n"
_CLI = "import flujo_cli.main, flujo_cli.commands.run\n"
_CORE = "import core.engine, core.store.sqlite_backend, core.agents, core.steps.kinds\n"
# Each part's code, after the parts before it (``run`` is the flujo command itself).
PARTS = {
    "deps": DEPENDENCIES,
    "settings": f"{_CACHE}{DEPENDENCIES}\n{_SETTINGS}",
    "core": f"{_CACHE}{DEPENDENCIES}\n{_SETTINGS}{_CORE}",
    "blueprints": f"{_CACHE}{DEPENDENCIES}\n{_SETTINGS}{_CORE}import blueprints\n",
    "cli": f"{_CACHE}{DEPENDENCIES}\n{_SETTINGS}{_CORE}import blueprints\n{_CLI}",
    "run": "",
}


def counts(tree: Path, directory: Path) -> dict[str, int]:
    """The instructions of each part's process, for ``tree``'s code."""
    commands = Commands(tree.resolve(), directory)
    # As ``make`` does: where PYTHONDONTWRITEBYTECODE is set a changed module would be compiled in every process.
    packages = ["core", "blueprints", "lens", "flujo_cli"]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], cwd=commands.tree, check=True,
                   capture_output=True)  # fmt: skip
    compile_methods(commands.tree)
    commands.run("one_step")  # its store made, its blueprint validated, as a user's second run finds them
    found: dict[str, int] = {}
    for part, code in PARTS.items():
        if part == "run":
            found[part] = commands.instructions("one_step")
            continue
        out = directory / f"callgrind-{part}.out"
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        run = [*valgrind, sys.executable, "-c", code]
        subprocess.run(run, env=commands.environment(str(directory / "flujo.db")), cwd=directory, check=True,
                       capture_output=True)  # fmt: skip
        found[part] = callgrind_total(out.read_text())
    return found


def report(found: dict[str, int]) -> str:
    """A line per part: its count, its ratio to ``deps``, and what it adds to the part before."""
    lines, before = [], None
    for part, count in found.items():
        added = "" if before is None else f"  +{(count - before) / 1e6:,.0f} M"
        lines.append(f"{part:<11} {count / 1e6:>7,.0f} M  {count / found['deps']:.2f}x{added}")
        before = count
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="a tree of flujo's code (default: this one)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        print(report(counts(arguments.tree, Path(scratch))), flush=True)


if __name__ == "__main__":
    main()
