"""``--model agents.NAME=provider:model`` and ``--model '*=MODEL'`` through the real ``flujo run``, ``resume``,
``submit`` (and ``worker``), ``explain`` and ``validate``: the YAML unchanged, the models recorded with the run
and kept by a resume, a value that cannot apply refused with exit code 2 before anything runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo
from tests.support.fakes.openai_server import FakeLLM

# Two scripted agents (offline) and a python one; the run asks a question between them, so it can pause.
BLUEPRINT = """\
version: "0.1"
name: two_agents
agents:
  writer: {model: scripted, replies: ["written by the script"]}
  critic: {model: scripted, replies: ["criticised by the script"]}
  tool: {python: "json:dumps"}
steps:
  - {kind: step, name: write, uses: agents.writer}
  - {kind: hitl, name: ok, message: "Go on?"}
  - {kind: step, name: criticise, uses: agents.critic, input: "{{ steps.write.output }} / {{ previous_step }}"}
"""


@pytest.fixture
def blueprint(tmp_path: Path) -> str:
    path = tmp_path / "two.yaml"
    path.write_text(BLUEPRINT, encoding="utf-8")
    return str(path)


@pytest.fixture
def llm(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    return fake_llm


def run_json(*args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = flujo([*args, "--json"])
    return code, json.loads(out) if out.strip() else {}, err


def options_of(db: Path, run_id: str) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async with await open_store(str(db)) as store:
            record = await store.get_run(run_id)
            assert record is not None
            return dict(record.options or {})

    return asyncio.run(read())


def runs_in(db: Path) -> int:
    if not db.exists():
        return 0

    async def read() -> int:
        async with await open_store(str(db)) as store:
            return len(await store.list_runs(limit=100))

    return asyncio.run(read())


def test_an_agent_runs_the_model_given_on_the_command_line(state_db: Path, blueprint: str, llm: FakeLLM) -> None:
    llm.reply("the real model wrote this")
    code, result, err = run_json("run", blueprint, "--model", "agents.writer=openai:gpt-test", "-a", "yes")
    assert code == exit_codes.OK, err
    assert [body["model"] for body in llm.bodies] == ["gpt-test"]  # only the writer; the critic stays scripted
    assert result["output"] == "criticised by the script"
    assert options_of(state_db, result["run_id"]) == {"models": ["agents.writer=openai:gpt-test"]}
    assert "written by the script" in Path(blueprint).read_text()  # the YAML is unchanged


def test_star_changes_every_agent_with_a_model_and_a_named_agent_beats_it(state_db: Path, blueprint: str) -> None:
    # '*' reaches both scripted agents (their replies dropped: echo answers), never the python one.
    code, result, err = run_json("run", blueprint, "--model", "*=echo", "-i", "draft", "-a", "yes")
    assert code == exit_codes.OK, err
    assert result["output"] == "draft / yes"
    # agents.NAME beats '*', whichever comes first.
    code, result, err = run_json(
        "run", blueprint, "--model", "agents.critic=scripted", "--model", "*=echo", "-i", "draft", "-a", "yes"
    )
    assert code == exit_codes.OK, err
    assert result["output"] == "criticised by the script"


def test_a_resume_keeps_the_models_its_run_started_with(state_db: Path, blueprint: str) -> None:
    code, result, err = run_json("run", blueprint, "--model", "*=echo", "-i", "draft", "--no-input")
    assert code == exit_codes.PAUSED, err
    run_id = result["run_id"]
    code, result, err = run_json("resume", run_id, "-a", "yes")
    assert code == exit_codes.OK, err
    assert result["output"] == "draft / yes"  # the critic still echoes: the run kept --model '*=echo'
    assert options_of(state_db, run_id)["models"] == ["*=echo"]


def test_a_model_given_to_resume_comes_on_top_of_the_recorded_ones(state_db: Path, blueprint: str) -> None:
    code, result, err = run_json("run", blueprint, "--model", "*=echo", "-i", "draft", "--no-input")
    assert code == exit_codes.PAUSED, err
    run_id = result["run_id"]
    code, result, err = run_json("resume", run_id, "-a", "yes", "--model", "agents.critic=scripted")
    assert code == exit_codes.OK, err
    assert result["output"] == "criticised by the script"
    assert options_of(state_db, run_id)["models"] == ["*=echo", "agents.critic=scripted"]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("agents.writter=echo", "two.yaml defines no agent 'writter' — did you mean 'writer'?"),
        ("agents.writer=opnai:gpt-4o", "unknown provider 'opnai' — did you mean 'openai'?"),
        ("agents.writer=ecko", "unknown model 'ecko' — did you mean 'echo'?"),
        ("agents.writer=openai:", "model 'openai:' names no model"),
        ("writer=echo", "name the agent as agents.writer"),
        ("agents.writer", "is not AGENT=MODEL"),
        ("agents.tool=echo", "agent 'tool' is a python agent, not a model"),
    ],
)
@pytest.mark.parametrize("command", ["run", "explain", "validate", "submit"])
def test_a_model_that_cannot_apply_is_a_usage_error(
    state_db: Path, blueprint: str, command: str, value: str, said: str
) -> None:
    code, _, err = flujo([command, blueprint, "--model", value])
    assert code == exit_codes.USAGE, err
    assert said in err and "Traceback" not in err
    assert "hint:" in err
    assert runs_in(state_db) == 0  # nothing ran, nothing was queued


def test_resume_refuses_a_model_that_cannot_apply(state_db: Path, blueprint: str) -> None:
    code, result, err = run_json("run", blueprint, "--no-input")
    assert code == exit_codes.PAUSED, err
    code, _, err = flujo(["resume", result["run_id"], "-a", "yes", "--model", "agents.critc=echo"])
    assert code == exit_codes.USAGE
    assert "did you mean 'critic'?" in err


def test_explain_and_validate_see_the_models_given(blueprint: str, tmp_path: Path) -> None:
    code, out, err = flujo(["explain", blueprint, "--model", "agents.writer=openai:gpt-4o-mini", "--json"])
    assert code == exit_codes.OK, err
    assert "openai:gpt-4o-mini" in out
    # validate checks the agents as they would run: a scripted agent needs replies, which echo had none of.
    echo = tmp_path / "echo.yaml"
    echo.write_text('version: "0.1"\nagents:\n  repeat: {model: echo}\nsteps:\n  - {name: s, uses: agents.repeat}\n')
    code, _, err = flujo(["validate", str(echo)])
    assert code == exit_codes.OK, err
    code, out, err = flujo(["validate", str(echo), "--model", "*=scripted", "--json"])
    assert code == exit_codes.FAILED
    messages = [finding["message"] for finding in json.loads(out)["findings"]]
    assert messages == ["agent 'repeat': model scripted needs replies: [...]"]


def test_a_submitted_run_is_executed_by_the_worker_with_its_models(state_db: Path, blueprint: str) -> None:
    code, out, err = flujo(["submit", blueprint, "--input", "draft", "--model", "*=echo", "--json"])
    assert code == exit_codes.OK, err
    (run_id,) = json.loads(out)["queued"]
    assert options_of(state_db, run_id) == {"models": ["*=echo"]}
    code, _, err = flujo(["worker", "--until-idle"])
    assert code == exit_codes.OK, err
    code, out, err = flujo(["lens", "show", run_id, "--json"])
    steps = {step["name"]: step for step in json.loads(out)["steps"]}
    assert steps["write"]["output"] == "draft"  # echoed: the worker ran it with --model '*=echo'


def test_star_reaches_the_agents_of_imported_blueprints_and_agents_name_does_not(
    state_db: Path, tmp_path: Path
) -> None:
    (tmp_path / "child.yaml").write_text(
        'version: "0.1"\nagents:\n  inner: {model: scripted, replies: ["inner script"]}\n'
        "steps:\n  - {kind: step, name: inner_step, uses: agents.inner}\n",
        encoding="utf-8",
    )
    parent = tmp_path / "parent.yaml"
    parent.write_text(
        'version: "0.1"\nimports:\n  child: child.yaml\nagents:\n  outer: {model: echo}\n'
        "steps:\n  - {kind: step, name: call, uses: imports.child}\n  - {kind: step, name: last, uses: agents.outer}\n",
        encoding="utf-8",
    )
    code, result, err = run_json("run", str(parent), "-i", "hello")
    assert code == exit_codes.OK, err
    assert result["output"] == "inner script"
    code, result, err = run_json("run", str(parent), "-i", "hello", "--model", "*=echo")
    assert code == exit_codes.OK, err
    assert result["output"] == "hello"
    code, _, err = flujo(["run", str(parent), "-i", "hello", "--model", "agents.inner=echo"])
    assert code == exit_codes.USAGE
    assert "parent.yaml defines no agent 'inner'" in err


def test_a_local_model_file_is_found_from_the_working_directory(state_db: Path, blueprint: str) -> None:
    from blueprints import ModelOverrides

    parsed = ModelOverrides.parse(["agents.writer=local:models/small.gguf"], cwd=Path("/work/here"))
    assert parsed.assignments() == ["agents.writer=local:/work/here/models/small.gguf"]
    assert ModelOverrides.parse(["*=local"]).assignments() == ["*=local"]
