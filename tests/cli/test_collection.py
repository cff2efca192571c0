"""``flujo run`` collects no garbage while it loads, and leaves the collector as it found it
(``flujo_cli/collection.py``)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

import flujo_cli.collection as collection
from core import RunRecord
from core.store import open_store
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


PROBE = """\
import gc


def collector(value):
    return {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count() > 0}
"""


def test_a_worker_runs_with_what_it_loaded_frozen_and_leaves_the_collector_on(
    collector_on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``flujo worker`` loads with the collector paused, then freezes what it loaded before taking runs (the
    collections during its runs and at its exit do not scan it): its runs see the collector on and objects
    frozen; the test's process collects as before afterwards."""
    gc.unfreeze()
    (tmp_path / "probe_gc.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "bp.yaml").write_text(
        'version: "0.1"\nsteps:\n  - {kind: step, name: probe, agent: "probe_gc:collector"}\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    state = str(tmp_path / "flujo.db")
    assert flujo(["submit", "bp.yaml", "--input", "x", "--state", state])[0] == 0
    code, _, err = flujo(["worker", "--until-idle", "--state", state])
    assert code == 0, err
    assert gc.isenabled()

    async def runs() -> list[RunRecord]:
        async with await open_store(state) as store:
            return await store.list_runs()

    [run] = asyncio.run(runs())
    assert run.status == "completed" and run.output == {"enabled": True, "frozen": True}
