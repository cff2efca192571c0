"""The OpenAI-compatible agent over real HTTP, against the fake server on 127.0.0.1."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from core import AgentOutputError, ConfigError, ProviderError, ProviderUnreachable, ReplyCutOff
from core.agents import AgentSpec, Backoff, OpenAIChatAgent, build_agent
from core.model.calls import AgentCall, ChatMessage, Retry
from core.settings.config import ProviderSettings, Settings, load_settings
from tests.support.fakes.openai_server import FAKE_API_KEY, Cut, FakeLLM

FAST = Backoff(base_delay=0.001, max_delay=0.05)
SCHEMA = {
    "type": "object",
    "properties": {"action": {"type": "string"}, "question": {"type": "string"}},
    "required": ["action"],
}


def make(fake: FakeLLM, settings: Settings | None = None, **spec: Any) -> Any:
    spec.setdefault("model", "openai:gpt-4o-mini")
    return build_agent(AgentSpec(name="clarifier", **spec), settings or fake.settings(), backoff=FAST)


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


async def test_system_prompt_history_and_input_arrive_in_the_request(fake_llm: FakeLLM) -> None:
    fake_llm.reply("What is the deadline?", usage=(21, 6))
    agent = make(fake_llm, system_prompt="Ask one question.", model_settings={"temperature": 0.2, "max_tokens": 50})
    history = (ChatMessage("user", "I want a website"), ChatMessage("assistant", "For what?"))
    call = AgentCall(input="For my bakery", step="clarify", history=history)

    reply = await agent.run(call)

    assert isinstance(agent, OpenAIChatAgent)
    assert agent.label == "openai:gpt-4o-mini" and agent.is_model
    body = fake_llm.last.body
    assert fake_llm.last.path == "/v1/chat/completions"
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == [
        {"role": "system", "content": "Ask one question."},
        {"role": "user", "content": "I want a website"},
        {"role": "assistant", "content": "For what?"},
        {"role": "user", "content": "For my bakery"},
    ]
    assert body["messages"] == [m.to_dict() for m in agent.prompt(call)]
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50
    assert "stream" not in body and "response_format" not in body
    assert fake_llm.last.headers["authorization"] == f"Bearer {FAKE_API_KEY}"
    assert reply.output == "What is the deadline?"
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.requests) == (21, 6, 1)
    assert reply.model == "gpt-4o-mini" and reply.attempts == 1


async def test_worked_examples_are_sent_as_turns_between_the_system_prompt_and_the_history(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Madrid.")
    agent = make(fake_llm, system_prompt="Be brief.", examples=(("Capital of Italy?", "Rome."),))
    history = (ChatMessage("user", "Capital of France?"), ChatMessage("assistant", "Paris."))

    await agent.run(AgentCall(input="And of Spain?", step="chat", history=history))

    assert fake_llm.last.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of Italy?"},
        {"role": "assistant", "content": "Rome."},
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Spain?"},
    ]


async def test_non_text_input_is_sent_as_json_and_json_text_is_not_parsed(fake_llm: FakeLLM) -> None:
    fake_llm.reply('{"action": "finish"}')
    reply = await make(fake_llm).run(AgentCall(input={"topic": "café", "n": 2}, step="s"))
    assert fake_llm.last.body["messages"] == [{"role": "user", "content": '{"topic": "café", "n": 2}'}]
    assert reply.output == '{"action": "finish"}'


async def test_model_settings_cannot_override_what_the_agent_sends(fake_llm: FakeLLM) -> None:
    await make(fake_llm, model_settings={"model": "other", "stream": True, "top_p": 0.5}).run(
        AgentCall(input="hi", step="s")
    )
    body = fake_llm.last.body
    assert body["model"] == "gpt-4o-mini" and "stream" not in body and body["top_p"] == 0.5


async def test_streaming_sends_deltas_in_order_and_counts_usage(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Hello there, baker", usage=(30, 4), chunks=["Hel", "lo there", ", ", "baker"])
    deltas: list[str] = []
    reply = await make(fake_llm).run(AgentCall(input="hi", step="s", on_text=deltas.append))
    assert deltas == ["Hel", "lo there", ", ", "baker"]
    assert reply.output == "Hello there, baker"
    assert fake_llm.last.body["stream"] is True
    assert fake_llm.last.body["stream_options"] == {"include_usage": True}
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (30, 4)
    assert reply.usage.cost_usd == pytest.approx((30 * 0.15 + 4 * 0.60) / 1e6)


async def test_retries_on_429_and_500_then_succeeds(fake_llm: FakeLLM) -> None:
    fake_llm.fail(429, retry_after=0).fail(500).reply("finally")
    reply = await make(fake_llm, max_retries=2).run(AgentCall(input="hi", step="s"))
    assert reply.output == "finally" and reply.attempts == 3
    assert len(fake_llm.requests) == 3


async def test_retries_stop_after_max_retries(fake_llm: FakeLLM) -> None:
    fake_llm.fail(500, message="upstream exploded", times=3).reply("never")
    with pytest.raises(ProviderError) as caught:
        await make(fake_llm, max_retries=2).run(AgentCall(input="hi", step="s"))
    assert caught.value.status == 500 and "upstream exploded" in caught.value.message
    assert len(fake_llm.requests) == 3


async def test_provider_max_retries_applies_when_the_agent_sets_none(fake_llm: FakeLLM) -> None:
    fake_llm.fail(500, times=4).reply("finally")
    settings = fake_llm.settings()
    settings.openai.max_retries = 4
    reply = await make(fake_llm, settings).run(AgentCall(input="hi", step="s"))
    assert reply.output == "finally" and reply.attempts == 5


async def test_the_agents_own_max_retries_wins_over_the_provider_setting(fake_llm: FakeLLM) -> None:
    fake_llm.fail(500, times=4).reply("never")
    settings = fake_llm.settings()
    settings.openai.max_retries = 4
    with pytest.raises(ProviderError):
        await make(fake_llm, settings, max_retries=1).run(AgentCall(input="hi", step="s"))
    assert len(fake_llm.requests) == 2


async def test_max_retries_from_the_environment_reaches_a_blueprint_agent(fake_llm: FakeLLM, tmp_path: Path) -> None:
    from blueprints.compiling.agents import agent_spec
    from blueprints.schema import AgentModel

    env = {**fake_llm.env(), "FLUJO_OPENAI__MAX_RETRIES": "3"}
    settings = load_settings(cwd=tmp_path, env=env)
    spec = agent_spec("bot", AgentModel(model="openai:gpt-4o-mini"))  # the blueprint sets no max_retries
    assert spec.max_retries is None
    fake_llm.fail(503, times=3).reply("ok")
    reply = await build_agent(spec, settings, backoff=FAST).run(AgentCall(input="hi", step="s"))
    assert reply.output == "ok" and reply.attempts == 4


async def test_provider_timeout_applies_unless_the_agent_sets_one(fake_llm: FakeLLM) -> None:
    settings = fake_llm.settings()
    settings.openai.timeout_s = 0.2
    fake_llm.reply("too late", delay=3)
    with pytest.raises(ProviderError, match=r"did not answer within 0\.2s"):
        await make(fake_llm, settings, max_retries=0).run(AgentCall(input="hi", step="s"))
    settings.openai.timeout_s = 0.1
    fake_llm.reply("in time", delay=0.3)
    reply = await make(fake_llm, settings, timeout=5, max_retries=0).run(AgentCall(input="hi", step="s"))
    assert reply.output == "in time"


async def test_retry_after_is_honoured(fake_llm: FakeLLM) -> None:
    fake_llm.fail(429, retry_after=0.3).reply("ok")
    agent = build_agent(
        AgentSpec(name="a", model="openai:gpt-4o-mini"), fake_llm.settings(), backoff=Backoff(0.001, 5.0)
    )
    started = time.monotonic()
    assert (await agent.run(AgentCall(input="hi", step="s"))).output == "ok"
    assert time.monotonic() - started >= 0.3


async def test_streaming_retries_before_the_first_delta(fake_llm: FakeLLM) -> None:
    fake_llm.fail(503).reply("streamed")
    deltas: list[str] = []
    reply = await make(fake_llm).run(AgentCall(input="hi", step="s", on_text=deltas.append))
    assert "".join(deltas) == "streamed" and reply.attempts == 2


PARTS = ["Reply 2 part one, ", "part two."]


@pytest.mark.parametrize("cut", ["end", "broken"])
async def test_a_stream_cut_after_one_chunk_is_a_failed_attempt_and_the_retry_streams_anew(
    fake_llm: FakeLLM, cut: Cut
) -> None:
    # The role chunk and the first delta, then the connection closes (``end``: no finish_reason, no [DONE])
    # or breaks (``broken``: an incomplete chunked body).
    fake_llm.reply("".join(PARTS), chunks=PARTS, cut_after=2, cut=cut).reply("".join(PARTS), chunks=PARTS)
    deltas: list[str] = []
    heard: list[Retry] = []
    call = AgentCall(input="hi", step="s", on_text=deltas.append, on_retry=heard.append)
    reply = await make(fake_llm, max_retries=2).run(call)
    assert reply.output == "Reply 2 part one, part two." and reply.attempts == 2
    assert deltas == ["Reply 2 part one, ", "Reply 2 part one, ", "part two."]  # the retry streamed anew
    assert [(r.attempt, r.attempts, r.cut) for r in heard] == [(2, 3, "Reply 2 part one, ")]
    expected = "the stream ended before its end marker" if cut == "end" else "the connection broke: "
    assert heard[0].reason.startswith(expected)


async def test_a_reset_connection_mid_stream_is_retried(fake_llm: FakeLLM) -> None:
    fake_llm.reply("".join(PARTS), chunks=PARTS, cut_after=2, cut="reset").reply("".join(PARTS), chunks=PARTS)
    heard: list[Retry] = []
    call = AgentCall(input="hi", step="s", on_text=lambda text: None, on_retry=heard.append)
    reply = await make(fake_llm, max_retries=1).run(call)
    # What arrived before the reset may be lost with it (a reset drops what the client had not read), so only
    # the retry is certain, not the text it carries.
    assert reply.output == "Reply 2 part one, part two." and reply.attempts == 2 and len(heard) == 1


async def test_a_reply_cut_off_at_every_attempt_is_reply_cut_off_naming_agent_text_and_attempts(
    fake_llm: FakeLLM,
) -> None:
    for _ in range(3):
        fake_llm.reply("".join(PARTS), chunks=PARTS, cut_after=2, cut="end")
    with pytest.raises(ReplyCutOff) as caught:
        await make(fake_llm, max_retries=2).run(AgentCall(input="hi", step="s", on_text=lambda text: None))
    error = caught.value
    assert isinstance(error, ProviderError)  # exit 6, as any provider failure
    assert (error.received, error.attempts, error.reason) == (
        "Reply 2 part one, ",
        3,
        "the stream ended before its end marker",
    )
    assert re.fullmatch(
        rf"agents\.clarifier \(openai:gpt-4o-mini\): the reply from {re.escape(fake_llm.openai_url)} was cut off "
        r"after 18 characters \('Reply 2 part one,'\): the stream ended before its end marker "
        r"\(3 attempts over \d+\.\d s\)",
        error.message,
    )
    assert len(fake_llm.requests) == 3


async def test_a_whole_stream_without_its_end_marker_is_cut_off(fake_llm: FakeLLM) -> None:
    fake_llm.reply("All of it.", end_marker=False)
    with pytest.raises(ReplyCutOff) as caught:
        await make(fake_llm, max_retries=0).run(AgentCall(input="hi", step="s", on_text=lambda text: None))
    assert caught.value.received == "All of it." and caught.value.attempts == 1
    assert "attempts" not in caught.value.message


@pytest.mark.parametrize(
    ("finish_reason", "done"), [("stop", False), (None, True), ("length", False), ("length", True)]
)
async def test_a_finish_reason_or_done_ends_a_stream_and_length_is_a_whole_reply(
    fake_llm: FakeLLM, finish_reason: str | None, done: bool
) -> None:
    fake_llm.reply("Capped here", finish_reason=finish_reason, done=done)
    deltas: list[str] = []
    reply = await make(fake_llm, max_retries=0).run(AgentCall(input="hi", step="s", on_text=deltas.append))
    assert reply.output == "Capped here" and "".join(deltas) == "Capped here" and reply.attempts == 1


async def test_401_is_a_provider_error_with_a_key_hint_and_no_retry(fake_llm: FakeLLM) -> None:
    fake_llm.fail(401, message="Incorrect API key provided")
    with pytest.raises(ProviderError) as caught:
        await make(fake_llm, max_retries=3).run(AgentCall(input="hi", step="s"))
    assert caught.value.status == 401
    assert "Incorrect API key provided" in caught.value.message
    assert caught.value.hint is not None and "OPENAI_API_KEY" in caught.value.hint
    assert len(fake_llm.requests) == 1


async def test_other_4xx_fails_at_once_with_the_provider_message(fake_llm: FakeLLM) -> None:
    fake_llm.fail(400, message="max_tokens is too large")
    with pytest.raises(ProviderError, match="max_tokens is too large") as caught:
        await make(fake_llm, max_retries=3).run(AgentCall(input="hi", step="s"))
    assert caught.value.status == 400 and len(fake_llm.requests) == 1


async def test_unreachable_port_is_provider_unreachable() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    agent = build_agent(
        AgentSpec(name="a", model="openai:gpt-4o-mini", base_url=url, max_retries=1), Settings(), backoff=FAST
    )
    with pytest.raises(ProviderUnreachable) as caught:
        await agent.run(AgentCall(input="hi", step="s"))
    assert caught.value.message.startswith(f"cannot reach {url} for openai:gpt-4o-mini: ")
    assert caught.value.hint == "is the server running? check OPENAI_BASE_URL / flujo.toml"


async def test_slow_server_times_out_as_provider_error(fake_llm: FakeLLM) -> None:
    fake_llm.reply("too late", delay=3)
    with pytest.raises(ProviderError, match=r"did not answer within 0\.2s") as caught:
        await make(fake_llm, timeout=0.2, max_retries=0).run(AgentCall(input="hi", step="s"))
    assert not isinstance(caught.value, ProviderUnreachable)


async def test_structured_output_is_requested_parsed_and_validated(fake_llm: FakeLLM) -> None:
    fake_llm.reply({"action": "ask", "question": "When?"})
    deltas: list[str] = []
    reply = await make(fake_llm, output_schema=SCHEMA).run(AgentCall(input="hi", step="s", on_text=deltas.append))
    assert reply.output == {"action": "ask", "question": "When?"}
    body = fake_llm.last.body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": SCHEMA},
    }
    assert "stream" not in body and deltas == []
    assert body["messages"] == [{"role": "user", "content": "hi"}]  # the schema travels in response_format


async def test_structured_output_is_repaired_once(fake_llm: FakeLLM) -> None:
    fake_llm.reply("Sure! Here you go", usage=(10, 4)).reply('```json\n{"action": "finish"}\n```', usage=(20, 3))
    reply = await make(fake_llm, output_schema=SCHEMA).run(AgentCall(input="hi", step="s"))
    assert reply.output == {"action": "finish"}
    assert reply.attempts == 2
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.requests) == (30, 7, 2)
    repair = fake_llm.last.body["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Sure! Here you go"}
    assert repair[-1]["role"] == "user" and "not valid JSON" in repair[-1]["content"]
    assert reply.repair is not None
    assert reply.repair.first_reply == "Sure! Here you go" and reply.repair.request == repair[-1]["content"]
    assert reply.repair.second_reply == '```json\n{"action": "finish"}\n```'
    assert reply.repair.error.startswith("the reply is not valid JSON")


async def test_structured_output_that_stays_invalid_is_an_agent_output_error(fake_llm: FakeLLM) -> None:
    fake_llm.reply({"question": "no action"}, usage=(10, 4)).reply({"action": 3}, usage=(20, 3))
    with pytest.raises(AgentOutputError) as caught:
        await make(fake_llm, output_schema=SCHEMA).run(AgentCall(input="hi", step="s"))
    assert "agents.clarifier (openai:gpt-4o-mini)" in caught.value.message
    assert "at action: 3 is not of type 'string'" in caught.value.message
    assert len(fake_llm.requests) == 2
    assert "'action' is a required property" in fake_llm.last.body["messages"][-1]["content"]
    usage = caught.value.usage  # both exchanges were paid for
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (30, 7, 2)
    assert usage.cost_usd == pytest.approx((30 * 0.15 + 7 * 0.60) / 1e6)
    repair = caught.value.repair
    assert repair is not None
    assert (repair.first_reply, repair.second_reply) == ('{"question": "no action"}', '{"action": 3}')
    assert repair.request == fake_llm.last.body["messages"][-1]["content"]


async def test_json_object_mode_puts_the_schema_in_the_system_prompt(fake_llm: FakeLLM) -> None:
    fake_llm.reply({"action": "finish"})
    settings = fake_llm.settings()
    settings.openai.structured_output = "json_object"
    agent = make(fake_llm, settings, output_schema=SCHEMA, system_prompt="Be brief.")
    assert (await agent.run(AgentCall(input="hi", step="s"))).output == {"action": "finish"}
    body = fake_llm.last.body
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\n")
    assert '"required": ["action"]' in system["content"]


async def test_cost_comes_from_the_price_table_and_is_none_when_unknown(fake_llm: FakeLLM) -> None:
    fake_llm.reply("a", usage=(1_000_000, 2_000_000)).reply("b", usage=(1000, 1000))
    priced = await make(fake_llm).run(AgentCall(input="hi", step="s"))
    assert priced.usage.cost_usd == pytest.approx(0.15 + 2 * 0.60)
    unpriced = await make(fake_llm, model="openai:my-finetune").run(AgentCall(input="hi", step="s"))
    assert unpriced.usage.cost_usd is None and unpriced.usage.input_tokens == 1000


def test_missing_openai_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        build_agent(AgentSpec(name="clarifier", model="openai:gpt-4o-mini"), Settings())
    assert caught.value.message == "agents.clarifier uses openai:gpt-4o-mini but OPENAI_API_KEY is not set"


async def test_a_missing_key_can_wait_for_the_first_call(fake_llm: FakeLLM) -> None:
    """For a replay (flujo test): the agent is built, prompts are made, and only a real call needs the key."""
    agent = build_agent(
        AgentSpec(name="clarifier", model="openai:gpt-4o-mini", system_prompt="Be brief."),
        Settings(),
        defer_missing_key=True,
    )
    assert [m.role for m in agent.prompt(AgentCall(input="hi", step="s"))] == ["system", "user"]
    with pytest.raises(ConfigError) as caught:
        await agent.run(AgentCall(input="hi", step="s"))
    assert caught.value.message == "agents.clarifier uses openai:gpt-4o-mini but OPENAI_API_KEY is not set"
    assert fake_llm.requests == []
    assert caught.value.hint == (
        "export OPENAI_API_KEY=..., point OPENAI_BASE_URL at a local OpenAI-compatible server, "
        "or use model: scripted for an offline run"
    )


async def test_local_openai_compatible_server_needs_no_key(fake_llm: FakeLLM) -> None:
    settings = Settings(openai=ProviderSettings(base_url=fake_llm.openai_url))
    reply = await build_agent(AgentSpec(name="a", model="openai:local"), settings).run(AgentCall(input="x", step="s"))
    assert reply.output == "echo: x"
    assert "authorization" not in fake_llm.last.headers


async def test_ollama_needs_no_key_and_uses_json_object(fake_llm: FakeLLM) -> None:
    settings = Settings(ollama=ProviderSettings(base_url=fake_llm.openai_url))
    fake_llm.reply('{"action": "finish"}')
    agent = build_agent(AgentSpec(name="a", model="ollama:llama3.2", output_schema=SCHEMA), settings)
    assert agent.label == "ollama:llama3.2"
    reply = await agent.run(AgentCall(input="x", step="s"))
    assert reply.output == {"action": "finish"} and reply.usage.cost_usd is None
    assert fake_llm.last.body["model"] == "llama3.2"
    assert fake_llm.last.body["response_format"] == {"type": "json_object"}
    assert "authorization" not in fake_llm.last.headers


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("mistral:large", "unknown model provider 'mistral'"),
        ("gpt-4o", "unknown model provider 'gpt-4o'"),
        ("openai:", "names no model"),
    ],
)
def test_bad_model_strings_are_config_errors(model: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as caught:
        build_agent(AgentSpec(name="a", model=model), Settings())
    assert caught.value.hint is not None
    if "unknown" in expected:
        assert "openai:<model>, anthropic:<model>, ollama:<model>, local, local:<file.gguf>, scripted, echo" in (
            caught.value.hint
        )
    if model == "gpt-4o":
        assert caught.value.hint.startswith("did you mean openai:gpt-4o?")


def test_base_url_without_scheme_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not an http"):
        build_agent(AgentSpec(name="a", model="openai:m", base_url="localhost:8000/v1"), Settings())


def test_invalid_output_schema_is_a_config_error(fake_llm: FakeLLM) -> None:
    with pytest.raises(ConfigError, match="invalid output_schema"):
        make(fake_llm, output_schema={"type": "objekt"})


def test_backoff_grows_exponentially_and_is_capped() -> None:
    backoff = Backoff(base_delay=0.5, max_delay=4.0)
    assert [backoff.delay(n, None) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert backoff.delay(1, 0.0) == 0.0 and backoff.delay(1, 100.0) == 4.0  # Retry-After wins, capped


def test_sse_parser_handles_comments_event_names_and_multiline_data() -> None:
    from core.agents.http import SSEEvent, SSEParser

    parser = SSEParser()
    lines = [": keep-alive", "event: delta", 'data: {"a":', "data: 1}", "", "data: [DONE]", ""]
    events = [event for line in lines if (event := parser.feed(line)) is not None]
    assert events == [SSEEvent("delta", '{"a":\n1}'), SSEEvent(None, "[DONE]")]
    assert parser.flush() is None


async def test_calls_make_no_tls_context_where_none_is_spoken(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpx makes a TLS context for each client it builds, reading the CA bundle (50-85 ms of CPU here), and
    each call builds a client. A plain-HTTP server reached without a proxy (here the fake; a local model,
    Ollama) speaks no TLS: its clients get none (core/agents/http.py)."""
    import httpx

    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    given: list[object] = []
    real_init = httpx.AsyncClient.__init__

    def recording(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
        given.append(kwargs.get("verify"))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "__init__", recording)
    agent = make(fake_llm)
    for n in range(3):
        fake_llm.reply(f"reply {n}")
        assert (await agent.run(AgentCall(input=f"message {n}", step="s"))).output == f"reply {n}"
    assert given == [False, False, False]


def test_tls_is_verified_with_one_context_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTPS, or plain HTTP through a proxy (which may be HTTPS): httpx's default verification, made once."""
    import ssl

    from core.agents.http import _verify, tls_context

    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    context = _verify("https://api.openai.com/v1")
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED
    assert _verify("https://api.anthropic.com") is context is tls_context()
    assert _verify("http://127.0.0.1:8080/v1") is False
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.example:3128")
    assert _verify("http://127.0.0.1:8080/v1") is context
