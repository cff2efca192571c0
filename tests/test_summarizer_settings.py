"""The default summarizer of the settings (``history.summarizer_model``, ``history.summarizer_prompt``):
which summarizer a ``summarize`` loop gets, the summary it makes (against the fake OpenAI server on
127.0.0.1), and ``flujo validate`` and ``flujo run`` agreeing on a loop that has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import load_settings
from core.errors import ConfigError
from core.policies.summary import SUMMARY_REQUEST
from core.steps import LoopStep, Pipeline
from tests.fakes.openai_server import FakeLLM
from tests.test_conversation_runs import SUMMARY, compile_text, prompts, run, sent, step_records

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


def test_a_loops_own_summarizer_agent_beats_the_configured_default(tmp_path: Path, fake_llm: FakeLLM) -> None:
    settings = load_settings(cwd=tmp_path, env={**fake_llm.env(), **DEFAULT})
    own = "history_management: {strategy: summarize, summarizer_agent: own, max_turns: 2}"
    assert summarizer(compile_text(tmp_path, CHAT % own, settings)) == "scripted"
    # Another strategy gets no summarizer at all, so the default one is not even built.
    assert summarizer(compile_text(tmp_path, CHAT % PLAIN, settings)) is None


def test_the_default_summarizer_is_built_only_for_a_loop_that_summarizes(tmp_path: Path) -> None:
    # openai:gpt-4o-mini at api.openai.com without OPENAI_API_KEY cannot be built.
    settings = load_settings(cwd=tmp_path, env={"FLUJO_HISTORY__SUMMARIZER_MODEL": "openai:gpt-4o-mini"})
    assert summarizer(compile_text(tmp_path, CHAT % PLAIN, settings)) is None
    summarizing = settings.model_copy(update={"history": settings.history.model_copy(update={"strategy": "summarize"})})
    with pytest.raises(ConfigError) as caught:
        compile_text(tmp_path, CHAT % PLAIN, summarizing)
    assert caught.value.message.startswith(
        f"{tmp_path / 'flow.yaml'}:9:7: the default summarizer (setting history.summarizer_model): "
    )
    assert "OPENAI_API_KEY is not set" in caught.value.message


async def test_the_default_strategy_summarize_uses_the_configured_summarizer(tmp_path: Path, fake_llm: FakeLLM) -> None:
    env = {**fake_llm.env(), **DEFAULT, "FLUJO_HISTORY__STRATEGY": "summarize", "FLUJO_HISTORY__MAX_TURNS": "4"}
    settings = load_settings(cwd=tmp_path, env=env)
    fake_llm.reply("S1").reply("S2")
    pipeline = compile_text(tmp_path, CHAT % PLAIN, settings)
    assert summarizer(pipeline) == "openai:summ-mini"
    outcome, store, _ = await run(pipeline, "my goal", ANSWERS)
    assert outcome.status == "completed", outcome.error
    # The fake server was asked for the summaries: the configured model, its prompt, then the request.
    assert len(fake_llm.bodies) == 2
    body = fake_llm.bodies[0]
    assert body["model"] == "summ-mini"
    assert body["messages"][0] == {"role": "system", "content": "You condense conversations."}
    assert body["messages"][1]["role"] == "user" and body["messages"][1]["content"].startswith(SUMMARY_REQUEST)
    assert "my goal" in body["messages"][1]["content"]
    records = await step_records(store, outcome.run_id)
    summaries = [records[p] for p in records if p.endswith("/summarize")]
    assert [s.output for s in summaries] == ["S1", "S2"]
    # The next call is sent the summary as the first turn.
    first = summaries[0].path.removesuffix("/summarize")
    assert sent((await prompts(store, outcome.run_id))[first])[0] == ("assistant", f"{SUMMARY}S1")
    assert outcome.usage.requests == 4 + 2  # the bot's calls and the summarizer's
