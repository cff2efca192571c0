"""Finding runs with ``flujo lens list``: ``--since AGE`` (an age or an ISO date, as ``prune --older-than``
takes), ``--search TEXT`` (the runs' inputs and outputs as lens shows them: a secret's value never matches)
and ``--offset N`` (paging), alone and together, through the real command on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from core import RunRecord, RunUpdate
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

SECRET = "sk-live-9f8e7d6c5b4a39281706"
NOW = time.time()
HOUR, DAY = 3600.0, 86_400.0
LONG = "A long report. " * 400 + "The needle-in-the-long-text is here."  # stored once, in the texts table

# Newest first: id, created how long ago, input, output, thread.
RUNS: list[tuple[str, float, Any, Any, str | None]] = [
    ("r0aaaaaaaaaaaaaa", 10 * 60, "Plan a trip to Lisbon", "Lisbon in June", None),
    ("r1aaaaaaaaaaaaaa", 5 * HOUR, f"call the shop with key {SECRET}", "done", None),
    ("r2aaaaaaaaaaaaaa", 3 * DAY, {"city": "Porto", "days": 3}, LONG, None),
    ("r3aaaaaaaaaaaaaa", 20 * DAY, "old question", "LISBON again", None),
    ("r4aaaaaaaaaaaaaa", 60 * DAY, "ancient", "history", "trip"),
]
IDS = [run[0] for run in RUNS]


async def _record(uri: str) -> None:
    store = await open_store(uri)
    try:
        for run_id, ago, given, output, thread in RUNS:
            created = NOW - ago
            await store.create_run(
                RunRecord(run_id, "finder", "running", input=given, created_at=created, thread=thread)
            )
            await store.update_run(run_id, RunUpdate("completed", output=output, finished_at=created + 1))
    finally:
        await store.close()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def stored(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store of either kind holding ``RUNS``, named by FLUJO_STATE_URI; the secret is a secret variable's."""
    uri = str(tmp_path / "runs.db") if request.param == "sqlite" else request.getfixturevalue("postgres_uri")
    asyncio.run(_record(uri))
    monkeypatch.setenv("FLUJO_STATE_URI", uri)
    monkeypatch.setenv("SHOP_API_KEY", SECRET)  # its value is masked wherever lens shows it
    return uri


def listed(*args: str) -> list[str]:
    code, out, err = flujo(["lens", "list", "--json", *args])
    assert code == exit_codes.OK, err
    return [run["run_id"] for run in json.loads(out)["runs"]]


def local_date(ago: float) -> str:
    return datetime.fromtimestamp(NOW - ago).date().isoformat()


def test_since_an_age_or_a_date(stored: str) -> None:
    assert listed() == IDS
    assert listed("--since", "1h") == IDS[:1]
    assert listed("--since", "6h") == IDS[:2]
    assert listed("--since", "4d") == IDS[:3]
    assert listed("--since", "3w") == IDS[:4]
    assert listed("--since", local_date(10 * DAY)) == IDS[:3]  # from that day's midnight, local time
    at = datetime.fromtimestamp(NOW - 4 * HOUR).isoformat(timespec="seconds")
    assert listed("--since", at) == IDS[:1]  # a date and time
    assert listed("--since", local_date(-2 * DAY)) == []  # a date to come


def test_search_looks_in_inputs_and_outputs_as_shown(stored: str) -> None:
    assert listed("--search", "lisbon") == [IDS[0], IDS[3]]  # any case, input or output
    assert listed("--search", "Porto") == [IDS[2]]  # a structured input, as JSON
    assert listed("--search", "needle-in-the-long-text") == [IDS[2]]  # a long text stored once
    assert listed("--search", "nothing like it") == []


def test_a_secret_never_matches_only_its_mask_does(stored: str) -> None:
    assert listed("--search", SECRET) == []
    assert listed("--search", SECRET[:12]) == []
    assert listed("--search", "with key [REDACTED]") == [IDS[1]]
    code, out, _ = flujo(["lens", "list", "--search", "shop"])
    assert code == exit_codes.OK and SECRET not in out


def test_offset_pages_through_what_matches(stored: str) -> None:
    assert listed("-n", "2") == IDS[:2]
    assert listed("-n", "2", "--offset", "2") == IDS[2:4]
    assert listed("-n", "2", "--offset", "4") == IDS[4:]
    assert listed("--offset", "5") == []
    assert listed("--search", "lisbon", "--offset", "1") == [IDS[3]]
    assert listed("--search", "lisbon", "-n", "1") == [IDS[0]]


def test_the_options_together_must_all_hold(stored: str) -> None:
    assert listed("--since", "30d", "--search", "LISBON") == [IDS[0], IDS[3]]
    assert listed("--since", "1d", "--search", "lisbon") == [IDS[0]]
    assert listed("--thread", "trip", "--search", "ancient") == [IDS[4]]
    assert listed("--thread", "trip", "--since", "30d") == []
    assert listed("--status", "completed", "--since", "4d", "--offset", "1") == IDS[1:3]
    code, out, err = flujo(["lens", "list", "--search", "Lisbon", "--since", "1m"])
    assert (code, out) == (exit_codes.OK, "") and "no runs matching those options" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "soon"], "--since 'soon' is not an age or a date: give a number and a unit, such as 90m"),
        (["--since", "2025-13-01"], "--since '2025-13-01' is not an age or a date"),
        (["--offset", "-1"], "greater than or equal to 0"),
        (["--offset", "99999999999999999999"], "less than or equal to"),
        (["--limit", "99999999999999999999"], "less than or equal to"),
        (["--search", " "], "--search needs a text to look for"),
    ],
)
def test_bad_options_are_usage_errors(stored: str, args: list[str], message: str) -> None:
    code, out, err = flujo(["lens", "list", *args])
    assert (code, out) == (exit_codes.USAGE, "") and message in err, err
    assert "unexpected" not in err


def test_prune_older_than_takes_a_date_too(stored: str) -> None:
    code, out, err = flujo(["lens", "prune", "--older-than", local_date(10 * DAY), "--dry-run", "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["deleted"] == IDS[3:]
