"""Which store a command uses and how it says so: ``--state URI`` on every command that reads or writes the
store (it beats FLUJO_STATE_URI and flujo.toml), every look-up that finds nothing names the store it looked
in and how to point at another, and looking never creates a store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import load_settings
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

HELLO = Path(__file__).resolve().parents[2] / "docs" / "examples" / "hello.yaml"
ELSEWHERE = "cd to the project's directory, set FLUJO_STATE_URI, or pass --state URI"


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder outside any project, with no FLUJO_STATE_URI: the default store would be .flujo/flujo.db here."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.delenv("FLUJO_STATE_URI", raising=False)
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize(
    "args",
    [
        ["resume", "3f2a"],
        ["lens", "show", "3f2a"],
        ["lens", "trace", "3f2a", "--plain"],
        ["lens", "list"],
        ["lens", "prune", "--keep", "1"],
        ["threads", "list"],
        ["threads", "show", "trip"],
        ["threads", "delete", "trip"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_looking_outside_the_project_names_the_store_and_creates_nothing(elsewhere: Path, args: list[str]) -> None:
    code, out, err = flujo(args)
    assert (code, out) == (exit_codes.STORE, "")
    assert err == (
        f"error: there is no run store at {elsewhere / '.flujo' / 'flujo.db'}\n"
        f"hint: flujo run creates it; or {ELSEWHERE}\n"
    )
    assert list(elsewhere.iterdir()) == []


def test_state_points_every_command_at_another_store(elsewhere: Path, tmp_path: Path) -> None:
    store = tmp_path / "project" / "runs.db"
    code, out, err = flujo(["run", str(HELLO), "--answer", "Ada", "--json", "--state", str(store)])
    assert code == exit_codes.OK, err
    run_id = json.loads(out)["run_id"]
    assert store.is_file() and list(elsewhere.iterdir()) == []

    code, out, _ = flujo(["lens", "list", "--json", "--state", str(store)])
    assert [run["run_id"] for run in json.loads(out)["runs"]] == [run_id]
    code, out, _ = flujo(["lens", "show", run_id[:6], "--json", "--state", str(store)])
    assert code == exit_codes.OK and json.loads(out)["run"]["run_id"] == run_id
    code, _, err = flujo(["resume", run_id, "--state", str(store)])
    assert code == exit_codes.FAILED and f"run {run_id} already completed" in err

    code, out, err = flujo(["resume", "ffff", "--state", str(store)])
    assert (code, out) == (exit_codes.FAILED, "")
    assert err == (
        f"error: no run matches 'ffff' in {store}\nhint: check the id printed when the run paused (flujo lens list"
        f" lists the runs); or look in another store: {ELSEWHERE}\n"
    )
    for command in (["lens", "show", "ffff"], ["lens", "trace", "ffff", "--plain"]):
        code, out, err = flujo([*command, "--state", str(store)])
        assert (code, out) == (exit_codes.FAILED, "")
        assert err.startswith(f"error: no run matches 'ffff' in {store}\nhint: list its runs with: flujo lens list;")
    code, _, err = flujo(["threads", "show", "trip", "--state", str(store)])
    assert code == exit_codes.FAILED and f"no thread named 'trip' in {store}" in err
    assert list(elsewhere.iterdir()) == []


def test_state_beats_the_environment_and_flujo_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "flujo.toml").write_text('state_uri = "runs/flujo.db"\n', encoding="utf-8")
    monkeypatch.delenv("FLUJO_STATE_URI", raising=False)
    monkeypatch.chdir(project / "sub")
    assert load_settings().state_uri == str(project / "runs" / "flujo.db")  # relative to flujo.toml
    given = load_settings(overrides={"state_uri": "mine.db"})
    assert given.state_uri == "mine.db"  # relative to the working directory, as any path on a command line
    monkeypatch.setenv("FLUJO_STATE_URI", "env.db")
    assert load_settings().state_uri == "env.db"
    assert load_settings(overrides={"state_uri": "mine.db"}).state_uri == "mine.db"
    (project / "flujo.toml").write_text('state_uri = "postgresql://u:p@db/runs"\n', encoding="utf-8")
    monkeypatch.delenv("FLUJO_STATE_URI")
    assert load_settings().state_uri == "postgresql://u:p@db/runs"  # a URI is never made a path


def test_a_state_uri_given_with_set_is_not_recorded_with_the_run() -> None:
    from flujo_cli.commands.run import RunOverrides

    overrides = RunOverrides(["state_uri=postgresql://u:secret@db/runs", "history.max_tokens=100"])
    assert overrides.to_options() == {"set": ["history.max_tokens=100"]}
