"""What agent calls cost in a run: unknown prices, failed calls and repair exchanges, against the fake server."""

from __future__ import annotations

from typing import Any

import pytest

from core import ZERO_USAGE, Agent, AgentOutputError, AgentStep, Engine, Limits, ParallelStep, Pipeline, Settings, Usage
from core.agents import AgentSpec, Backoff, build_agent
from core.store import MemoryStore
from core.text.redaction import MASK, Redactor
from tests.support.fakes.openai_server import FakeLLM

FAST = Backoff(base_delay=0.001, max_delay=0.05)
SECRET_KEY = "sk-" + "Zq7" * 16


def agent(fake: FakeLLM, model: str = "openai:gpt-4o-mini", **spec: Any) -> Agent:
    return build_agent(AgentSpec(name="bot", model=model, **spec), fake.settings(), backoff=FAST)


def test_an_unknown_cost_stays_unknown_when_added() -> None:
    priced, unpriced, offline = Usage(1, 1, 1, 0.25), Usage(1, 1, 1, None), Usage(requests=1, cost_usd=0.0)
    assert (ZERO_USAGE + unpriced).cost_usd is None
    assert (priced + unpriced).cost_usd is None and (unpriced + priced).cost_usd is None
    assert (priced + offline).cost_usd == 0.25
    assert (offline + offline).cost_usd == 0.0


async def test_a_run_that_calls_an_unpriced_model_has_an_unknown_cost(fake_llm: FakeLLM) -> None:
    fake_llm.reply("a", usage=(100, 10)).reply("b", usage=(100, 10))
    store = MemoryStore()
    pipeline = Pipeline(
        steps=(
            AgentStep(name="priced", agent=agent(fake_llm)),
            AgentStep(name="unpriced", agent=agent(fake_llm, "openai:my-finetune")),
        )
    )
    outcome = await Engine(store=store, redactor=Redactor()).run(pipeline, "hi")
    assert outcome.status == "completed"
    assert outcome.usage.cost_usd is None and outcome.usage.total_tokens == 220
    costs = {step.name: step.usage.cost_usd for step in await store.steps(outcome.run_id)}
    assert costs["priced"] == pytest.approx((100 * 0.15 + 10 * 0.60) / 1e6) and costs["unpriced"] is None
    stored = await store.get_run(outcome.run_id)
    assert stored is not None and stored.usage.cost_usd is None


async def test_an_offline_run_costs_exactly_zero() -> None:
    scripted = build_agent(AgentSpec(name="bot", model="scripted", replies=("x",)), Settings())
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(
        Pipeline(steps=(AgentStep(name="a", agent=scripted), AgentStep(name="b", agent=scripted)))
    )
    assert outcome.usage.cost_usd == 0.0 and outcome.usage.requests == 2


async def test_the_cost_limit_still_holds_against_the_priced_calls(fake_llm: FakeLLM) -> None:
    fake_llm.reply("free?", usage=(10, 10)).reply("dear", usage=(1_000_000, 0))
    pipeline = Pipeline(
        steps=(
            AgentStep(name="unpriced", agent=agent(fake_llm, "openai:my-finetune")),
            AgentStep(name="priced", agent=agent(fake_llm)),
            AgentStep(name="never", agent=agent(fake_llm)),
        ),
        limits=Limits(max_cost_usd=0.1),
    )
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(pipeline, "hi")
    assert outcome.status == "limit_reached"
    assert outcome.detail == (
        "cost limit reached: at least $0.1500 spent (a model without a price was called too), limit is $0.1000"
    )
    assert len(fake_llm.requests) == 2


SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}


async def test_a_call_whose_output_stays_invalid_still_counts_both_exchanges(fake_llm: FakeLLM) -> None:
    fake_llm.reply("no JSON here", usage=(10, 4)).reply({"action": 3}, usage=(20, 3))
    store = MemoryStore()
    pipeline = Pipeline(steps=(AgentStep(name="decide", agent=agent(fake_llm, output_schema=SCHEMA)),))
    outcome = await Engine(store=store, redactor=Redactor()).run(pipeline, "hi")

    assert outcome.status == "failed" and isinstance(outcome.error, AgentOutputError)
    assert outcome.failed_step == "decide"
    expected = Usage(30, 7, 2, (30 * 0.15 + 7 * 0.60) / 1e6)
    [step] = await store.steps(outcome.run_id)
    assert step.status == "failed" and step.usage == expected
    assert outcome.usage == expected
    stored = await store.get_run(outcome.run_id)
    assert stored is not None and stored.usage == expected


async def test_a_failed_call_over_the_limit_still_fails_with_its_own_error(fake_llm: FakeLLM) -> None:
    fake_llm.reply("no JSON here", usage=(10, 4)).reply({"action": 3}, usage=(20, 3))
    pipeline = Pipeline(
        steps=(AgentStep(name="decide", agent=agent(fake_llm, output_schema=SCHEMA)),), limits=Limits(max_tokens=20)
    )
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(pipeline, "hi")
    assert outcome.status == "failed" and isinstance(outcome.error, AgentOutputError)
    assert outcome.usage.total_tokens == 37


async def test_the_repair_exchange_is_traced_and_redacted(fake_llm: FakeLLM) -> None:
    fake_llm.reply(f"Sure, here is the key {SECRET_KEY}", usage=(10, 4)).reply({"action": "ask"}, usage=(20, 3))
    store = MemoryStore()
    pipeline = Pipeline(steps=(AgentStep(name="decide", agent=agent(fake_llm, output_schema=SCHEMA)),))
    outcome = await Engine(store=store, redactor=Redactor()).run(pipeline, "hi")

    assert outcome.status == "completed" and outcome.output == {"action": "ask"}
    events = await store.events(outcome.run_id)
    # agent.call: journaled before the call is sent (docs/durability.md)
    assert [event.kind for event in events] == ["agent.call", "agent.prompt", "agent.repair", "agent.reply"]
    repair = events[2].payload
    assert repair["first_reply"] == f"Sure, here is the key {MASK}"
    assert repair["error"].startswith("the reply is not valid JSON")
    assert repair["request"] == fake_llm.last.body["messages"][-1]["content"]
    assert repair["second_reply"] == '{"action": "ask"}'


async def test_the_repair_exchange_of_a_failed_call_is_traced(fake_llm: FakeLLM) -> None:
    fake_llm.reply("no JSON here").reply({"action": 3})
    store = MemoryStore()
    pipeline = Pipeline(steps=(AgentStep(name="decide", agent=agent(fake_llm, output_schema=SCHEMA)),))
    outcome = await Engine(store=store, redactor=Redactor()).run(pipeline, "hi")

    assert outcome.status == "failed"
    events = await store.events(outcome.run_id)
    assert [event.kind for event in events] == ["agent.call", "agent.prompt", "agent.repair", "step.error"]
    assert events[2].payload["first_reply"] == "no JSON here"
    assert events[2].payload["second_reply"] == '{"action": 3}'
    assert "3 is not of type 'string'" in events[3].payload["error"]


def test_a_call_estimate_prices_the_prompt_and_the_reply_cap(fake_llm: FakeLLM) -> None:
    assert agent(fake_llm).estimate_cost_usd(1000) == pytest.approx(1000 * 0.15 / 1e6)
    capped = agent(fake_llm, model_settings={"max_tokens": 500})
    assert capped.estimate_cost_usd(1000) == pytest.approx((1000 * 0.15 + 500 * 0.60) / 1e6)
    assert agent(fake_llm, "openai:my-finetune").estimate_cost_usd(1000) is None
    scripted = build_agent(AgentSpec(name="bot", model="scripted", replies=("x",)), Settings())
    assert scripted.estimate_cost_usd(1000) == 0.0


async def test_a_call_that_could_overrun_the_cost_limit_is_never_made(fake_llm: FakeLLM) -> None:
    fake_llm.reply("first", usage=(600_000, 0)).reply("second", usage=(10, 10))
    store = MemoryStore()
    pipeline = Pipeline(
        steps=(
            AgentStep(name="cheap", agent=agent(fake_llm)),
            AgentStep(name="long_answer", agent=agent(fake_llm, model_settings={"max_tokens": 100_000})),
        ),
        limits=Limits(max_cost_usd=0.1),
    )
    outcome = await Engine(store=store, redactor=Redactor()).run(pipeline, "hi")

    assert outcome.status == "limit_reached"
    assert outcome.detail is not None and outcome.detail.startswith(
        "cost limit reached before calling 'long_answer': the call may cost up to $0.0600 and "
        "$0.0900 of the $0.1000 allowed are spent"
    )
    assert len(fake_llm.requests) == 1  # the second call was refused before it was sent
    [done] = await store.steps(outcome.run_id)
    assert done.name == "cheap" and done.output == "first"  # what was produced is kept


async def test_a_call_within_the_cost_limit_goes_ahead(fake_llm: FakeLLM) -> None:
    fake_llm.reply("first", usage=(10, 10)).reply("second", usage=(10, 10))
    pipeline = Pipeline(
        steps=(
            AgentStep(name="a", agent=agent(fake_llm)),
            AgentStep(name="b", agent=agent(fake_llm, model_settings={"max_tokens": 1000})),
        ),
        limits=Limits(max_cost_usd=0.1),
    )
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(pipeline, "hi")
    assert outcome.status == "completed" and outcome.output == "second"


def parallel_of(fake: FakeLLM, branches: int, limits: Limits, **spec: Any) -> Pipeline:
    return Pipeline(
        steps=(
            ParallelStep(
                name="p",
                branches=tuple(
                    (f"b{n}", (AgentStep(name=f"s{n}", agent=agent(fake, **spec)),)) for n in range(branches)
                ),
            ),
        ),
        limits=limits,
    )


async def test_parallel_calls_hold_their_reservation_so_together_they_cannot_overrun_the_cost_limit(
    fake_llm: FakeLLM,
) -> None:
    for _ in range(4):  # each call costs $0.045; the delay makes the four calls overlap if they all start
        fake_llm.reply("x", usage=(100_000, 50_000), delay=0.2)
    # Each call may cost up to $0.03 (its reply cap at the output price): one fits in $0.05, two do not.
    pipeline = parallel_of(fake_llm, 4, Limits(max_cost_usd=0.05), model_settings={"max_tokens": 50_000})
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(pipeline, "hi")

    assert outcome.status == "limit_reached"
    assert len(fake_llm.requests) == 1  # the other branches were refused while the first call held $0.03
    assert outcome.usage.cost_usd == pytest.approx(0.045)
    assert outcome.detail == (
        "cost limit reached before calling 's1': the call may cost up to $0.0300 and $0.0000 of the $0.0500 "
        "allowed are spent, and $0.0300 more is held by calls in flight "
        "(when the calls running at the same time ended: 150000 tokens used, $0.0450 spent)"
    )


async def test_the_token_reservation_holds_the_reply_cap_too(fake_llm: FakeLLM) -> None:
    fake_llm.reply("x", usage=(10, 10), delay=0.2).reply("y", usage=(10, 10))
    pipeline = parallel_of(fake_llm, 2, Limits(max_tokens=700), model_settings={"max_tokens": 500})
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(pipeline, "hi")

    assert outcome.status == "limit_reached" and len(fake_llm.requests) == 1
    assert outcome.detail is not None
    prompt = fake_llm.requests[0].body["messages"]
    assert len(prompt) == 1
    assert outcome.detail.startswith("token limit reached before calling 's1': its prompt needs about ")
    assert " tokens and its reply up to 500 and 0 of the 700 allowed are used, and " in outcome.detail
    assert outcome.detail.endswith(
        "more are held by calls in flight (when the calls running at the same time ended: 20 tokens used)"
    )


async def test_a_failed_call_gives_its_reservation_back(fake_llm: FakeLLM) -> None:
    fake_llm.fail(400, message="bad request").reply("fine", usage=(10, 10))
    pipeline = Pipeline(
        steps=(
            ParallelStep(
                name="p",
                branches=(("b0", (AgentStep(name="bad", agent=agent(fake_llm, model_settings={"max_tokens": 500})),)),),
                on_branch_failure="ignore",
            ),
            AgentStep(name="after", agent=agent(fake_llm, model_settings={"max_tokens": 500})),
        ),
        limits=Limits(max_tokens=700),
    )
    outcome = await Engine(store=MemoryStore(), redactor=Redactor()).run(pipeline, "hi")
    # Had the failed call kept its ~510 tokens, the next call (also ~510) would have been refused.
    assert outcome.status == "completed", outcome.detail
    assert outcome.output == "fine"
