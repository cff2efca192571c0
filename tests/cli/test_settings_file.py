"""A bad settings file (``flujo.toml``) is exit code 6 and one line naming the file, with the line and
column where there is one, for every command that reads the settings, through the real CLI: text that is
not UTF-8, a binary file, arrays nested 5,000 deep (the TOML parser's recursion), a syntax error, and a
value of the wrong type (at the line that sets it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import ConfigError, load_settings
from core.settings.file import key_position
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

ECHO = 'version: "0.1"\nsteps:\n  - {kind: step, name: say, agent: {id: flujo.builtins.passthrough}}\n'
BAD_FILES: dict[str, tuple[bytes, str]] = {
    "not UTF-8": (b'state_uri = "\xff\xfe"\n', ":1:14: the settings file is not UTF-8 text (byte 13)"),
    "binary": (
        b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)),
        ":2:118: the settings file is not UTF-8 text (byte 136)",
    ),
    "nested 5,000 deep": (
        b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n",
        ":1:105: the settings file nests arrays or tables too deep to read",
    ),
    "syntax": (b"# settings\nstate_uri = \n", ":2:13: Invalid value"),
    "wrong type": (
        b'state_uri = "x.db"\n\n[openai]\ntimeout_s = "abc"\n',
        ":4:1: setting openai.timeout_s: Input should be a valid number",
    ),
}
COMMANDS = [
    ["run", "echo.yaml", "--input", "x"],
    ["resume", "0123456789abcdef"],
    ["submit", "echo.yaml", "--input", "x"],
    ["worker", "--until-idle"],
    ["cancel", "0123456789abcdef"],
    ["validate", "echo.yaml"],
    ["explain", "echo.yaml"],
    ["threads", "list"],
    ["threads", "show", "t"],
    ["lens", "list"],
    ["lens", "show", "0123"],
    ["lens", "trace", "0123"],
    ["lens", "prune", "--keep", "1"],
    ["store", "copy", "a.db", "b.db"],
]


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_settings_file_is_one_located_line_and_exit_code_6(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    content, expected = BAD_FILES[kind]
    (tmp_path / "flujo.toml").write_bytes(content)
    (tmp_path / "echo.yaml").write_text(ECHO, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLUJO_STATE_URI", raising=False)
    commands = COMMANDS if kind == "not UTF-8" else COMMANDS[:1] + COMMANDS[5:6] + COMMANDS[9:10]
    for args in commands:
        code, _, err = flujo(args)
        assert code == exit_codes.CONFIG, (args, err)
        assert err.splitlines()[0].startswith(f"error: {tmp_path / 'flujo.toml'}{expected}"), (args, err)
        assert "unexpected" not in err and "Traceback" not in err


def test_the_place_of_a_setting_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "flujo.toml"
    path.write_text(
        'state_uri = "x"\nsecret_env_vars = ["A", 1]\n\n[openai]\n  timeout_s = "abc"\n'
        '[models."openai:local-a"]\ncontext_window = 0\n[history]\nmax_turns.x = 1\n',
        encoding="utf-8",
    )
    assert key_position(path, ("secret_env_vars", 1)) == (2, 1)
    assert key_position(path, ("openai", "timeout_s")) == (5, 3)
    assert key_position(path, ("models", "openai:local-a", "context_window")) == (7, 1)
    assert key_position(path, ("history", "max_tokens")) is None  # not written in the file
    assert key_position(tmp_path / "missing.toml", ("state_uri",)) is None


def test_a_value_from_the_environment_is_not_blamed_on_the_file(tmp_path: Path) -> None:
    (tmp_path / "flujo.toml").write_text("[openai]\ntimeout_s = 5\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(cwd=tmp_path, env={"FLUJO_OPENAI__TIMEOUT_S": "abc"})
    assert caught.value.message.startswith("setting openai.timeout_s: ")  # as before: the layer is unknown
    (tmp_path / "flujo.toml").write_text('[openai]\ntimeout_s = "abc"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(cwd=tmp_path, env={})
    assert caught.value.message.startswith(f"{tmp_path / 'flujo.toml'}:2:1: setting openai.timeout_s: ")


def test_a_redact_pattern_that_is_not_a_regular_expression_is_a_setting_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "echo.yaml").write_text(ECHO, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLUJO_STATE_URI", raising=False)
    code, _, err = flujo(["run", "echo.yaml", "--input", "x", "--set", 'redact_patterns=["("]'])
    assert code == exit_codes.CONFIG, err
    assert err.splitlines()[0].startswith("error: setting redact_patterns.0: '(' is not a regular expression"), err
    assert "unexpected" not in err
    (tmp_path / "flujo.toml").write_text('state_uri = "x.db"\nredact_patterns = ["ok", "["]\n', encoding="utf-8")
    for args in (["config", "show"], ["run", "echo.yaml", "--input", "x"], ["validate", "echo.yaml"]):
        code, _, err = flujo(args)
        assert code == exit_codes.CONFIG, (args, err)
        expected = f"error: {tmp_path / 'flujo.toml'}:2:1: setting redact_patterns.1: '[' is not a regular expression"
        assert err.splitlines()[0].startswith(expected), (args, err)
    assert not (tmp_path / "x.db").exists()
