"""What a person sees while a model agent works, before its reply streams: a model on this machine says it is
loading (its name and size), then every chat agent says it is thinking, with the seconds counted. The agents
tell the step's ``on_activity`` (core.model.calls.Activity); the terminal's status line words it
(flujo_cli.progress). The local model's own calls are in tests/cli/test_local_model.py."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from rich.console import Console

from core import AgentStep, Engine, Pipeline
from core.agents import AgentSpec, build_agent
from core.agents.gguf import GGUFInfo
from core.agents.local_server import LocalModel
from core.model.calls import Activity, AgentCall
from core.settings.config import LocalSettings
from core.store import MemoryStore
from core.testing import RecordingReporter
from flujo_cli.progress import LiveReporter, Waiting
from tests.support.fakes.openai_server import FakeLLM

SCHEMA = {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}


async def test_a_chat_agent_says_it_is_thinking_once_per_call(fake_llm: FakeLLM) -> None:
    seen: list[Activity] = []
    for model in ("openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"):
        agent = build_agent(AgentSpec(name="a", model=model), fake_llm.settings())
        fake_llm.reply("Hello there.")
        await agent.run(AgentCall(input="hi", step="a", on_text=lambda _: None, on_activity=seen.append))
    # A structured reply repaired once is still one call the person waits for.
    agent = build_agent(AgentSpec(name="a", model="openai:gpt-4o-mini", output_schema=SCHEMA), fake_llm.settings())
    fake_llm.reply("not json")
    fake_llm.reply({"action": "finish"})
    await agent.run(AgentCall(input="hi", step="a", on_activity=seen.append))
    assert seen == [Activity("thinking")] * 3


async def test_the_engine_reports_the_activity_at_the_steps_path(fake_llm: FakeLLM) -> None:
    reporter = RecordingReporter()
    agent = build_agent(AgentSpec(name="a", model="openai:gpt-4o-mini"), fake_llm.settings())
    fake_llm.reply("Hello there.")
    outcome = await Engine(store=MemoryStore(), reporter=reporter).run(
        Pipeline(steps=(AgentStep(name="greet", agent=agent),)), "hi"
    )
    assert outcome.status == "completed", outcome.error
    assert reporter.activities == [("greet", Activity("thinking"))]


def _model(file: str, size: int) -> LocalModel:
    return LocalModel(Path("/models") / file, GGUFInfo("x", "llama", 2048, size), LocalSettings())


def test_a_local_model_is_named_as_a_person_reads_it() -> None:
    assert _model("SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432).shown == "SmolLM2-135M-Instruct (98 MB)"
    assert _model("qwen2.5-0.5b-instruct-q8_0.gguf", 531_000_000).shown == "qwen2.5-0.5b-instruct (531 MB)"
    assert _model("Llama-3.2-3B-Instruct-Q4_K_M.gguf", 2_019_000_000).shown == "Llama-3.2-3B-Instruct (2.0 GB)"
    assert _model("tiny.gguf", 300_000).shown == "tiny (1 MB)"


def _terminal() -> tuple[Console, StringIO]:
    buffer = StringIO()
    return Console(file=buffer, width=100, force_terminal=True, color_system=None), buffer


def test_the_status_line_names_the_load_at_once_then_streams_the_reply() -> None:
    console, buffer = _terminal()
    reporter = LiveReporter(console)
    reporter.step_started("chat/1/smol", "smol", "step")
    reporter.activity("chat/1/smol", Activity("loading", "SmolLM2-135M-Instruct (98 MB)"))
    # Drawn before the call returns: the load that follows holds the GIL, so no refresh thread would draw it.
    assert "smol loading SmolLM2-135M-Instruct (98 MB)…" in buffer.getvalue()
    reporter.activity("chat/1/smol", Activity("thinking"))
    assert "smol thinking…" in buffer.getvalue()
    reporter.text_delta("chat/1/smol", "Hello!")
    reporter.agent_replied("chat/1/smol", "smol", "Hello!")
    reporter.close()
    assert buffer.getvalue().endswith("smol › Hello!\n")


def test_thinking_counts_the_seconds_as_it_is_redrawn() -> None:
    now = [100.0]
    waiting = Waiting("smol", "thinking", clock=lambda: now[0])
    console, buffer = _terminal()
    console.print(waiting)
    now[0] = 103.4
    console.print(waiting)
    assert buffer.getvalue() == "smol thinking…\nsmol thinking… 3 s\n"


def test_without_a_terminal_or_when_quiet_nothing_is_shown() -> None:
    for console, quiet in ((Console(file=StringIO(), force_terminal=False), False), (_terminal()[0], True)):
        reporter = LiveReporter(console, quiet=quiet)
        reporter.step_started("smol", "smol", "step")
        reporter.activity("smol", Activity("loading", "SmolLM2-135M-Instruct (98 MB)"))
        reporter.activity("smol", Activity("thinking"))
        reporter.close()
        assert isinstance(console.file, StringIO) and console.file.getvalue() == ""
