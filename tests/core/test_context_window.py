"""The context-window settings and how they bound what an ``openai:`` model is sent.

An agent's prompt budget is its context window minus a reserve for the reply. The window is the agent's own
``context_window``, else the ``models`` table's (built in, or from ``flujo.toml``), else
``default_context_window``; the reserve is the agent's ``model_settings.max_tokens``, else
``response_reserve_tokens``. Each step of that precedence is asserted on ``prompt_budget`` and, against
the fake OpenAI server on 127.0.0.1, on the conversation history a request really carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from core import AgentStep, ChatMessage, LoopStep, load_settings
from core.agents import AgentSpec, build_agent
from core.text.tokens import count_messages
from tests.core.test_conversation_runs import compile_text, run
from tests.support.fakes.openai_server import FakeLLM

MODEL = "openai:local-a"  # not in the built-in models table


def budget(spec: AgentSpec, tmp_path: Path, env: Mapping[str, str], toml: str = "") -> int | None:
    if toml:
        (tmp_path / "flujo.toml").write_text(toml, encoding="utf-8")
    settings = load_settings(cwd=tmp_path, env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", **env})
    return build_agent(spec, settings).prompt_budget


def test_the_built_in_models_table_gives_the_window_of_a_known_model(tmp_path: Path) -> None:
    assert budget(AgentSpec(name="bot", model="openai:gpt-4o"), tmp_path, {}) == 128_000 - 1024
    assert budget(AgentSpec(name="bot", model="openai:gpt-4.1-mini"), tmp_path, {}) == 1_047_576 - 1024


def test_a_model_not_in_the_table_gets_the_default_context_window(tmp_path: Path) -> None:
    spec = AgentSpec(name="bot", model=MODEL)
    assert budget(spec, tmp_path, {}) == 8192 - 1024
    assert budget(spec, tmp_path, {"FLUJO_DEFAULT_CONTEXT_WINDOW": "4000"}) == 4000 - 1024


def test_flujo_toml_adds_a_window_and_changes_a_built_in_one_keeping_its_price(tmp_path: Path) -> None:
    toml = '[models."openai:local-a"]\ncontext_window = 32768\n\n[models."openai:gpt-4o"]\ncontext_window = 16000\n'
    env = {"FLUJO_DEFAULT_CONTEXT_WINDOW": "4000"}  # the table beats the default
    assert budget(AgentSpec(name="bot", model=MODEL), tmp_path, env, toml) == 32768 - 1024
    assert budget(AgentSpec(name="bot", model="openai:gpt-4o"), tmp_path, env) == 16000 - 1024
    settings = load_settings(cwd=tmp_path, env={})
    assert settings.model_info("openai:gpt-4o").input_per_mtok == 2.50


def test_the_agents_own_window_and_reply_cap_win(tmp_path: Path) -> None:
    toml = '[models."openai:local-a"]\ncontext_window = 32768\n'
    env = {"FLUJO_RESPONSE_RESERVE_TOKENS": "500"}
    assert budget(AgentSpec(name="bot", model=MODEL), tmp_path, env, toml) == 32768 - 500
    own = AgentSpec(name="bot", model=MODEL, context_window=2000)
    assert budget(own, tmp_path, env) == 2000 - 500
    capped = AgentSpec(name="bot", model=MODEL, context_window=2000, model_settings={"max_tokens": 300})
    assert budget(capped, tmp_path, env) == 2000 - 300
    # A reply cap as large as the window leaves room for no history, never a budget below 1.
    full = AgentSpec(name="bot", model=MODEL, context_window=2000, model_settings={"max_tokens": 5000})
    assert budget(full, tmp_path, env) == 1


def test_offline_models_are_bounded_only_by_their_own_window(tmp_path: Path) -> None:
    env = {"FLUJO_DEFAULT_CONTEXT_WINDOW": "4000", "FLUJO_RESPONSE_RESERVE_TOKENS": "500"}
    assert budget(AgentSpec(name="bot", model="echo"), tmp_path, env) is None
    assert budget(AgentSpec(name="bot", model="echo", context_window=300), tmp_path, env) == 300
    capped = AgentSpec(name="bot", model="echo", context_window=300, model_settings={"max_tokens": 100})
    assert budget(capped, tmp_path, env) == 200


# --- what a conversation's requests carry ---------------------------------------------------------------

CHAT = """\
version: "0.1"
agents:
  bot: {model: "openai:local-a"%s}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 8
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""
WORDS = "about the journey the family plans for the summer holidays by the sea this year, with two children"
QUESTIONS = [f"Question {n}: tell me more {WORDS}?" for n in range(1, 9)]
ANSWERS = [f"Answer {n}: here is more {WORDS}." for n in range(1, 8)]
# The turns by the 8th request: the seed, then each question and its answer.
CONVERSATION = [("user", "goal")]
for question, answer in zip(QUESTIONS[:-1], ANSWERS, strict=True):
    CONVERSATION += [("assistant", question), ("user", answer)]

WINDOW = {"FLUJO_DEFAULT_CONTEXT_WINDOW": "1424"}
RESERVE = {**WINDOW, "FLUJO_RESPONSE_RESERVE_TOKENS": "1124"}
TABLE = '[models."openai:local-a"]\ncontext_window = 1374\n'


@pytest.mark.parametrize(
    ("env", "toml", "agent", "expected"),
    [
        pytest.param(WINDOW, "", "", 1424 - 1024, id="default_context_window, default reserve"),
        pytest.param(RESERVE, "", "", 1424 - 1124, id="response_reserve_tokens"),
        pytest.param(RESERVE, TABLE, "", 1374 - 1124, id="the models table beats default_context_window"),
        pytest.param(RESERVE, TABLE, ", context_window: 1474", 1474 - 1124, id="the agent's window beats the table"),
        pytest.param(
            RESERVE,
            TABLE,
            ", context_window: 1474, model_settings: {max_tokens: 1149}",
            1474 - 1149,
            id="the agent's max_tokens beats response_reserve_tokens",
        ),
    ],
)
async def test_each_window_setting_bounds_the_history_an_openai_model_is_sent(
    tmp_path: Path, fake_llm: FakeLLM, env: dict[str, str], toml: str, agent: str, expected: int
) -> None:
    if toml:
        (tmp_path / "flujo.toml").write_text(toml, encoding="utf-8")
    settings = load_settings(cwd=tmp_path, env={**fake_llm.env(), **env})
    pipeline = compile_text(tmp_path, CHAT % agent, settings)
    [loop] = pipeline.steps
    assert isinstance(loop, LoopStep) and isinstance(loop.body[0], AgentStep) and loop.body[0].agent is not None
    assert loop.body[0].agent.prompt_budget == expected
    for question in QUESTIONS:
        fake_llm.reply(question)
    outcome, _, _ = await run(pipeline, "goal", ANSWERS)
    assert outcome.status == "paused", outcome.error  # at the 8th question: 8 requests were sent
    bodies = fake_llm.bodies
    assert len(bodies) == 8
    for body in bodies:
        assert size(body["messages"]) <= expected
    # The last request is the newest turns that fit: one more (question, answer) unit would not have.
    last = [(m["role"], m["content"]) for m in bodies[-1]["messages"]]
    assert last[-1] == ("user", ANSWERS[-1])
    history = last[:-1]
    start = len(CONVERSATION) - 1 - len(history)
    assert start > 0 and CONVERSATION[start:-1] == history  # some turns were dropped, the newest kept
    older = CONVERSATION[max(0, start - 2) : start]
    assert size([{"role": r, "content": t} for r, t in [*older, *last]]) > expected
    if "max_tokens" in agent:
        assert bodies[-1]["max_tokens"] == 1149  # the reply cap that was reserved is the one asked for
    else:
        assert "max_tokens" not in bodies[-1]


def size(messages: list[dict[str, Any]]) -> int:
    return count_messages([ChatMessage(m["role"], m["content"]) for m in messages], MODEL)
