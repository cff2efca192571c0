"""A provider's call whose reply arrived but was never recorded (the process was killed, or the call
cancelled, before its step committed) still counts: it is journaled before it is sent (``agent.call``), a
resumed run counts it as one request of unknown usage, keeps what it may have used charged against the
limits, and lens shows it (docs/durability.md, "At-least-once side effects"). Offline agents journal
nothing. The loopback server holds the reply's stream open once it has sent all of it, so the kill
lands in that window every time."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from blueprints import load_pipeline
from core import (
    INTERRUPTED_CALL,
    Agent,
    AgentStep,
    CallSent,
    Engine,
    HitlStep,
    Limits,
    Pipeline,
    Redactor,
    Settings,
    Template,
    Usage,
)
from core.agents import AgentSpec, Backoff, build_agent
from core.model.codec import dump_usage, load_usage
from core.model.records import RunRecord, RunStatus, StepRecord, TraceEvent, call_interrupted, interrupted_calls
from core.settings.config import ModelInfo
from core.store import MemoryStore, open_store
from core.testing import ScriptedHuman
from flujo_cli import exit_codes
from lens import EventNode, RunSnapshot, StepNode, build_tree, labels
from tests.support.cli_helpers import ROOT, flujo_process
from tests.support.fakes.openai_server import FakeLLM

FAST = Backoff(base_delay=0.001, max_delay=0.05)
HELD_FOR = 120  # seconds: only a safety net, should the server never get the request


def agent(fake: FakeLLM, **settings: Any) -> Agent:
    spec = AgentSpec(
        name="writer", model="openai:gpt-4o-mini", system_prompt="Answer briefly.", model_settings=settings
    )
    return build_agent(spec, fake.settings(), backoff=FAST)


def test_a_call_is_interrupted_unless_the_attempt_that_sent_it_committed_its_step() -> None:
    call = CallSent("openai:gpt-4o-mini", "openai:gpt-4o-mini", 100.5, 12, 100, None)
    record = StepRecord(run_id="r", path="draft", name="draft", kind="step", status="completed", started_at=100.5)
    assert not call_interrupted(call, record)
    assert not call_interrupted(call, StepRecord(**{**record.__dict__, "status": "failed"}))  # it ended, failing
    assert call_interrupted(call, None)  # the step never committed
    assert call_interrupted(call, StepRecord(**{**record.__dict__, "started_at": 130.0}))  # another attempt did
    events = [TraceEvent("agent.call", "draft", call.to_payload(), 100.6), TraceEvent("agent.call", "b", {}, 1.0)]
    assert interrupted_calls(events, {"draft": record}) == []
    assert interrupted_calls(events, {}) == [call]  # a damaged payload is no CallSent, and is not counted
    assert call.most_tokens == 112


@pytest.mark.parametrize(
    ("status", "words", "requests"),
    [
        ("running", "call to openai:gpt-4o-mini sent · no reply recorded yet", 0),  # it may still come
        ("interrupted", "call to openai:gpt-4o-mini interrupted: sent, but its reply was never recorded", 1),
    ],
)
def test_lens_shows_a_call_without_a_recorded_reply_at_its_step(status: RunStatus, words: str, requests: int) -> None:
    call = CallSent("openai:gpt-4o-mini", "openai:gpt-4o-mini", 100.5, 12, 100, 0.00006)
    run = RunRecord(run_id="r", pipeline_name="p", status=status)
    root = build_tree(RunSnapshot(run, (), (TraceEvent("agent.call", "draft", call.to_payload(), 100.6),)))
    [step] = root.children
    assert isinstance(step, StepNode)
    [shown] = step.children
    assert isinstance(shown, EventNode) and words in labels.label(shown).plain
    assert (step.usage.requests, step.usage.interrupted) == (requests, requests)
    if requests:
        assert "up to 112 tokens and $0.000060 held against the limits" in labels.label(shown).plain
        assert "1 request (1 interrupted: usage unknown) · 0 tokens · ?" in labels.label(step).plain


def test_an_interrupted_request_counts_as_a_request_of_unknown_usage_and_is_stored_so() -> None:
    usage = Usage(12, 3, 1, 0.0001) + INTERRUPTED_CALL
    assert (usage.requests, usage.total_tokens, usage.cost_usd, usage.interrupted) == (2, 15, None, 1)
    assert usage.to_dict()["interrupted"] == 1 and "interrupted" not in Usage(12, 3, 1, 0.0).to_dict()
    assert load_usage(dump_usage(usage)) == usage


async def test_offline_models_journal_no_call() -> None:
    scripted = build_agent(AgentSpec(name="bot", model="scripted", replies=("x",)), Settings())
    echo = build_agent(AgentSpec(name="echo", model="echo"), Settings())
    store = MemoryStore()
    outcome = await Engine(store=store, redactor=Redactor()).run(
        Pipeline(steps=(AgentStep(name="a", agent=scripted), AgentStep(name="b", agent=echo))), "hi"
    )
    assert outcome.status == "completed" and outcome.usage.requests == 2
    assert [e.kind for e in await store.events(outcome.run_id) if e.kind == CallSent.kind] == []


async def test_a_providers_call_is_journaled_before_it_is_sent_with_what_it_may_use(fake_llm: FakeLLM) -> None:
    fake_llm.reply("short", usage=(12, 3))
    store = MemoryStore()
    outcome = await Engine(store=store, redactor=Redactor()).run(
        Pipeline(steps=(AgentStep(name="draft", agent=agent(fake_llm, max_tokens=100)),)), "hello"
    )
    assert outcome.status == "completed"
    events = await store.events(outcome.run_id)
    assert [e.kind for e in events] == ["agent.call", "agent.prompt", "agent.reply"]
    call = events[0].data
    [step] = await store.steps(outcome.run_id)
    assert isinstance(call, CallSent) and call.started == step.started_at  # the attempt that committed
    assert call.model == "openai:gpt-4o-mini" and call.reply_cap == 100 and 0 < call.prompt_tokens < 50
    assert call.cost_usd == pytest.approx((call.prompt_tokens * 0.15 + 100 * 0.60) / 1e6)
    assert await store.events(outcome.run_id, kind="agent.call") == events[:1]
    assert interrupted_calls(events, {step.path: step}) == []
    assert outcome.usage == Usage(12, 3, 1, outcome.usage.cost_usd)


async def _cancelled_mid_reply(engine: Engine, pipeline: Pipeline, fake: FakeLLM) -> str:
    """Start a run of ``pipeline``; once the server has sent the whole reply (and holds the stream open),
    cancel it (as Ctrl-C does); the run's id."""
    task = asyncio.create_task(engine.run(pipeline, "hello", run_id="0123456789abcdef"))
    held = await asyncio.to_thread(fake.held.wait, HELD_FOR)
    assert held, "the server never got the call"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fake.let_go()
    return "0123456789abcdef"


async def test_a_call_cancelled_after_its_reply_is_counted_once_and_resume_asks_again(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.reply("lost answer", usage=(12, 3), hold=True).reply("second answer", usage=(20, 4))
    draft = AgentStep(name="draft", agent=agent(fake_llm, max_tokens=100))
    pipeline = Pipeline(steps=(draft, HitlStep(name="approve", message=Template("OK?"))))
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        engine = Engine(store=store, redactor=Redactor())
        run_id = await _cancelled_mid_reply(engine, pipeline, fake_llm)
        stopped = await store.get_run(run_id)
        assert stopped is not None and stopped.status == "interrupted"
        assert (stopped.usage.requests, stopped.usage.interrupted, stopped.usage.total_tokens) == (1, 1, 0)

        paused = await engine.resume(pipeline, run_id)  # asks again, then waits for the person
        assert paused.status == "paused" and len(fake_llm.requests) == 2  # the provider served both
        assert (paused.usage.requests, paused.usage.interrupted, paused.usage.total_tokens) == (2, 1, 24)
        answered = Engine(store=store, redactor=Redactor(), human=ScriptedHuman(["yes"]))
        outcome = await answered.resume(pipeline, run_id)  # every resume counts the lost call, once
        assert outcome.status == "completed" and outcome.output == "yes"
        assert len(fake_llm.requests) == 2
        assert (outcome.usage.requests, outcome.usage.interrupted, outcome.usage.total_tokens) == (2, 1, 24)
        assert outcome.usage.cost_usd is None  # what the lost call cost is not known
        record = await store.get_run(run_id)
        assert record is not None and record.usage == outcome.usage
        step = {step.path: step for step in await store.steps(run_id)}["draft"]
        assert step.usage.requests == 1  # the step's record holds its own call; the run counts the lost one


async def test_a_free_models_lost_call_costs_nothing(fake_llm: FakeLLM, tmp_path: Path) -> None:
    # A model priced at 0 (as model: local is): the lost call's tokens are unknown, its cost is not.
    fake_llm.reply("lost answer", usage=(12, 3), hold=True).reply("second answer", usage=(20, 4))
    free = {"openai:gpt-free": ModelInfo(input_per_mtok=0.0, output_per_mtok=0.0)}
    spec = AgentSpec(name="writer", model="openai:gpt-free", model_settings={"max_tokens": 100})
    draft = AgentStep(name="draft", agent=build_agent(spec, fake_llm.settings(models=free), backoff=FAST))
    pipeline = Pipeline(steps=(draft,))
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        engine = Engine(store=store, redactor=Redactor())
        run_id = await _cancelled_mid_reply(engine, pipeline, fake_llm)
        outcome = await engine.resume(pipeline, run_id)
        assert outcome.status == "completed" and len(fake_llm.requests) == 2
        assert (outcome.usage.requests, outcome.usage.interrupted, outcome.usage.cost_usd) == (2, 1, 0.0)


async def test_a_lost_calls_reservation_stays_charged_against_max_tokens(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.reply("lost answer", usage=(12, 3), hold=True)
    writer = agent(fake_llm, max_tokens=100)
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        engine = Engine(store=store, redactor=Redactor())
        loose = Pipeline(steps=(AgentStep(name="draft", agent=writer),))
        run_id = await _cancelled_mid_reply(engine, loose, fake_llm)
        [event] = await store.events(run_id, kind="agent.call")
        call = event.data
        assert isinstance(call, CallSent)
        # Room for one call's most (prompt and reply cap), not for the lost one's and a new one's.
        tight = Pipeline(steps=loose.steps, limits=Limits(max_tokens=call.most_tokens + 20))
        outcome = await engine.resume(tight, run_id, force=True)
    assert outcome.status == "limit_reached", outcome
    assert "interrupted calls of unknown usage" in (outcome.detail or "")
    assert len(fake_llm.requests) == 1  # never asked again: the limit stopped it before


SUBWORKFLOW = """\
version: "0.1"
imports:
  inner: inner.yaml
steps:
  - {kind: step, name: review, uses: imports.inner}
"""
INNER = """\
version: "0.1"
agents:
  writer: {model: "openai:gpt-4o-mini", system_prompt: "Answer briefly."}
steps:
  - {kind: step, name: draft, uses: agents.writer}
"""


async def test_a_child_runs_lost_call_counts_in_the_parent_run_on_resume(fake_llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "outer.yaml").write_text(SUBWORKFLOW, encoding="utf-8")
    (tmp_path / "inner.yaml").write_text(INNER, encoding="utf-8")
    pipeline = load_pipeline(tmp_path / "outer.yaml", fake_llm.settings())
    fake_llm.reply("lost answer", usage=(12, 3), hold=True).reply("second answer", usage=(20, 4))
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        engine = Engine(store=store, redactor=Redactor())
        run_id = await _cancelled_mid_reply(engine, pipeline, fake_llm)
        outcome = await engine.resume(pipeline, run_id)
        assert outcome.status == "completed" and len(fake_llm.requests) == 2
        assert (outcome.usage.requests, outcome.usage.interrupted, outcome.usage.total_tokens) == (2, 1, 24)
        [child] = await store.list_runs(parent_run_id=run_id)
        assert (child.usage.requests, child.usage.interrupted) == (2, 1)


BLUEPRINT = """\
version: "0.1"
agents:
  writer:
    model: "openai:gpt-4o-mini"
    system_prompt: "Answer briefly."
    model_settings: {max_tokens: 100}
steps:
  - {kind: step, name: draft, uses: agents.writer}
"""


def _killed_mid_reply(tmp_path: Path, fake: FakeLLM, blueprint: str) -> tuple[str, dict[str, str]]:
    """``flujo run`` of ``blueprint`` as a process, SIGKILLed once the server has sent the whole reply of
    its call (the stream held open, its end not sent); the run's id and the environment to go on with."""
    (tmp_path / "flow.yaml").write_text(blueprint, encoding="utf-8")
    env = {**fake.env(), "FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    run = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", str(tmp_path / "flow.yaml"), "--input", "hello"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        cwd=tmp_path,
    )
    try:
        assert fake.held.wait(HELD_FOR), "the server never got the call"
        run.kill()  # SIGKILL: the reply arrived, its step is not committed
        run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
        fake.let_go()
    listed = flujo_process(["lens", "list", "--json"], env=env)
    [row] = json.loads(listed.stdout)["runs"]
    assert row["usage"]["requests"] == 0  # as the killed process left it: nothing counted yet
    return row["run_id"], env


@pytest.mark.slow
def test_a_killed_runs_lost_call_is_counted_by_resume_and_shown_by_lens(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.reply("lost answer", usage=(12, 3), hold=True).reply("second answer", usage=(20, 4))
    run_id, env = _killed_mid_reply(tmp_path, fake_llm, BLUEPRINT)

    resumed = flujo_process(["resume", run_id, "--json"], env=env)
    assert resumed.returncode == exit_codes.OK, resumed.stderr
    assert len(fake_llm.requests) == 2  # the provider served the lost call and the new one
    usage = json.loads(resumed.stdout)["usage"]
    assert usage == {"input_tokens": 20, "output_tokens": 4, "requests": 2, "cost_usd": None, "interrupted": 1}
    assert "1 interrupted call(s) of unknown usage" in resumed.stderr

    shown = flujo_process(["lens", "show", run_id, "--json"], env=env)
    document = json.loads(shown.stdout)
    assert document["run"]["usage"] == usage
    [step] = document["steps"]
    assert step["usage"]["requests"] == 2 and step["usage"]["interrupted"] == 1  # its own call and the lost one
    plain = flujo_process(["lens", "show", run_id], env=env, timeout=60).stdout
    assert "2 requests (1 interrupted: usage unknown)" in plain

    traced = flujo_process(["lens", "trace", run_id, "--plain"], env=env).stdout
    assert "agent.call  call to openai:gpt-4o-mini interrupted: sent, but its reply was never recorded" in traced
    assert "counted as 1 request of unknown usage" in traced
    spans = json.loads(flujo_process(["lens", "trace", run_id, "--json"], env=env).stdout)["spans"]
    kinds = [event["kind"] for event in spans[0]["events"]]
    assert kinds == ["agent.call", "agent.call", "agent.prompt", "agent.reply"]  # the lost call, then the new one


@pytest.mark.slow
def test_a_killed_runs_lost_call_keeps_its_reservation_against_the_limit(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.reply("lost answer", usage=(12, 3), hold=True)
    # Room for one call's most (a prompt of a few tokens and a reply of up to 100), not for two.
    limited = BLUEPRINT.replace("steps:", "limits: {max_tokens: 150}\nsteps:")
    run_id, env = _killed_mid_reply(tmp_path, fake_llm, limited)

    resumed = flujo_process(["resume", run_id], env=env)
    assert resumed.returncode == exit_codes.LIMIT, resumed.stderr
    assert "interrupted calls of unknown usage" in resumed.stderr
    assert len(fake_llm.requests) == 1  # stopped before asking again
    shown = json.loads(flujo_process(["lens", "show", run_id, "--json"], env=env).stdout)
    assert shown["run"]["status"] == "limit_reached"
    assert shown["run"]["usage"]["requests"] == 1 and shown["run"]["usage"]["interrupted"] == 1
