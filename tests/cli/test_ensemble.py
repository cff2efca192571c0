"""Ensembles through the real ``flujo`` command: run, validate, explain, pause and resume, SIGKILL and
resume, and the ensemble file format with script and model participants (model agents through the
loopback OpenAI-compatible server)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo, flujo_process
from tests.support.fakes.openai_server import FakeLLM

FILE_EXAMPLE = ROOT / "docs" / "examples" / "ensemble_file"

REVIEW = """\
version: "0.1"
name: review
agents:
  writer:
    model: scripted
    replies: ["draft 1", "draft 2", "draft 3"]
  critic:
    model: scripted
    replies: ['{"approved": false}', '{"approved": true}']
steps:
  - kind: ensemble
    name: review
    ensemble:
      participants:
        - name: writer
          uses: agents.writer
          max_turns: 3
          depends_on:
            - participant: critic
              condition: "history[-1].participant == 'critic' and not context.approved"
          triggers_conversation: true
        - name: critic
          uses: agents.critic
          max_turns: 3
          depends_on:
            - participant: writer
              condition: "history[-1].participant == 'writer'"
        - name: editor
          ask: "Approve {{ steps.writer.output }}?"
          depends_on:
            - participant: critic
              condition: "context.approved"
      max_total_turns: 7
"""


def prompts_of(db: Path, run_id: str) -> dict[str, Any]:
    """The messages each agent call of run ``run_id`` was sent, by step path (read through the store)."""

    async def read() -> dict[str, Any]:
        async with await open_store(str(db)) as store:
            return {e.path: e.payload["messages"] for e in await store.events(run_id) if e.kind == "agent.prompt"}

    return asyncio.run(read())


def sequence(output: dict[str, Any]) -> list[tuple[int, str]]:
    return [(turn["turn"], turn["participant"]) for turn in output["history"]]


@pytest.fixture
def review(state_db: Path) -> Path:
    path = state_db.parent.parent / "review.yaml"
    path.write_text(REVIEW, encoding="utf-8")
    return path


def test_run_an_ensemble_in_our_dialect(review: Path) -> None:
    code, out, err = flujo(["run", str(review), "--json", "--input", "a poem", "--answer", "yes"])
    assert code == exit_codes.OK, err
    output = json.loads(out)["output"]
    assert sequence(output) == [(1, "writer"), (2, "critic"), (3, "writer"), (4, "critic"), (5, "editor")]
    assert output["completion_reason"] == "completed"
    assert output["final_state"]["editor"] == "yes"


def test_pause_for_the_person_then_resume(review: Path) -> None:
    code, out, _ = flujo(["run", str(review), "--json", "--no-input", "--input", "a poem"])
    assert code == exit_codes.PAUSED
    paused = json.loads(out)
    assert paused["pause"]["step"] == "editor"
    code, out, err = flujo(["resume", paused["run_id"], "--json", "--answer", "ship it"])
    assert code == exit_codes.OK, err
    output = json.loads(out)["output"]
    assert output["final_state"]["editor"] == "ship it"
    assert output["completion_reason"] == "completed"


def test_adr_file_runs_as_written_with_scripts_and_models(
    state_db: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mixed script and LLM agents collaborate: the ensemble file example, its scripts and its profiles."""
    folder = state_db.parent.parent / "adr"
    shutil.copytree(FILE_EXAMPLE, folder)
    monkeypatch.chdir(folder)  # flujo.toml (the profiles) is found from the working directory
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    fake_llm.reply({"needs_clarification": True, "question": "the units"})
    fake_llm.reply({"needs_clarification": False})
    final = {"needs_clarification": False, "final_analysis": "sales grow", "synthesis_complete": True}
    fake_llm.reply(final)  # round 3 calls the analyzer and the synthesis at once: same reply, any order
    fake_llm.reply(final)
    code, out, err = flujo(["run", "ensemble.yaml", "--json", "--input", "Q3 sales"])
    assert code == exit_codes.OK, err
    output = json.loads(out)["output"]
    assert sequence(output) == [
        (1, "data_extractor"),
        (1, "llm_analyzer"),  # triggers_conversation: it opens the conversation in round 1
        (2, "data_extractor"),
        (2, "llm_analyzer"),
        (2, "user_clarification"),  # the analyzer asked for clarification in round 1
        (3, "llm_analyzer"),
        (3, "final_synthesis"),  # the clarification was provided in round 2
    ]
    state = output["final_state"]
    assert state["final_analysis"] == "sales grow" and state["synthesis_complete"] is True
    assert state["batches"] == 2  # the extractor script read its own earlier reply from the context
    assert state["clarification"] == "About the units: rows are sales per day."
    assert output["completion_reason"] == "completed"
    bodies = fake_llm.bodies
    analyzer = [b for b in bodies if b["model"] == "gpt-4o-mini"]
    synthesis = [b for b in bodies if b["model"] == "llama3.2:1b"]
    assert len(analyzer) == 3 and len(synthesis) == 1
    assert analyzer[0]["messages"][0]["content"].startswith("Analyze the data")  # `prompt` is the system prompt
    assert analyzer[0]["temperature"] == 0.2  # the profile's model_settings
    assert synthesis[0]["messages"][0]["content"].startswith("Synthesize all")  # `prompt` beats the profile's
    said = [m["content"] for m in synthesis[0]["messages"]]
    assert (
        "user_clarification: "
        + json.dumps({"clarification_provided": True, "clarification": "About the units: rows are sales per day."})
        in said
    )


def test_validate_reports_ensemble_mistakes(state_db: Path) -> None:
    folder = state_db.parent.parent
    (folder / "flujo.toml").write_text('[profiles.fast]\nmodel = "echo"\n', encoding="utf-8")
    (folder / "bad.yaml").write_text(
        """\
name: bad
agents:
  - name: writer
    model_profile: fsat
    dependencies:
      - agent_name: critc
  - name: critic
    model_profile: fast
    dependencies:
      - agent_name: writer
        condition: "context.ok and"
  - name: judge
    model_profile: fast
    dependencies:
      - agent_name: critic
        condition: "verdict == 'yes'"
conversation_limits:
  max_agent_executions: {judge: 5}
""",
        encoding="utf-8",
    )
    code, out, _ = flujo(["validate", "bad.yaml", "--json"])
    assert code == exit_codes.FAILED
    findings = {(f["line"], f["severity"], f["message"]) for f in json.loads(out)["findings"]}
    messages = "\n".join(f"{line} {severity} {message}" for line, severity, message in sorted(findings))
    assert "4 error unknown model_profile 'fsat' — did you mean 'fast'?" in messages
    assert "6 error participant 'writer' depends on 'critc', which is not a participant — did you mean 'critic'?" in (
        messages
    )
    assert "11 error expression syntax error" in messages
    assert "16 error expression reads 'verdict', which is not defined" in messages
    assert "18 warning max_agent_executions: judge: 5 can never be reached: its max_turns is 1" in messages


@pytest.mark.parametrize("value", ["*=echo", "agents.llm_analyzer=echo"])
def test_model_flags_say_an_ensemble_file_s_participants_run_their_profiles(state_db: Path, value: str) -> None:
    # '*' was ignored without a word, and agents.NAME said the file "defines no agents" (the participants were
    # called agents.NAME by the missing key's error): the flag is refused, saying where the model comes from.
    for command in ("run", "validate"):
        code, _, err = flujo([command, str(FILE_EXAMPLE / "ensemble.yaml"), "--model", value])
        assert code == exit_codes.USAGE, err
        assert f"--model {value}: ensemble.yaml is an ensemble file; its participants run the model of" in err
        assert "[profiles.NAME] model = ..." in err and "Traceback" not in err


def test_a_missing_key_of_a_participant_s_profile_says_to_change_the_profile(
    state_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hint said "or use model: scripted": a participant has no model: of its own, and a scripted profile is
    # refused (it has no replies). The profile's model is what the person can change, and echo runs offline.
    folder = state_db.parent.parent / "adr"
    shutil.copytree(FILE_EXAMPLE, folder)
    monkeypatch.chdir(folder)
    code, _, err = flujo(["run", "ensemble.yaml", "--input", "Q3 sales"])
    assert code == exit_codes.CONFIG, err
    assert "agents.llm_analyzer uses openai:gpt-4o-mini but OPENAI_API_KEY is not set" in err
    assert err.splitlines()[-1] == (
        "hint: export OPENAI_API_KEY=..., point OPENAI_BASE_URL at a local OpenAI-compatible server, or set"
        " profiles.efficient.model to another model in flujo.toml (--set profiles.efficient.model=echo runs offline)"
    )
    assert "model: scripted" not in err
    code, _, err = flujo(["run", "ensemble.yaml", "--input", "Q3 sales", "--set", "profiles.efficient.model=echo"])
    assert code == exit_codes.OK, err  # the hint, followed, runs
    # A participant that uses an agent of the blueprint keeps the hint of any agent: its model: is the author's.
    (folder / "review.yaml").write_text(
        REVIEW.replace(
            'model: scripted\n    replies: ["draft 1"', 'model: openai:gpt-4o-mini\n    replies: ["draft 1"'
        ),
        encoding="utf-8",
    )
    code, _, err = flujo(["run", "review.yaml", "--input", "a poem"])
    assert code == exit_codes.CONFIG, err
    assert "agents.writer uses openai:gpt-4o-mini but OPENAI_API_KEY is not set" in err
    assert err.splitlines()[-1].endswith(", or use model: scripted for an offline run")


def test_validate_lists_the_known_profiles_and_finds_cycles(state_db: Path) -> None:
    folder = state_db.parent.parent
    (folder / "flujo.toml").write_text('[profiles.fast]\nmodel = "echo"\n', encoding="utf-8")
    (folder / "loop.yaml").write_text(
        """\
version: "0.1"
steps:
  - kind: ensemble
    name: chat
    ensemble:
      participants:
        - {name: a, model_profile: slow, depends_on: [b]}
        - {name: b, model_profile: fast, depends_on: [a]}
""",
        encoding="utf-8",
    )
    code, _, err = flujo(["validate", "loop.yaml"])
    assert code == exit_codes.FAILED
    assert "loop.yaml:7:36: error: unknown model_profile 'slow'" in err
    assert "known profiles: 'fast'" in err
    assert "no participant of ensemble 'chat' can start: each waits for another (a dependency cycle)" in err


def test_explain_says_who_speaks_when_and_the_worst_case(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = state_db.parent.parent / "adr"
    shutil.copytree(FILE_EXAMPLE, folder)
    monkeypatch.chdir(folder)
    code, out, err = flujo(["explain", "ensemble.yaml"])
    assert code == exit_codes.OK, err
    text = " ".join(out.split())
    assert "Runs a conversation among 4 participants (data_extractor, llm_analyzer, user_clarification," in text
    assert "llm_analyzer: The model profile efficient (openai:gpt-4o-mini); speaks in round 1 (it opens the" in text
    assert "at most 9 round(s)" in text
    assert "At most 4 model calls" in text  # 3 analyzer turns, 1 synthesis


@pytest.mark.slow
def test_sigkill_mid_round_then_resume(tmp_path: Path) -> None:
    """No committed turn is run again, none is lost or doubled; the resumed run ends as an uninterrupted one."""
    blueprint = """\
version: "0.1"
agents:
  counter: {python: "tests.support.ensemble_agents:counter"}
  crasher: {python: "tests.support.ensemble_agents:crasher"}
steps:
  - kind: ensemble
    name: chat
    ensemble:
      participants:
        - {name: counter, uses: agents.counter, max_turns: 4}
        - {name: crasher, uses: agents.crasher, max_turns: 4, depends_on: [counter]}
"""

    def run(folder: Path, *args: str, **env: str) -> Any:
        folder.mkdir(exist_ok=True)
        (folder / "chat.yaml").write_text(blueprint, encoding="utf-8")
        with contextlib.chdir(folder):
            return flujo_process(
                list(args),
                env={"FLUJO_STATE_URI": str(folder / "flujo.db"), "ENSEMBLE_LOG": str(folder / "log"), **env},
            )

    clean = run(tmp_path / "clean", "run", "chat.yaml", "--json")
    assert clean.returncode == 0, clean.stderr
    expected = json.loads(clean.stdout)["output"]

    crashed_dir = tmp_path / "crashed"
    crashed = run(crashed_dir, "run", "chat.yaml", "--json", ENSEMBLE_KILL_AT="3")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    db = crashed_dir / "flujo.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        [(run_id,)] = conn.execute("SELECT run_id FROM runs").fetchall()
        # A completed step's status, as the store writes it (one character: core.model.pack_tables.STEP_STATUSES).
        committed = [path for (path,) in conn.execute("SELECT path FROM steps WHERE status = char(1)")]
    assert "chat/2/crasher" in committed and "chat/3/crasher" not in committed

    resumed = run(crashed_dir, "resume", run_id, "--json", ENSEMBLE_KILL_AT="3")
    assert resumed.returncode == 0, resumed.stderr
    output = json.loads(resumed.stdout)["output"]
    assert sequence(output) == sequence(expected)
    assert output["final_state"] == expected["final_state"]
    calls = (crashed_dir / "log").read_text(encoding="utf-8").split()
    for path in committed:  # a committed turn ran once, in the crashed process
        _, turn, name = path.split("/")
        assert calls.count(f"{name}:{turn}") == 1, path
    with contextlib.closing(sqlite3.connect(db)) as conn:
        paths = [path for (path,) in conn.execute("SELECT path FROM steps WHERE run_id = ?", (run_id,))]
    assert len(paths) == len(set(paths))


def test_a_thread_continues_across_ensemble_runs(review: Path, state_db: Path) -> None:
    code, _, err = flujo(["run", str(review), "--input", "a poem", "--answer", "yes", "--thread", "poems"])
    assert code == exit_codes.OK, err
    code, out, err = flujo(
        ["run", str(review), "--json", "--input", "a limerick", "--answer", "no", "--thread", "poems"]
    )
    assert code == exit_codes.OK, err
    run_id = json.loads(out)["run_id"]
    code, out, _ = flujo(["threads", "show", "poems"])
    assert "2 runs, 12 turns" in out
    assert "User: editor: yes" in out and 'Assistant: critic: {"approved": false}' in out
    sent = prompts_of(state_db, run_id)["review/1/writer"]
    assert {"role": "assistant", "content": "draft 1"} in sent  # its own turn of the earlier run
    assert {"role": "user", "content": "editor: yes"} in sent
    assert sent[-1] == {"role": "user", "content": "a limerick"}


def test_documented_scripts_and_profiles_are_the_example_files() -> None:
    """docs/ensembles.md shows the ensemble file example's scripts and flujo.toml as they are."""
    page = (ROOT / "docs" / "ensembles.md").read_text(encoding="utf-8")
    scripts = re.findall(r"^```python\n(# (docs/examples/\S+\.py)\n.*?)^```$", page, flags=re.DOTALL | re.MULTILINE)
    assert len(scripts) == 2
    for block, name in scripts:
        assert block == (ROOT / name).read_text(encoding="utf-8"), name
    [toml] = re.findall(r"^```toml\n(.*?)^```$", page, flags=re.DOTALL | re.MULTILINE)
    assert toml == (FILE_EXAMPLE / "flujo.toml").read_text(encoding="utf-8")


def test_validate_warns_about_keys_without_effect(state_db: Path) -> None:
    path = state_db.parent.parent / "summary.yaml"
    path.write_text(
        """\
version: "0.1"
agents:
  a: {model: echo}
steps:
  - kind: ensemble
    name: chat
    ensemble:
      participants: [{name: a, uses: agents.a}, {name: b, script: b.py, prompt: "Be brief."}]
      history_management: {strategy: summarize}
""",
        encoding="utf-8",
    )
    (path.parent / "b.py").write_text("print('{}')\n", encoding="utf-8")
    code, _, err = flujo(["validate", str(path)])
    assert code == exit_codes.OK
    assert "summary.yaml:9:28: warning: ensemble 'chat' does not summarize" in err
    assert "warning: prompt has no effect on participant 'b', which is not a model" in err


def test_a_sub_workflow_takes_part(state_db: Path) -> None:
    folder = state_db.parent.parent
    (folder / "helper.yaml").write_text(
        'version: "0.1"\nagents:\n  shout: {model: echo}\nsteps:\n  - {kind: step, name: shout, uses: agents.shout}\n',
        encoding="utf-8",
    )
    (folder / "team.yaml").write_text(
        """\
version: "0.1"
imports: {helper: helper.yaml}
agents:
  lead: {model: scripted, replies: ["plan A", "plan B"]}
steps:
  - kind: ensemble
    name: team
    ensemble:
      participants:
        - {name: lead, uses: agents.lead, max_turns: 2}
        - {name: helper, uses: imports.helper, depends_on: [lead]}
""",
        encoding="utf-8",
    )
    code, out, err = flujo(["run", str(folder / "team.yaml"), "--json", "--input", "go"])
    assert code == exit_codes.OK, err
    output = json.loads(out)["output"]
    assert [(t["turn"], t["participant"], t["output"]) for t in output["history"]] == [
        (1, "lead", "plan A"),
        (2, "lead", "plan B"),
        (2, "helper", "lead: plan A"),  # the child run was sent the newest turn said by someone else
    ]


def test_lens_shows_the_conversation_round_by_round(review: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("MY_TOKEN", "sk-secret-123456")
    monkeypatch.setenv("FLUJO_SECRET_ENV_VARS", '["MY_TOKEN"]')
    code, out, err = flujo(["run", str(review), "--json", "--input", "a poem sk-secret-123456", "--answer", "yes"])
    assert code == exit_codes.OK, err
    run_id = json.loads(out)["run_id"]
    code, out, err = flujo(["lens", "trace", run_id, "--expand", "all"])
    assert code == exit_codes.OK, err
    lines = [line.strip(" │├└─") for line in out.splitlines()]
    rounds = [line for line in lines if line.startswith("round ")]
    assert rounds == ["round 1", "round 2", "round 3", "round 4", "round 5"]
    assert any(line.startswith("✓ critic") for line in lines) and any(line.startswith("✓ editor") for line in lines)
    assert "ensemble.done  ended after 5 rounds: completed" in lines
    assert any("user      writer: draft 1" in line for line in lines)  # the critic's exact prompt
    assert "sk-secret-123456" not in out  # redacted


def test_config_sets_a_model_participants_settings(
    state_db: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = state_db.parent.parent
    (folder / "flujo.toml").write_text(
        '[profiles.fast]\nmodel = "openai:gpt-4o-mini"\nsystem_prompt = "Be brief."\n'
        "model_settings = { temperature = 0.2, max_tokens = 50 }\n",
        encoding="utf-8",
    )
    (folder / "one.yaml").write_text(
        "name: one\nagents:\n  - name: solo\n    model_profile: fast\n    config: {temperature: 0.9, mood: calm}\n",
        encoding="utf-8",
    )
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    code, _, err = flujo(["run", "one.yaml", "--json", "--input", "hello"])
    assert code == exit_codes.OK, err
    [body] = fake_llm.bodies
    assert body["temperature"] == 0.9 and body["max_tokens"] == 50  # config wins over the profile, key by key
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}  # the profile's system prompt
    assert "mood" not in body


def test_validate_speaks_the_ensemble_files_own_keys(state_db: Path) -> None:
    path = state_db.parent.parent / "typo.yaml"
    (path.parent / "a.py").write_text("print('{}')\n", encoding="utf-8")
    path.write_text(
        """\
name: typo
agents:
  - name: a
    script: a.py
    conversation: {max_turn: 2}
    dependencies:
      - {agentname: b}
  - name: b
    script: a.py
conversation_limit: {max_total_turns: 3}
""",
        encoding="utf-8",
    )
    code, _, err = flujo(["validate", str(path)])
    assert code == exit_codes.FAILED
    assert "typo.yaml:5:20: error: unknown key 'max_turn' in agent 'a' — did you mean 'max_turns'?" in err
    assert "typo.yaml:7:9: error: missing 'agent_name' in dependency of agent 'a'" in err
    assert "typo.yaml:7:10: error: unknown key 'agentname' in dependency — did you mean 'agent_name'?" in err
    assert "typo.yaml:10:1: error: unknown key 'conversation_limit' at the top level — did you mean" in err


def test_a_round_cancelled_by_the_timeout_is_not_counted(state_db: Path) -> None:
    """``turn_count`` is the rounds in which someone spoke: the round the timeout cancelled (its only speaker
    waits for an event that never comes) said nothing and is not one of them."""
    path = state_db.parent.parent / "stuck.yaml"
    path.write_text(
        """\
version: "0.1"
agents:
  quick: {model: scripted, replies: ["hello"]}
  stuck: {python: "tests.support.ensemble_agents:waits_forever"}
steps:
  - kind: ensemble
    name: chat
    ensemble:
      participants:
        - {name: quick, uses: agents.quick}
        - {name: stuck, uses: agents.stuck, depends_on: [quick]}
      timeout_seconds: 0.5
""",
        encoding="utf-8",
    )
    code, out, err = flujo(["run", str(path), "--json", "--input", "hi"])
    assert code == exit_codes.OK, err
    output = json.loads(out)["output"]
    assert output["completion_reason"] == "timeout"
    assert "stuck" not in [participant for _, participant in sequence(output)]
    # quick's round 1 is the only one said (or, on a machine slow enough to miss the deadline, none was)
    assert output["turn_count"] == len(output["history"])
