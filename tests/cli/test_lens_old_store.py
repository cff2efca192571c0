"""A run store written before trace events were typed (tests/data/old_store) reads as it did: lens prints
exactly what it printed for it then, through the real CLI, in UTC and 100 columns; and the same blueprint
run today stores the same events (kind, path and payload) as it did then."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo
from tests.support.fakes.openai_server import FakeLLM

OLD = Path(__file__).parents[1] / "data" / "old_store"
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


_CLOCK = re.compile(r'((?:duration_s|timestamp)\\*":) [-+.e0-9]+')
# Kinds recorded since the old store was written, each before what was recorded then (a command's process
# group, a provider's call before it is sent): today's run stores them too, on top of the same events.
_SINCE = {"agent.process", "agent.call"}
# Fields recorded since, in the events recorded then: why each message of a prompt is there (its ids), and
# the number of the conversation's turn a step made (docs/lens.md, "Why each message is there").
_FIELDS_SINCE = {"why", "turn", "user_turn"}


def _stored_events(db: Path, run_id: str) -> list[tuple[str, str, Any]]:
    """The events of a run and of its child runs as (path, kind, payload), run ids replaced by names."""

    async def read() -> list[tuple[str, str, Any]]:
        async with await open_store(str(db), mode="read") as store:
            children = await store.list_runs(parent_run_id=run_id)
            runs = {run_id: "RUN", **{child.run_id: "CHILD" for child in children}}
            found = []
            for run, name in runs.items():
                for event in await store.events(run):
                    if event.kind in _SINCE:
                        continue
                    kept = {key: value for key, value in event.payload.items() if key not in _FIELDS_SINCE}
                    payload = json.dumps(kept, sort_keys=True)
                    for real, alias in runs.items():
                        payload = payload.replace(real, alias)
                    payload = _CLOCK.sub(r"\1 0", payload)  # an ensemble's turns, quoted in later prompts
                    found.append((f"{name}:{event.path}", event.kind, json.loads(payload)))
            return found

    return asyncio.run(read())


def test_the_same_run_today_stores_the_same_events(
    old_store: Path, state_db: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    fake_llm.fail(503, message="busy", retry_after=0.01, times=1).reply("hi there", usage=(12, 3))
    code, out, err = flujo(
        ["run", str(OLD / "legacy.yaml"), "--input", "start", "-a", "4", "-a", "6", "-a", "8", "--json"]
    )
    assert code == exit_codes.OK, err
    today = _stored_events(state_db, json.loads(out)["run_id"])
    assert today == _stored_events(old_store, RUN)
    assert len({kind for _, kind, _ in today}) == 15
