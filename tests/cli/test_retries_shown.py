"""Retries of a provider call are shown as they happen, and a call that fails after them says how many
attempts were made and over how long. Against the fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core import ProviderError
from core.agents import AgentSpec, Backoff, build_agent
from core.model.calls import AgentCall, Retry
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo_process
from tests.support.fakes.openai_server import FakeLLM

FAST = Backoff(base_delay=0.001, max_delay=0.05)

BLUEPRINT = """\
version: "0.1"
agents:
  bot:
    model: openai:gpt-4o-mini
    max_retries: 2
steps:
  - {kind: step, name: answer, uses: agents.bot}
"""


async def test_each_retry_is_told_before_it_is_made_and_the_error_counts_the_attempts(fake_llm: FakeLLM) -> None:
    fake_llm.reply("too late", delay=3).reply("too late", delay=3).reply("too late", delay=3)
    agent = build_agent(
        AgentSpec(name="bot", model="openai:gpt-4o-mini", timeout=0.2, max_retries=2), fake_llm.settings(), backoff=FAST
    )
    heard: list[Retry] = []
    with pytest.raises(ProviderError) as caught:
        await agent.run(AgentCall(input="hi", step="answer", on_retry=heard.append))
    assert [(r.attempt, r.attempts, r.reason) for r in heard] == [
        (2, 3, "timed out after 0.2 s"),
        (3, 3, "timed out after 0.2 s"),
    ]
    assert re.search(r"did not answer within 0\.2s .*\(3 attempts over \d+\.\d s\)$", caught.value.message)


async def test_a_single_attempt_is_not_counted(fake_llm: FakeLLM) -> None:
    fake_llm.fail(500, message="upstream exploded")
    agent = build_agent(AgentSpec(name="bot", model="openai:gpt-4o-mini", max_retries=0), fake_llm.settings())
    heard: list[Retry] = []
    with pytest.raises(ProviderError) as caught:
        await agent.run(AgentCall(input="hi", step="answer", on_retry=heard.append))
    assert heard == [] and "attempts" not in caught.value.message


@pytest.mark.slow
def test_the_run_shows_each_retry_and_the_final_error_counts_them(tmp_path: Path, fake_llm: FakeLLM) -> None:
    (tmp_path / "bot.yaml").write_text(BLUEPRINT, encoding="utf-8")
    env = {**fake_llm.env(), "FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    fake_llm.fail(503, message="busy", retry_after=0.01, times=2).reply("done")
    ok = flujo_process(["run", str(tmp_path / "bot.yaml"), "--input", "hi"], env=env)
    assert ok.returncode == exit_codes.OK, ok.stderr
    assert "retrying 'answer' in 0.0 s (attempt 2 of 3): HTTP 503: busy" in ok.stderr
    assert "retrying 'answer' in 0.0 s (attempt 3 of 3): HTTP 503: busy" in ok.stderr

    fake_llm.fail(503, message="busy", retry_after=0.01, times=3)
    failed = flujo_process(["run", str(tmp_path / "bot.yaml"), "--input", "hi"], env=env)
    assert failed.returncode == exit_codes.CONFIG, failed.stderr
    assert failed.stderr.count("retrying 'answer'") == 2
    assert re.search(r"error: run failed at step answer: .*busy \(3 attempts over \d+\.\d s\)", failed.stderr)
