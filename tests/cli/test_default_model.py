"""``default_model``: the model of every agent that names none of ``model:``, ``python:`` and ``command:``, from
the user's settings file, the project's flujo.toml, ``FLUJO_DEFAULT_MODEL`` or ``--set`` (each over the one
before), through the real ``flujo run``, ``resume``, ``explain``, ``validate`` and ``config show``; ``--model``
beats it, a resumed or replayed run keeps the one it ran with, and without one such an agent is an error at
its line. The agents call a loopback OpenAI-compatible server (tests/support/fakes/openai_server.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo
from tests.support.fakes.openai_server import FakeLLM

BLUEPRINT = """\
version: "0.1"
name: unnamed_model
agents:
  writer: {system_prompt: "You write."}
steps:
  - {kind: step, name: write, uses: agents.writer}
"""

# The run pauses between two calls of the writer, so it can be resumed.
PAUSING = """\
version: "0.1"
name: pausing
agents:
  writer: {system_prompt: "You write."}
steps:
  - {kind: step, name: first, uses: agents.writer}
  - {kind: hitl, name: ok, message: "Go on?"}
  - {kind: step, name: second, uses: agents.writer}
"""


@pytest.fixture
def llm(fake_llm: FakeLLM, state_db: Path, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    return fake_llm


@pytest.fixture
def user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's settings file, in a folder XDG_CONFIG_HOME names."""
    config_home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    path = config_home / "flujo" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    path = tmp_path / "flow.yaml"
    path.write_text(BLUEPRINT, encoding="utf-8")
    return path


def run_json(*args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = flujo([*args, "--json"])
    return code, json.loads(out) if out.strip() else {}, err


def models_called(llm: FakeLLM) -> list[str]:
    return [body["model"] for body in llm.bodies]


def test_an_agent_without_a_model_runs_the_user_files_default_model(llm: FakeLLM, user_file: Path, flow: Path) -> None:
    user_file.write_text('default_model = "openai:gpt-user"\n', encoding="utf-8")
    llm.reply("written")
    code, result, err = run_json("run", str(flow), "-i", "go")
    assert code == exit_codes.OK, err
    assert result["output"] == "written"
    assert models_called(llm) == ["gpt-user"]


def test_each_layer_beats_the_one_below_it(
    llm: FakeLLM, user_file: Path, flow: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file.write_text('default_model = "openai:gpt-user"\n', encoding="utf-8")
    (tmp_path / "flujo.toml").write_text('default_model = "openai:gpt-project"\n', encoding="utf-8")
    llm.reply("1").reply("2").reply("3")
    assert run_json("run", str(flow), "-i", "go")[0] == exit_codes.OK
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-env")
    assert run_json("run", str(flow), "-i", "go")[0] == exit_codes.OK
    assert run_json("run", str(flow), "-i", "go", "--set", "default_model=openai:gpt-flag")[0] == exit_codes.OK
    assert models_called(llm) == ["gpt-project", "gpt-env", "gpt-flag"]


def test_an_agents_own_model_and_model_flags_beat_the_default(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-default")
    flow = tmp_path / "two.yaml"
    flow.write_text(
        'version: "0.1"\nagents:\n  own: {model: "openai:gpt-own"}\n  plain: {system_prompt: "You write."}\n'
        "steps:\n  - {name: a, uses: agents.own}\n  - {name: b, uses: agents.plain}\n",
        encoding="utf-8",
    )
    llm.reply("1").reply("2").reply("3").reply("4").reply("5").reply("6")
    assert run_json("run", str(flow), "-i", "go")[0] == exit_codes.OK
    assert run_json("run", str(flow), "-i", "go", "--model", "agents.plain=openai:gpt-named")[0] == exit_codes.OK
    assert run_json("run", str(flow), "-i", "go", "--model", "*=openai:gpt-every")[0] == exit_codes.OK
    assert models_called(llm) == ["gpt-own", "gpt-default", "gpt-own", "gpt-named", "gpt-every", "gpt-every"]


def test_every_agents_model_flag_gives_an_agent_without_one_its_model(llm: FakeLLM, flow: Path) -> None:
    llm.reply("written")
    code, _result, err = run_json("run", str(flow), "-i", "go", "--model", "*=openai:gpt-every")
    assert code == exit_codes.OK, err
    assert models_called(llm) == ["gpt-every"]


def test_without_a_default_model_the_agent_is_an_error_at_its_line(state_db: Path, flow: Path) -> None:
    code, _out, err = flujo(["run", str(flow), "-i", "go"])
    assert code == exit_codes.BLUEPRINT
    first = err.splitlines()[0]
    assert first == (
        f"{flow}:4:3: error: agent 'writer' has no model: give it model: (or python: or command:), or set"
        " default_model in the settings"
    )
    assert "default_model" in err and "Traceback" not in err
    code, _out, err = flujo(["validate", str(flow)])  # validate's exit code for errors is 1
    assert code == exit_codes.FAILED and f"{flow}:4:3: error: agent 'writer' has no model" in err
    # Its system_prompt is not said to be wasted on an agent that "is not a model": it is one, missing its model.
    assert "no effect" not in err and "1 error(s), 0 warning(s)" in err


def test_a_bad_default_model_is_named_at_its_line(user_file: Path, flow: Path) -> None:
    user_file.write_text('# mine\ndefault_model = "gpt-4o"\n', encoding="utf-8")
    code, _out, err = flujo(["run", str(flow), "-i", "go"])
    assert code == exit_codes.CONFIG
    assert f"{user_file}:2:1: setting default_model: unknown model 'gpt-4o'; did you mean openai:gpt-4o?" in err


def test_explain_says_where_the_model_came_from(user_file: Path, flow: Path, tmp_path: Path) -> None:
    user_file.write_text('default_model = "openai:gpt-user"\n', encoding="utf-8")
    code, result, err = run_json("explain", str(flow))
    assert code == exit_codes.OK, err
    [agent] = result["agents"]
    assert agent["what"] == f"openai:gpt-user (default_model, from user settings {user_file}:1:1)"
    (tmp_path / "flujo.toml").write_text('\ndefault_model = "echo"\n', encoding="utf-8")
    code, result, err = run_json("explain", str(flow))
    assert result["agents"][0]["what"].endswith(f"(default_model, from flujo.toml {tmp_path}/flujo.toml:2:1)")
    assert result["agents"][0]["offline"] is True
    code, result, err = run_json("explain", str(flow), "--model", "agents.writer=openai:gpt-named")
    assert result["agents"][0]["what"] == "openai:gpt-named"  # the flag's, not the default


def test_config_show_says_where_the_default_model_came_from(
    user_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def shown() -> dict[str, Any]:
        code, out, err = flujo(["config", "show", "--json"])
        assert code == exit_codes.OK, err
        setting: dict[str, Any] = json.loads(out)["settings"]["default_model"]
        return setting

    assert shown() == {"value": None, "from": "default", "where": None}
    user_file.write_text('default_model = "openai:gpt-user"\n', encoding="utf-8")
    assert shown() == {"value": "openai:gpt-user", "from": "user", "where": f"{user_file}:1:1"}
    (tmp_path / "flujo.toml").write_text('default_model = "openai:gpt-project"\n', encoding="utf-8")
    assert shown() == {"value": "openai:gpt-project", "from": "project", "where": f"{tmp_path}/flujo.toml:1:1"}
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-env")
    assert shown() == {"value": "openai:gpt-env", "from": "environment", "where": "FLUJO_DEFAULT_MODEL"}
    code, out, err = flujo(["config", "show"])
    assert code == exit_codes.OK, err
    [line] = [line for line in out.splitlines() if line.startswith("default_model =")]
    assert line.split("#")[1].strip() == "environment FLUJO_DEFAULT_MODEL"


def test_a_resumed_run_keeps_the_default_model_it_started_with(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = tmp_path / "pausing.yaml"
    flow.write_text(PAUSING, encoding="utf-8")
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-then")
    llm.reply("first").reply("second")
    code, result, err = run_json("run", str(flow), "-i", "go", "--no-input")
    assert result["status"] == "paused", err
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-now")  # the user's settings changed meanwhile
    code, _resumed, err = run_json("resume", result["run_id"], "-a", "yes")
    assert code == exit_codes.OK, err
    assert models_called(llm) == ["gpt-then", "gpt-then"]


def test_a_replay_runs_the_recorded_default_model(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served calls call nothing; once the replay diverges and goes on live, its calls run the recorded model."""
    flow = tmp_path / "two.yaml"
    two = (
        'version: "0.1"\nagents:\n  writer: {system_prompt: "You write."}\n  checker: {system_prompt: "CHECK"}\n'
        "steps:\n  - {name: write, uses: agents.writer}\n  - {name: check, uses: agents.checker}\n"
    )
    flow.write_text(two.replace("CHECK", "You check."), encoding="utf-8")
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-then")
    llm.reply("written").reply("checked")
    code, original, err = run_json("run", str(flow), "-i", "go")
    assert code == exit_codes.OK, err
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-now")
    code, result, err = run_json("run", str(flow), "--replay", original["run_id"])
    assert code == exit_codes.OK, err
    assert (result["output"], result["replay"]["clean"]) == ("checked", True)
    flow.write_text(two.replace("CHECK", "You check twice."), encoding="utf-8")
    llm.reply("checked twice")
    code, result, err = run_json("run", str(flow), "--replay", original["run_id"], "--on-divergence", "live")
    assert code == exit_codes.OK, err
    assert result["output"] == "checked twice"
    assert models_called(llm) == ["gpt-then", "gpt-then", "gpt-then"]  # the live call too, not gpt-now


def test_a_persona_of_an_ensemble_file_takes_the_default_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ensemble = tmp_path / "ensemble.yaml"
    ensemble.write_text(
        "agents:\n"
        "  - {name: writer, ask: 'Which title?', answered_by: agents.editor}\n"
        "personas:\n"
        "  editor: {system_prompt: 'You are Bea, an editor.'}\n",
        encoding="utf-8",
    )
    code, _out, err = flujo(["validate", str(ensemble)])
    assert code == exit_codes.FAILED and f"{ensemble}:4:3: error: agent 'editor' has no model" in err
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-persona")
    code, _out, err = flujo(["validate", str(ensemble)])
    assert code == exit_codes.OK, err


def test_a_local_model_file_is_found_from_where_the_setting_was_written(
    user_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file.write_text('default_model = "local:models/small.gguf"\n', encoding="utf-8")
    code, out, err = flujo(["config", "show", "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["settings"]["default_model"]["value"] == f"local:{user_file.parent}/models/small.gguf"
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "local:small.gguf")  # typed here: the working directory's
    code, out, err = flujo(["config", "show", "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["settings"]["default_model"]["value"] == f"local:{tmp_path}/small.gguf"


def test_a_worker_runs_a_submitted_run_with_the_default_model_it_was_submitted_with(
    llm: FakeLLM, flow: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-submitted")
    code, _out, err = flujo(["submit", str(flow), "--input", "go", "--json"])
    assert code == exit_codes.OK, err
    monkeypatch.setenv("FLUJO_DEFAULT_MODEL", "openai:gpt-worker")  # the worker's own settings differ
    llm.reply("written")
    code, _, err = flujo(["worker", "--until-idle"])
    assert code == exit_codes.OK, err
    assert models_called(llm) == ["gpt-submitted"]
