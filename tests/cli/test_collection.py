"""``flujo run`` collects no garbage while it loads, and leaves the collector as it found it
(``flujo_cli/collection.py``)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import flujo_cli.collection as collection
from core import RunRecord
from core.store import open_store
from tests.support.cli_helpers import flujo

ROOT = Path(__file__).resolve().parents[2]


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


def test_paused_from_the_start_then_by_the_run_then_on_once_loaded(collector_on: None) -> None:
    """The ``flujo`` command pauses the collector at its first line; ``run`` takes the pause over."""
    collection.from_start()
    assert not gc.isenabled()
    with collection.paused():
        assert not gc.isenabled()
        collection.loaded()
        assert gc.isenabled()
    assert gc.isenabled()
    collection.start_up_done()  # nothing left to resume
    assert gc.isenabled()


def test_paused_from_the_start_then_on_for_any_other_command(collector_on: None) -> None:
    collection.from_start()
    assert not gc.isenabled()
    collection.start_up_done()
    assert gc.isenabled()
    gc.disable()
    collection.start_up_done()  # a collector someone else turned off stays off
    assert not gc.isenabled()


def test_a_collector_that_was_off_at_the_start_stays_off(collector_on: None) -> None:
    gc.disable()
    collection.from_start()
    collection.start_up_done()
    with collection.paused():
        collection.loaded()
    assert not gc.isenabled()


ECHO = 'version: "0.1"\nagents:\n  a: {model: echo}\nsteps:\n  - {name: s, uses: agents.a}\n'
_SPY = """\
import atexit, gc, sys
collections = []
gc.callbacks.append(lambda phase, info: phase == "stop" and collections.append(info["generation"]))
sys.argv[0] = "flujo"  # as the console script starts
import flujo_cli.collection as collection
loaded = collection.loaded
at_loaded = []
collection.loaded = lambda: at_loaded.append(len(collections)) or loaded()
atexit.register(lambda: print("GC", gc.isenabled(), at_loaded, len(collections), file=sys.stderr))
from flujo_cli.main import main
main()
"""


def _spied(tmp_path: Path, *args: str) -> tuple[bool, list[int], int]:
    """Whether the ``flujo`` command's collector was on at its exit, how many collections it had made when
    ``loaded`` was called (once per call), and how many in all."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env["FLUJO_STATE_URI"] = str(tmp_path / "s.db")
    done = subprocess.run(
        [sys.executable, "-c", _SPY, *args], capture_output=True, text=True, cwd=tmp_path, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("GC ")]
    enabled, at_loaded, total = line.removeprefix("GC ").split(" ", 2)
    return enabled == "True", json.loads(at_loaded), int(total)


def test_the_command_loads_a_run_without_collecting_then_collects(tmp_path: Path) -> None:
    """From the ``flujo`` command's first line to the run's start nothing is collected (46 collections
    freed 439 objects there: docs/performance.md, "Start-up margin (session 21)"); the collector is on
    afterwards, for what the run makes."""
    (tmp_path / "bp.yaml").write_text(ECHO)
    enabled, at_loaded, _ = _spied(tmp_path, "run", "bp.yaml", "--input", "hi", "--no-input")
    assert enabled and at_loaded == [0]


def test_any_other_command_collects_from_its_start(tmp_path: Path) -> None:
    """``validate`` (no ``loaded``): the collector is on while the command runs, as without the pause."""
    (tmp_path / "bp.yaml").write_text(ECHO)
    enabled, at_loaded, collections = _spied(tmp_path, "validate", "bp.yaml")
    assert enabled and at_loaded == [] and collections > 0


def test_the_spy_sees_collections(tmp_path: Path) -> None:
    """The checks above can fail: without the pause (``flujo_cli`` imported, not started as the command),
    loading the command line collects."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    spy = _SPY.replace('sys.argv[0] = "flujo"', 'sys.argv[0] = "-c"')
    done = subprocess.run([sys.executable, "-c", spy, "--version"], capture_output=True, text=True, env=env)
    [line] = [line for line in done.stderr.splitlines() if line.startswith("GC ")]
    assert int(line.split(" ")[3]) > 0
