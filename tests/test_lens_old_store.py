"""A run store written before trace events were typed (tests/data/old_store) reads as it did: lens prints
exactly what it printed for it then, through the real CLI, in UTC and 100 columns."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.cli_helpers import flujo

OLD = Path(__file__).parent / "data" / "old_store"
RUN = "7ef317c209b5f5a9"  # the run of legacy.yaml
CHILD = "68b7f611c21445aa"  # its sub-workflow's child run

CASES = {
    "show.txt": ["lens", "show", RUN],
    "show.json": ["lens", "show", RUN, "--json"],
    "trace.txt": ["lens", "trace", RUN, "--plain"],
    "trace_expand_all.txt": ["lens", "trace", RUN, "--plain", "--expand", "all"],
    "trace.json": ["lens", "trace", RUN, "--json"],
    "trace_step_quiz.txt": ["lens", "trace", RUN, "--plain", "--step", "quiz", "--expand", "none"],
    "trace_child.txt": ["lens", "trace", CHILD, "--plain"],
}


@pytest.fixture
def old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the old store (lens must read it, whatever it does to a file), with times shown in UTC."""
    db = tmp_path / "old.db"
    shutil.copyfile(OLD / "runs.sqlite", db)
    monkeypatch.setenv("FLUJO_STATE_URI", str(db))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield db
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("name", sorted(CASES))
def test_lens_prints_an_old_store_as_it_did_before(old_store: Path, name: str) -> None:
    code, out, err = flujo(CASES[name])
    assert code == exit_codes.OK, err
    assert out == (OLD / name).read_text(encoding="utf-8"), f"lens {' '.join(CASES[name][1:])} printed otherwise"
