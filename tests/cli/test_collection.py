"""``flujo run`` collects no garbage while it loads, and leaves the collector as it found it
(``flujo_cli/collection.py``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

import flujo_cli.collection as collection
from tests.support.cli_helpers import flujo


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def test_paused_until_loaded_then_collected_and_frozen(collector_on: None) -> None:
    with collection.paused():
        assert not gc.isenabled()
        collection.loaded()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
    assert gc.isenabled()


def test_an_error_while_loading_leaves_the_collector_on(collector_on: None) -> None:
    with pytest.raises(RuntimeError), collection.paused():
        raise RuntimeError("the blueprint could not be read")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_on: None) -> None:
    gc.disable()
    with collection.paused():
        collection.loaded()
        assert not gc.isenabled()
    assert not gc.isenabled()


@pytest.mark.parametrize("blueprint", ['version: "0.1"\nsteps: []\n', 'version: "0.1"\nagents:\n  a: {model: echo}\n'
                                       "steps:\n  - {kind: step, name: s, uses: agents.a}\n"])  # fmt: skip
def test_a_run_in_process_leaves_the_collector_on(collector_on: None, tmp_path: Path, blueprint: str) -> None:
    """A run that fails to load (exit 3) and one that completes: the test's process collects as before."""
    (tmp_path / "bp.yaml").write_text(blueprint)
    code, _, _ = flujo(["run", str(tmp_path / "bp.yaml"), "--input", "hi", "--no-input"])
    assert code in (0, 3)
    assert gc.isenabled()
