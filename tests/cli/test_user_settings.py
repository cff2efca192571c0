"""The user's settings file ($XDG_CONFIG_HOME/flujo/config.toml, else ~/.config/flujo/config.toml): defaults for
every project, under the project's flujo.toml, the FLUJO_* environment and --set; never state_uri. And
``flujo config show``: every setting in effect with where it came from, secrets masked, as text and JSON.
Every test here has a HOME of its own (tests/conftest.py), so the real user's file is never read."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo


@pytest.fixture
def user_file() -> Path:
    """Where the user's settings file is, with HOME as the test's own (XDG_CONFIG_HOME is not set)."""
    path = Path(os.environ["HOME"]) / ".config" / "flujo" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def shown(*args: str) -> dict[str, Any]:
    code, out, err = flujo(["config", "show", "--json", *args])
    assert code == exit_codes.OK, err
    document: dict[str, Any] = json.loads(out)
    return document


def test_each_layer_beats_the_one_below_it(user_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_file.write_text(
        "default_context_window = 1000\nresponse_reserve_tokens = 11\n\n[history]\nmax_tokens = 1111\nmax_turns = 1\n"
        "summarize_ratio = 0.1\n",
        encoding="utf-8",
    )
    (tmp_path / "flujo.toml").write_text("[history]\nmax_tokens = 2222\nmax_turns = 2\n", encoding="utf-8")
    monkeypatch.setenv("FLUJO_HISTORY__MAX_TURNS", "3")
    monkeypatch.setenv("FLUJO_HISTORY__SUMMARIZE_RATIO", "0.3")
    settings = shown("--set", "history.summarize_ratio=0.4")["settings"]
    assert settings["response_reserve_tokens"] == {"value": 11, "from": "user", "where": f"{user_file}:2:1"}
    assert settings["history.max_tokens"] == {"value": 2222, "from": "project", "where": f"{tmp_path}/flujo.toml:2:1"}
    assert settings["history.max_turns"] == {"value": 3, "from": "environment", "where": "FLUJO_HISTORY__MAX_TURNS"}
    assert settings["history.summarize_ratio"] == {"value": 0.4, "from": "command line", "where": "--set"}
    assert settings["history.strategy"] == {"value": "truncate_tokens", "from": "default", "where": None}


def test_the_user_file_applies_to_runs_in_any_project(user_file: Path, state_db: Path, tmp_path: Path) -> None:
    # Its redaction patterns mask what every project's runs show.
    user_file.write_text('redact_patterns = ["ORDER-[0-9]{6}"]\n', encoding="utf-8")
    blueprint = tmp_path / "echo.yaml"
    blueprint.write_text('version: "0.1"\nagents:\n  e: {model: echo}\nsteps:\n  - {name: s, uses: agents.e}\n')
    code, out, err = flujo(["run", str(blueprint), "-i", "ship ORDER-123456", "--json"])
    assert code == exit_codes.OK, err
    code, out, err = flujo(["lens", "show", json.loads(out)["run_id"], "--json"])
    assert code == exit_codes.OK, err
    assert "ORDER-123456" not in out and "ship [REDACTED]" in out


def test_xdg_config_home_says_where_the_file_is(
    user_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file.write_text("default_context_window = 1000\n", encoding="utf-8")
    xdg = tmp_path / "xdg"
    (xdg / "flujo").mkdir(parents=True)
    (xdg / "flujo" / "config.toml").write_text("default_context_window = 2000\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    document = shown()
    assert document["files"]["user"] == {"path": str(xdg / "flujo" / "config.toml"), "found": True}
    assert document["settings"]["default_context_window"]["value"] == 2000
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/xdg")  # not absolute: ignored, as the XDG spec says
    assert shown()["settings"]["default_context_window"]["value"] == 1000


def test_state_uri_is_refused_in_the_user_file(user_file: Path, state_db: Path) -> None:
    user_file.write_text('# every project\n\nstate_uri = "/tmp/all-my-runs.db"\n', encoding="utf-8")
    for command in (["config", "show"], ["lens", "list"], ["run", str(ROOT / "docs" / "examples" / "hello.yaml")]):
        code, out, err = flujo(command)
        assert code == exit_codes.CONFIG, (command, err)
        assert err.splitlines()[0] == (f"error: {user_file}:3:1: state_uri cannot be set in the user settings file"), (
            command
        )
        assert "Traceback" not in err and out == ""
    assert not Path("/tmp/all-my-runs.db").exists()


def test_a_bad_value_in_the_user_file_is_named_at_its_line(user_file: Path) -> None:
    user_file.write_text('[openai]\ntimeout_s = "soon"\n', encoding="utf-8")
    code, _, err = flujo(["config", "show"])
    assert code == exit_codes.CONFIG
    assert err.startswith(f"error: {user_file}:2:1: setting openai.timeout_s: Input should be a valid number")
    assert f"hint: check {user_file}" in err
    user_file.write_text("[openai\n", encoding="utf-8")  # not TOML
    code, _, err = flujo(["validate", str(ROOT / "docs" / "examples" / "hello.yaml")])
    assert code == exit_codes.CONFIG and err.startswith(f"error: {user_file}:1:")


def test_a_relative_path_in_the_user_file_is_from_its_folder(user_file: Path) -> None:
    user_file.write_text('[local]\nmodel_path = "models/mine.gguf"\n', encoding="utf-8")
    setting = shown()["settings"]["local.model_path"]
    assert setting == {
        "value": str(user_file.parent / "models" / "mine.gguf"),
        "from": "user",
        "where": f"{user_file}:2:1",
    }


def test_config_show_masks_secrets(user_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_file.write_text('[anthropic]\napi_key = "sk-ant-userfile-0123456789"\n', encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-from-the-environment-42")
    monkeypatch.setenv("FLUJO_OLLAMA__BASE_URL", "http://ada:hunter2-password@127.0.0.1:11434/v1")
    uri = "postgresql://flujo:s3cret-pw@db.internal:5432/runs"
    for args in (["--json"], []):
        code, out, err = flujo(["config", "show", "--state", uri, *args])
        assert code == exit_codes.OK, err
        for secret in ("sk-ant-userfile", "sk-proj-from-the-environment", "hunter2-password", "s3cret-pw"):
            assert secret not in out, (secret, args)
    settings = shown("--state", uri)["settings"]
    assert settings["anthropic.api_key"] == {"value": "[REDACTED]", "from": "user", "where": f"{user_file}:2:1"}
    assert settings["openai.api_key"] == {"value": "[REDACTED]", "from": "environment", "where": "OPENAI_API_KEY"}
    assert settings["state_uri"]["from"] == "command line" and settings["state_uri"]["where"] == "--state"
    assert "db.internal:5432/runs" in settings["state_uri"]["value"]


def test_config_show_in_words(user_file: Path, tmp_path: Path) -> None:
    code, out, err = flujo(["config", "show"])
    assert code == exit_codes.OK, err
    lines = out.splitlines()
    assert lines[0] == f"# user settings file: {user_file} (not there)"
    assert lines[1] == f"# project settings file: none (no flujo.toml in {tmp_path} or above)"
    assert any(re.fullmatch(r'history\.strategy = "truncate_tokens" +# default', line) for line in lines)
    (tmp_path / "flujo.toml").write_text("[history]\nmax_turns = 9\n", encoding="utf-8")
    code, out, err = flujo(["config", "show"])
    assert f"# project settings file: {tmp_path / 'flujo.toml'}" in out.splitlines()
    assert any(
        re.fullmatch(rf"history\.max_turns = 9 +# flujo.toml {tmp_path}/flujo.toml:2:1", line)
        for line in out.splitlines()
    )
