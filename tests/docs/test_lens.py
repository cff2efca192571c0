"""docs/lens.md shows real output (documented output is tested, as tests/docs/test_examples.py does for ``flujo run``).

The page lists, in a ```sh block whose first line is ``# the runs the examples below look at``, the
``flujo run`` commands that made the runs it shows. This test makes those runs the same way, with the run
ids the page shows (in order) and a fixed clock (so durations and start times come out the same on every
machine), then runs every ```text block that starts with ``$ flujo lens ...`` and compares what it prints
on stdout with the rest of the block. Two things differ from machine to machine and are shown as on a
reader's: the process that ran a run (``pid 4242 on laptop``) and where the repository is checked out
(``/home/you/flujo``). After a deliberate change, rewrite the blocks with
``LENS_UPDATE_DOCS=1 pytest tests/docs/test_lens.py`` and read the diff.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import core
import core.engine
import core.store
import core.store.rows.claims
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo

PAGE = ROOT / "docs" / "lens.md"
SETUP = "# the runs the examples below look at\n"
RUN_IDS = ["3f2a9c1e5b7d4a60", "8c41d2e07a9b3f15", "b7e05a3c9d1f2468", "d5e8a1f4c2b69370"]
START = 1_795_512_600.0  # 2026-11-24 09:30:00 UTC
CHECKOUT = "/home/you/flujo"  # where the page says the repository is checked out
TICK = 0.00137  # seconds per reading of the clock: about what a run on the project's machine takes


class FakeClock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        self.now += TICK
        return self.now


@pytest.fixture
def fixed_world(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(ROOT)  # the page shows paths relative to the repository root
    monkeypatch.setattr(time, "time", FakeClock())
    ids = iter(RUN_IDS)
    # Where the command line reads it and where the engine does. The front door's name first: core's front
    # door keeps a name once read, and read after the engine's was replaced it would keep the replacement
    # for good (monkeypatch would put back what it read).
    monkeypatch.setattr(core, "new_run_id", lambda: next(ids))
    monkeypatch.setattr(core.engine, "new_run_id", core.new_run_id)
    monkeypatch.setattr(core.store, "process_label", lambda: "pid 4242 on laptop")
    monkeypatch.setattr(core.store.rows.claims, "process_label", core.store.process_label)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def blocks(text: str, language: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of each ```language block."""
    return [(m.start(1), m.end(1), m.group(1)) for m in re.finditer(rf"^```{language}\n(.*?)^```$", text, re.S | re.M)]


def test_the_lens_page_shows_real_output(fixed_world: None, state_db: Path) -> None:
    page = PAGE.read_text(encoding="utf-8")
    setup = [content for _, _, content in blocks(page, "sh") if content.startswith(SETUP)]
    assert len(setup) == 1, f"docs/lens.md needs one ```sh block starting with {SETUP!r}"
    for line in setup[0].splitlines()[1:]:
        code, _, err = flujo(shlex.split(line.split("  #")[0])[1:])
        assert code in (exit_codes.OK, exit_codes.PAUSED), f"{line}\n{err}"
    # The runs' blueprints as at the reader's checkout, in the store itself: lens wraps a long line, and a
    # long checkout's path (this one's) would wrap where the page's does not.
    with contextlib.closing(sqlite3.connect(state_db)) as db, db:
        db.execute("UPDATE runs SET source = replace(source, ?, ?)", (str(ROOT), CHECKOUT))
    shown = [b for b in blocks(page, "text") if b[2].startswith("$ flujo lens ")]
    assert shown, "docs/lens.md shows no flujo lens output"
    outputs = []
    for _, _, content in shown:  # in the page's order: a reader running them in turn sees the same
        command, _, expected = content.partition("\n")
        code, out, err = flujo(shlex.split(command)[2:])
        assert code == exit_codes.OK, f"{command}\n{err}"
        outputs.append((command, expected, out.replace(str(ROOT), CHECKOUT)))
    updated = page
    for (start, end, _), (command, expected, out) in reversed(list(zip(shown, outputs, strict=True))):
        if os.environ.get("LENS_UPDATE_DOCS"):
            updated = updated[:start] + f"{command}\n{out}" + updated[end:]
        else:
            assert out == expected, f"docs/lens.md: the output shown for {command!r} is not the real one"
    if updated != page:
        PAGE.write_text(updated, encoding="utf-8")
