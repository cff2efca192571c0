"""Settings checked before, kept on disk (core/settings/kept_settings.py, docs/configuration.md "The cache
folder"): read back without pydantic, never holding a secret, missed when anything changes, and a damaged
entry is a miss, never an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import ConfigError
from core.settings import kept_settings as kept_module
from core.settings.config import Settings, load_settings
from core.settings.kept_settings import FORMAT, KeptSettings

ROOT = Path(__file__).resolve().parents[2]
TOML = """\
default_model = "echo"
state_uri = "postgresql://bob:pg-pass-5150%21@db.example/runs"
[history]
max_tokens = 2000
[anthropic]
api_key = "sk-ant-toml-4711"
timeout_s = "30"
"""
ENV = {"OPENAI_API_KEY": "sk-env-key-0815", "FLUJO_LIMITS__MAX_TOKENS": "9000"}
SECRETS = ("sk-ant-toml-4711", "sk-env-key-0815", "pg-pass-5150", "pg-pass-5150!")


def _entries(kept: KeptSettings) -> list[Path]:
    return sorted(kept.folder.glob("*.settings")) if kept.folder.is_dir() else []


def _project(tmp_path: Path, text: str = TOML) -> Path:
    project = tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "flujo.toml").write_text(text, encoding="utf-8")
    return project


def _not_checked(data: object) -> object:
    raise AssertionError("checked again")


def test_kept_settings_are_read_back_with_their_secrets_and_no_secret_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    kept = KeptSettings(tmp_path / "cache", env=ENV)
    first = load_settings(cwd=project, env=ENV, check=kept)
    assert first == load_settings(cwd=project, env=ENV)  # the same as checked without the cache
    [entry] = _entries(kept)
    monkeypatch.setattr(kept_module, "checked_settings", _not_checked)
    again = load_settings(cwd=project, env=ENV, check=kept)
    assert again == first and again is not first
    assert again.anthropic.api_key is not None and again.anthropic.api_key.get_secret_value() == SECRETS[0]
    assert again.openai.api_key is not None and again.openai.api_key.get_secret_value() == SECRETS[1]
    assert again.state_uri == "postgresql://bob:pg-pass-5150%21@db.example/runs"
    assert (again.history.max_tokens, again.limits.max_tokens, again.anthropic.timeout_s) == (2000, 9000, 30.0)
    assert entry.stat().st_mode & 0o777 == 0o600 and kept.folder.stat().st_mode & 0o777 == 0o700
    written = b"".join(path.read_bytes() for path in kept.folder.rglob("*") if path.is_file())
    assert FORMAT in written
    for secret in (*SECRETS, "pg-pass-5150%21"):
        assert secret.encode() not in written, secret


def test_an_edited_file_is_a_miss_and_an_invalid_value_is_refused_each_time(tmp_path: Path) -> None:
    project = _project(tmp_path)
    kept = KeptSettings(tmp_path / "cache", env={})
    assert load_settings(cwd=project, env={}, check=kept).history.max_tokens == 2000
    _project(tmp_path, TOML.replace("max_tokens = 2000", "max_tokens = 3000"))
    assert load_settings(cwd=project, env={}, check=kept).history.max_tokens == 3000
    assert len(_entries(kept)) == 2
    _project(tmp_path, TOML.replace("max_tokens = 2000", "max_tokens = -1"))
    with pytest.raises(ConfigError) as plain:
        load_settings(cwd=project, env={})
    for _ in range(2):
        with pytest.raises(ConfigError) as caught:
            load_settings(cwd=project, env={}, check=kept)
        assert (caught.value.message, caught.value.hint) == (plain.value.message, plain.value.hint)
    assert caught.value.message == (
        f"{project / 'flujo.toml'}:4:1: setting history.max_tokens: Input should be greater than 0"
    )
    assert len(_entries(kept)) == 2  # nothing kept of settings with a mistake


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-7],  # cut short
        lambda data: data[:40] + bytes([data[40] ^ 1]) + data[41:],  # a changed byte
        lambda data: b"flujo checked settings 0\n" + data[len(FORMAT) :],  # another format
        lambda data: b"",
    ],
)
def test_a_damaged_entry_is_a_miss_and_written_again(tmp_path: Path, damage: object) -> None:
    project = _project(tmp_path)
    kept = KeptSettings(tmp_path / "cache", env={})
    first = load_settings(cwd=project, env={}, check=kept)
    [entry] = _entries(kept)
    assert callable(damage)
    entry.write_bytes(damage(entry.read_bytes()))
    assert load_settings(cwd=project, env={}, check=kept) == first
    assert entry.read_bytes().startswith(FORMAT)


def test_an_entry_of_other_settings_under_this_name_is_a_miss(tmp_path: Path) -> None:
    project = _project(tmp_path)
    kept = KeptSettings(tmp_path / "cache", env={})
    load_settings(cwd=project, env={}, check=kept)
    [entry] = _entries(kept)
    other = _project(tmp_path / "other", TOML.replace("max_tokens = 2000", "max_tokens = 3000"))
    load_settings(cwd=other, env={}, check=kept)
    [foreign] = [path for path in _entries(kept) if path != entry]
    foreign.replace(entry)  # the other settings' entry, under this one's name
    assert load_settings(cwd=project, env={}, check=kept).history.max_tokens == 2000


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ('[history]\nsummarizer_prompt = "tok-1234"\n', {"MY_TOKEN": "tok-1234"}),  # an environment secret
        ('secret_env_vars = ["PLAIN"]\n[history]\nsummarizer_prompt = "named-9"\n', {"PLAIN": "named-9"}),
        ('[anthropic]\napi_key = "k-42"\n[history]\nsummarizer_prompt = "k-42"\n', {}),  # a key, elsewhere too
        ('[profiles.p]\nmodel = "echo"\nmodel_settings = {api_key = "in-a-profile"}\n', {}),  # a secret's key
        ('[profiles.p]\nmodel = "echo"\nmodel_settings = {since = 2024-01-01}\n', {}),  # valid, not JSON
    ],
)
def test_settings_holding_a_secret_elsewhere_are_never_kept(tmp_path: Path, text: str, env: dict[str, str]) -> None:
    project = _project(tmp_path, text)
    kept = KeptSettings(tmp_path / "cache", env=env)
    assert load_settings(cwd=project, env=env, check=kept) == load_settings(cwd=project, env=env)
    assert _entries(kept) == []


def test_settings_that_give_nothing_are_the_defaults_unchecked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_module, "checked_settings", _not_checked)
    kept = KeptSettings(tmp_path / "cache", env={})
    assert load_settings(cwd=tmp_path, env={}, check=kept) == Settings()
    assert _entries(kept) == []


# What the second command must not import to read settings it read before: pydantic's model and validator
# machinery (importing pydantic itself imports none of it), and the settings' checks.
CHECKING = (
    "pydantic.main",
    "pydantic.fields",
    "pydantic.type_adapter",
    "pydantic._internal._model_construction",
    "core.settings.validating",
)


def test_a_second_command_reads_its_settings_without_pydantic(tmp_path: Path) -> None:
    project = _project(tmp_path)
    probe = (
        "import json, sys\n"
        "from flujo_cli.store_access import settings_with_state\n"
        "settings = settings_with_state(None, {'history': {'max_turns': 7}})\n"
        "assert settings.history.max_turns == 7 and settings.anthropic.api_key is not None\n"
        f"print(json.dumps([name for name in {CHECKING!r} if name in sys.modules]))\n"
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env |= {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config"), **ENV}
    imported = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, cwd=project, env=env, check=False
        )
        assert done.returncode == 0, done.stderr
        imported.append(json.loads(done.stdout))
    assert "core.settings.validating" in imported[0]  # the first checked them
    assert imported[1] == []
    assert list((tmp_path / "cache" / "flujo" / "settings").glob("*.settings"))
