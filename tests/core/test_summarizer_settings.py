"""The default summarizer of the settings (``history.summarizer_model``, ``history.summarizer_prompt``):
which summarizer a ``summarize`` loop gets, the summary it makes (against the fake OpenAI server on
127.0.0.1), and ``flujo validate`` and ``flujo run`` agreeing on a loop that has none."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from blueprints import compile_pipeline, load_blueprint, validate_file
from core import (
    BlueprintError,
    ConfigError,
    HistorySettings,
    LoopStep,
    Pipeline,
    Settings,
    load_settings,
    overrides_from_assignments,
)
from core.conversation.summary import SUMMARY_REQUEST
from flujo_cli import exit_codes
from tests.core.test_conversation_runs import SUMMARY, compile_text, prompts, run, sent, step_records
from tests.support.cli_helpers import flujo
from tests.support.fakes.openai_server import FakeLLM

CHAT = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2, q3, q4, q5]}
  own: {model: scripted, replies: [OWN]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 4
      %s
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
      output: {text: conversation_history}
"""
ANSWERS = ["a1", "a2", "a3", "a4"]
PLAIN = "ai_turn_source: last"  # a loop without history_management
# The summarizer the settings name; the fake server answers for it.
DEFAULT = {
    "FLUJO_HISTORY__SUMMARIZER_MODEL": "openai:summ-mini",
    "FLUJO_HISTORY__SUMMARIZER_PROMPT": "You condense conversations.",
}


def summarizer(pipeline: Pipeline) -> str | None:
    """The label of the summarizer the pipeline's loop got (None for none)."""
    [loop] = pipeline.steps
    assert isinstance(loop, LoopStep) and loop.conversation is not None
    agent = loop.conversation.history.summarizer
    return None if agent is None else agent.label


async def test_a_loops_own_summarizer_agent_beats_the_configured_default(tmp_path: Path, fake_llm: FakeLLM) -> None:
    settings = load_settings(cwd=tmp_path, env={**fake_llm.env(), **DEFAULT})
    own = "history_management: {strategy: summarize, summarizer_agent: own, max_turns: 4}"
    pipeline = compile_text(tmp_path, CHAT % own, settings)
    assert summarizer(pipeline) == "scripted"
    outcome, store, _ = await run(pipeline, "my goal", ANSWERS)
    assert outcome.status == "completed", outcome.error
    records = await step_records(store, outcome.run_id)
    assert [records[p].output for p in records if p.endswith("/summarize")] == ["OWN"]
    assert fake_llm.bodies == []  # the configured summarizer was never asked
    # Another strategy gets no summarizer at all, so the default one is not even built.
    assert summarizer(compile_text(tmp_path, CHAT % PLAIN, settings)) is None


def test_the_default_summarizer_is_built_only_for_a_loop_that_summarizes(tmp_path: Path) -> None:
    # openai:gpt-4o-mini at api.openai.com without OPENAI_API_KEY cannot be built.
    settings = load_settings(cwd=tmp_path, env={"FLUJO_HISTORY__SUMMARIZER_MODEL": "openai:gpt-4o-mini"})
    assert summarizer(compile_text(tmp_path, CHAT % PLAIN, settings)) is None
    summarizing = replace(settings, history=replace(settings.history, strategy="summarize"))
    with pytest.raises(ConfigError) as caught:
        compile_text(tmp_path, CHAT % PLAIN, summarizing)
    assert caught.value.message.startswith(
        f"{tmp_path / 'flow.yaml'}:9:7: the default summarizer (setting history.summarizer_model): "
    )
    assert "OPENAI_API_KEY is not set" in caught.value.message
    # Not "use model: scripted": a scripted summarizer setting is refused; the setting is what to change.
    assert caught.value.hint is not None and caught.value.hint.endswith(
        ", or set history.summarizer_model to another model in flujo.toml (--set history.summarizer_model=echo"
        " runs offline)"
    )


async def test_the_default_strategy_summarize_uses_the_configured_summarizer(tmp_path: Path, fake_llm: FakeLLM) -> None:
    env = {**fake_llm.env(), **DEFAULT, "FLUJO_HISTORY__STRATEGY": "summarize", "FLUJO_HISTORY__MAX_TURNS": "4"}
    settings = load_settings(cwd=tmp_path, env=env)
    fake_llm.reply("S1")
    pipeline = compile_text(tmp_path, CHAT % PLAIN, settings)
    assert summarizer(pipeline) == "openai:summ-mini"
    outcome, store, _ = await run(pipeline, "my goal", ANSWERS)
    assert outcome.status == "completed", outcome.error
    # The fake server was asked for the summary: the configured model, its prompt, then the request. Once
    # in 4 iterations: after it, the history does not cross max_turns again before the loop ends.
    assert len(fake_llm.bodies) == 1
    body = fake_llm.bodies[0]
    assert body["model"] == "summ-mini"
    assert body["messages"][0] == {"role": "system", "content": "You condense conversations."}
    assert body["messages"][1]["role"] == "user" and body["messages"][1]["content"].startswith(SUMMARY_REQUEST)
    assert "my goal" in body["messages"][1]["content"]
    records = await step_records(store, outcome.run_id)
    summaries = [records[p] for p in records if p.endswith("/summarize")]
    assert [s.output for s in summaries] == ["S1"]
    # The next calls are sent the summary as the first turn.
    first = summaries[0].path.removesuffix("/summarize")
    assert sent((await prompts(store, outcome.run_id))[first])[0] == ("assistant", f"{SUMMARY}S1")
    assert sent((await prompts(store, outcome.run_id))["chat/4/talk"])[0] == ("assistant", f"{SUMMARY}S1")
    assert outcome.usage.requests == 4 + 1  # the bot's calls and the summarizer's


SUMMARIZE = "history_management: {strategy: summarize, max_turns: 4}"


async def test_a_summarize_loop_without_summarizer_agent_uses_the_configured_default(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    overrides = overrides_from_assignments(["history.summarizer_model=openai:summ-mini"])
    settings = load_settings(cwd=tmp_path, env=fake_llm.env(), overrides=overrides)
    fake_llm.reply("S1")
    outcome, store, _ = await run(compile_text(tmp_path, CHAT % SUMMARIZE, settings), "my goal", ANSWERS)
    assert outcome.status == "completed", outcome.error
    assert [body["model"] for body in fake_llm.bodies] == ["summ-mini"]
    records = await step_records(store, outcome.run_id)
    assert [records[p].output for p in records if p.endswith("/summarize")] == ["S1"]
    assert sent((await prompts(store, outcome.run_id))["chat/4/talk"])[0] == ("assistant", f"{SUMMARY}S1")
    assert isinstance(outcome.output, str) and outcome.output.startswith("User: my goal\nAssistant: q1\n")


def test_compiling_with_settings_that_name_no_summarizer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(CHAT % SUMMARIZE, encoding="utf-8")
    blueprint = load_blueprint(path, settings=Settings(history=HistorySettings(summarizer_model="echo")))
    # Validated with a default summarizer, compiled without one: an error, never a loop that cannot summarize.
    with pytest.raises(BlueprintError) as caught:
        compile_pipeline(blueprint, Settings())
    assert caught.value.message == "strategy: summarize needs summarizer_agent, and no default summarizer is configured"
    assert caught.value.hint is not None and "history.summarizer_model" in caught.value.hint


def test_an_imported_blueprint_is_validated_against_the_same_settings(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text(CHAT % SUMMARIZE, encoding="utf-8")
    parent = tmp_path / "parent.yaml"
    parent.write_text(
        'version: "0.1"\nimports: {child: child.yaml}\nsteps:\n  - {kind: step, name: sub, uses: imports.child}\n',
        encoding="utf-8",
    )
    errors = [f.message for f in validate_file(parent) if f.is_error]
    assert errors == ["strategy: summarize needs summarizer_agent, and no default summarizer is configured"]
    assert validate_file(parent, settings=Settings(history=HistorySettings(summarizer_model="echo"))) == []


# --- flujo validate and flujo run agree -----------------------------------------------------------------

MISSING = "error: strategy: summarize needs summarizer_agent, and no default summarizer is configured"
CONFIGURED = (
    "error: this conversation loop summarizes (the configured history.strategy is summarize) but has no "
    "summarizer_agent, and no default summarizer is configured"
)
ARGS = ["--input", "my goal", *(arg for answer in ANSWERS for arg in ("--answer", answer)), "--no-input"]


def both(path: Path, *flags: str) -> tuple[tuple[int, str], tuple[int, str, str]]:
    """``flujo validate`` (exit code, stderr) and ``flujo run`` (exit code, stdout, stderr) of ``path``."""
    checked, _, check_err = flujo(["validate", str(path), *flags])
    ran = flujo(["run", str(path), *ARGS, *flags])
    return (checked, " ".join(check_err.split())), ran


def assert_refused_alike(path: Path, message: str, where: str, *flags: str) -> None:
    (checked, check_err), (code, _, run_err) = both(path, *flags)
    run_err = " ".join(run_err.split())  # rich wraps long lines
    assert (checked, code) == (exit_codes.FAILED, exit_codes.BLUEPRINT)
    for err in (check_err, run_err):
        assert f"{path}:{where}: {message}" in err
        # The hint names both ways to fix it.
        assert "history_management.summarizer_agent" in err
        assert "FLUJO_HISTORY__SUMMARIZER_MODEL" in err and "--set history.summarizer_model=" in err


@pytest.mark.parametrize("layer", ["flujo.toml", "environment", "--set"])
def test_validate_and_run_agree_on_a_summarize_loop_without_summarizer_agent(
    tmp_path: Path, state_db: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, layer: str
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(CHAT % SUMMARIZE, encoding="utf-8")
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    assert_refused_alike(path, MISSING, "11:38")
    flags: list[str] = []
    if layer == "flujo.toml":
        (tmp_path / "flujo.toml").write_text('[history]\nsummarizer_model = "openai:summ-mini"\n', encoding="utf-8")
    elif layer == "environment":
        monkeypatch.setenv("FLUJO_HISTORY__SUMMARIZER_MODEL", "openai:summ-mini")
    else:
        flags = ["--set", "history.summarizer_model=openai:summ-mini"]
    fake_llm.reply("S1")
    (checked, check_err), (code, out, run_err) = both(path, *flags)
    assert (checked, code) == (exit_codes.OK, exit_codes.OK), run_err
    assert "is valid" in check_err
    assert out.startswith("User: my goal\nAssistant: q1\n")  # the conversation, whole
    assert [body["model"] for body in fake_llm.bodies] == ["summ-mini"]


def test_validate_and_run_agree_when_the_configured_default_strategy_is_summarize(
    tmp_path: Path, state_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(CHAT % PLAIN, encoding="utf-8")
    monkeypatch.setenv("FLUJO_HISTORY__STRATEGY", "summarize")
    monkeypatch.setenv("FLUJO_HISTORY__MAX_TURNS", "4")
    assert_refused_alike(path, CONFIGURED, "9:21")
    # echo: the offline default summarizer (its summary is the request it was sent).
    (checked, _), (code, out, run_err) = both(path, "--set", "history.summarizer_model=echo")
    assert (checked, code) == (exit_codes.OK, exit_codes.OK), run_err
    assert out.startswith("User: my goal\nAssistant: q1\n")  # the conversation, whole
    code, out, _ = flujo(["run", str(path), *ARGS, "--set", "history.summarizer_model=echo", "--json"])
    assert code == exit_codes.OK
    code, trace, _ = flujo(["lens", "trace", json.loads(out)["run_id"], "--json"])
    assert code == exit_codes.OK and json.dumps(f"{SUMMARY}{SUMMARY_REQUEST}")[1:-1] in trace


# --- no summarizer named or configured: the loop's last speaking agent ----------------------------------

SPEAKERS = """\
version: "0.1"
agents:
  first: {model: "openai:first-model", system_prompt: "Ask about the trip."}
  second: {model: "openai:second-model", system_prompt: "Plan the trip.", output_schema: {type: object}}
  script: {python: "tests.support.blueprint_skills:shout"}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      ai_turn_source: %s
      history_management: {strategy: summarize, max_turns: 2}
      body:
%s
"""
TWO_AGENTS = "        - {name: ask, uses: agents.first}\n        - {name: plan, uses: agents.second}"


def test_the_last_speaking_agent_summarizes_with_the_built_in_prompt(tmp_path: Path, fake_llm: FakeLLM) -> None:
    from core import AgentCall

    for source, expected in (
        ("all_agents", "openai:second-model"),
        ("last", "openai:second-model"),
        ("named_steps", "openai:first-model"),
    ):
        text = SPEAKERS % (source, TWO_AGENTS)
        if source == "named_steps":
            text = text.replace("ai_turn_source: named_steps", "ai_turn_source: named_steps\n      named_steps: [ask]")
        path = tmp_path / "flow.yaml"
        path.write_text(text, encoding="utf-8")
        assert validate_file(path) == [], source
        [loop] = compile_pipeline(load_blueprint(path), fake_llm.settings()).steps
        assert isinstance(loop, LoopStep) and loop.conversation is not None
        agent = loop.conversation.history.summarizer
        assert agent is not None and agent.model_name == expected, source
        # Without the speaker's system prompt and output schema: the built-in request is all it is sent.
        [message] = agent.prompt(AgentCall(input="the request", step="chat.summarize"))
        assert (message.role, message.content) == ("user", "the request")
    # history.summarizer_prompt, when set, is its system prompt.
    settings = fake_llm.settings(history=HistorySettings(summarizer_prompt="You condense trips."))
    [loop] = compile_pipeline(load_blueprint(path), settings).steps
    assert isinstance(loop, LoopStep) and loop.conversation is not None and loop.conversation.history.summarizer
    sent = loop.conversation.history.summarizer.prompt(AgentCall(input="the request", step="chat.summarize"))
    assert [(m.role, m.content) for m in sent] == [("system", "You condense trips."), ("user", "the request")]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("        - {name: ask, uses: agents.script}", "its last speaking agent 'script' is a script agent"),
        (
            "        - {name: ask, agent: 'tests.support.blueprint_skills:shout'}",
            "its last speaker 'ask' is a script agent",
        ),
    ],
)
def test_a_speaker_that_cannot_summarize_keeps_the_error(tmp_path: Path, body: str, reason: str) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(SPEAKERS % ("last", body), encoding="utf-8")
    [finding] = [f for f in validate_file(path) if f.is_error]
    assert finding.message == "strategy: summarize needs summarizer_agent, and no default summarizer is configured"
    assert finding.hint is not None and finding.hint.startswith(f"{reason}, which cannot summarize; name one in")
    with pytest.raises(BlueprintError) as caught:
        compile_pipeline(
            load_blueprint(path, settings=Settings(history=HistorySettings(summarizer_model="echo"))), Settings()
        )
    assert caught.value.message == finding.message


def test_a_loop_whose_steps_are_sent_no_history_needs_no_summarizer(tmp_path: Path, fake_llm: FakeLLM) -> None:
    body = "        - {name: ask, uses: agents.first, use_history: false}\n        - {kind: hitl, name: answer}"
    path = tmp_path / "flow.yaml"
    path.write_text(SPEAKERS % ("last", body), encoding="utf-8")
    assert [f for f in validate_file(path) if f.is_error] == []
    [loop] = compile_pipeline(load_blueprint(path), fake_llm.settings()).steps
    assert isinstance(loop, LoopStep) and loop.conversation is not None
    assert loop.conversation.history.summarizer is None
