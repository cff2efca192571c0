"""What the user sees while a run goes: streamed text, each agent reply, readable previews, each tool call."""

from __future__ import annotations

import asyncio
from io import StringIO

from rich.console import Console

from core import AgentStep, Engine, Pipeline, Redactor, StepRecord
from core.agents import ScriptedAgent
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from flujo_cli.progress import LiveReporter, preview
from tests.support.tool_loops import FunctionTool


def console() -> tuple[Console, StringIO]:
    buffer = StringIO()
    return Console(file=buffer, width=80, force_terminal=False, color_system=None), buffer


def record(name: str, output: object, *, path: str | None = None, status: str = "completed") -> StepRecord:
    return StepRecord(run_id="r", path=path or name, name=name, kind="step", status=status, output=output)  # type: ignore[arg-type]


def test_streamed_text_is_shown_once_under_the_step_name() -> None:
    con, buffer = console()
    reporter = LiveReporter(con)
    reporter.step_started("loop/1/answer", "answer", "step")
    for piece in ("The capital ", "is ", "Paris."):
        reporter.text_delta("loop/1/answer", piece)
    reporter.agent_replied("loop/1/answer", "answer", "The capital is Paris.")
    reporter.step_finished(record("answer", "The capital is Paris.", path="loop/1/answer"))
    assert buffer.getvalue() == "answer › The capital is Paris.\n"


def test_unstreamed_reply_is_printed_and_non_agent_steps_are_not() -> None:
    con, buffer = console()
    reporter = LiveReporter(con)
    reporter.agent_replied("clarify", "clarify", {"action": "ask", "question": "Who is it for?"})
    reporter.step_finished(record("clarify", {"action": "ask", "question": "Who is it for?"}))
    reporter.step_finished(record("summary", "a passthrough step's output is not a reply"))
    reporter.step_finished(record("broken", None, status="failed"))
    assert buffer.getvalue() == "clarify › action: ask · question: Who is it for?\n"


def test_quiet_mode_shows_nothing() -> None:
    con, buffer = console()
    reporter = LiveReporter(con, quiet=True)
    reporter.step_started("a", "a", "step")
    reporter.text_delta("a", "x")
    reporter.agent_replied("a", "a", "x")
    reporter.step_finished(record("a", "x"))
    reporter.note("hello")
    assert buffer.getvalue() == ""


def test_preview_keeps_nested_values_as_json_and_cuts_long_text() -> None:
    assert preview({"a": [1, 2]}) == '{"a": [1, 2]}'
    long = preview("x" * 2500)
    assert long.startswith("x" * 2000) and long.endswith("… (500 more characters)")


def test_a_streamed_reply_into_a_pipe_is_written_without_rich_layout() -> None:
    """Piped (no terminal, no colours, no wrapping), every piece of an iteration's output, the line ending a
    streamed reply included, is written directly: Rich's layout cost a millisecond a line (docs/performance.md)."""
    buffer = StringIO()
    con = Console(file=buffer, force_terminal=False, color_system=None, soft_wrap=True)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("laid out through Rich")

    con.print = refuse  # type: ignore[method-assign]
    reporter = LiveReporter(con)
    reporter.step_started("loop/1/answer", "answer", "step")
    for piece in ("The capital ", "is ", "Paris."):
        reporter.text_delta("loop/1/answer", piece)
    reporter.agent_replied("loop/1/answer", "answer", "The capital is Paris.")
    reporter.step_finished(record("answer", "The capital is Paris.", path="loop/1/answer"))
    reporter.text_delta("loop/2/answer", "cut off")
    reporter.step_finished(record("answer", None, path="loop/2/answer", status="failed"))
    assert buffer.getvalue() == "answer › The capital is Paris.\nanswer › cut off\n"


# A tool loop (issue 32): each call is a line when it ends; the model's turns are not shown.


def turn(path: str, *calls: tuple[str, dict[str, object]], text: str = "") -> StepRecord:
    asked = [{"id": f"call_{n}", "name": name, "arguments": args} for n, (name, args) in enumerate(calls, 1)]
    output = {"text": text, "tool_calls": asked, "model": "m", "usage": {"requests": 1}}
    return StepRecord(run_id="r", path=path, name="answer", kind="model", status="completed", output=output)


def call(
    path: str, name: str, arguments: object, content: str, *, error: bool = False, declined: bool = False
) -> StepRecord:
    outcome = {"content": content, "value": content, "error": error or declined, "declined": declined}
    given = {"id": "call_1", "arguments": arguments}
    return StepRecord(run_id="r", path=path, name=name, kind="tool", status="completed", input=given, output=outcome)


def test_each_tool_call_is_a_line_with_its_arguments_and_result_and_the_model_turns_are_not_shown() -> None:
    con, buffer = console()
    reporter = LiveReporter(con, redactor=Redactor())
    reporter.step_started("answer", "answer", "step")
    reporter.step_finished(turn("answer/model/1", ("lookup", {"id": "42"}), ("lookup", {"id": "x"})))
    reporter.step_started("answer/tool/1", "lookup", "tool")
    reporter.step_finished(call("answer/tool/1", "lookup", {"id": "42"}, "customer 42:\n  Ada"))
    reporter.step_started("answer/tool/2", "lookup", "tool")
    reporter.step_finished(call("answer/tool/2", "lookup", {"id": "x"}, "Error: no customer 'x'", error=True))
    reporter.step_finished(turn("answer/model/2", ("delete", {"id": "7"})))
    reporter.step_started("answer/tool/3", "delete", "tool")
    reporter.step_started("answer/tool/3/approve", "approve:delete", "hitl")
    reporter.step_finished(
        StepRecord(run_id="r", path="answer/tool/3/approve", name="approve:delete", kind="hitl", status="completed")
    )
    reporter.step_finished(call("answer/tool/3", "delete", {"id": "7"}, "The person declined", declined=True))
    reporter.step_finished(turn("answer/model/3", text="Customer 42 is Ada."))
    reporter.agent_replied("answer", "answer", "Customer 42 is Ada.")
    reporter.step_finished(record("answer", "Customer 42 is Ada."))
    assert buffer.getvalue() == (
        '  ↳ lookup({"id": "42"}) → customer 42: Ada\n'
        '  ↳ lookup({"id": "x"}) → Error: no customer \'x\'\n'
        '  ↳ delete({"id": "7"}) declined by the person\n'
        "answer › Customer 42 is Ada.\n"
    )


def test_a_tool_call_s_line_is_masked_and_short() -> None:
    buffer = StringIO()
    con = Console(file=buffer, width=200, force_terminal=False, color_system=None)
    reporter = LiveReporter(con, redactor=Redactor())
    arguments = {"query": "customer 42 key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl", "filler": "x" * 100}
    reporter.step_started("answer/tool/1", "lookup", "tool")
    reporter.step_finished(call("answer/tool/1", "lookup", arguments, "found; password=Tr0ub4dor&3xyz " + "y" * 200))
    line = buffer.getvalue()
    assert "sk-proj" not in line and "Tr0ub4dor" not in line
    assert line.startswith('  ↳ lookup({"query": "customer 42 key [REDACTED]", "filler": "xxx')
    assert "…) → found; password=[REDACTED] yyy" in line and line.endswith("y…\n")
    assert len(line) < 200


def test_what_the_model_said_with_its_calls_ends_its_line_before_the_calls() -> None:
    con, buffer = console()
    reporter = LiveReporter(con)
    reporter.step_started("answer", "answer", "step")
    reporter.text_delta("answer", "Let me look that up.")
    reporter.step_finished(turn("answer/model/1", ("lookup", {"id": "42"}), text="Let me look that up."))
    reporter.step_started("answer/tool/1", "lookup", "tool")
    reporter.step_finished(call("answer/tool/1", "lookup", {"id": "42"}, "Ada"))
    reporter.text_delta("answer", "It is Ada.")
    reporter.agent_replied("answer", "answer", "It is Ada.")
    reporter.step_finished(record("answer", "It is Ada."))
    assert buffer.getvalue() == ('answer › Let me look that up.\n  ↳ lookup({"id": "42"}) → Ada\nanswer › It is Ada.\n')


def test_at_a_terminal_a_running_call_is_a_spinner_naming_its_arguments_then_the_step_s_again() -> None:
    buffer = StringIO()
    con = Console(file=buffer, width=100, force_terminal=True, color_system=None)
    reporter = LiveReporter(con)
    reporter.step_started("answer", "answer", "step")
    reporter.step_finished(turn("answer/model/1", ("lookup", {"id": "42"}), ("lookup", {"id": "7"})))
    shown = buffer.getvalue()
    reporter.step_started("answer/tool/1", "lookup", "tool")
    assert 'lookup({"id": "42"}) running…' in buffer.getvalue()[len(shown) :]
    shown = buffer.getvalue()
    reporter.step_finished(call("answer/tool/1", "lookup", {"id": "42"}, "Ada"))
    after = buffer.getvalue()[len(shown) :]
    assert '↳ lookup({"id": "42"}) → Ada' in after and "answer running…" not in after  # the next call comes
    reporter.step_started("answer/tool/2", "lookup", "tool")
    shown = buffer.getvalue()
    reporter.step_finished(call("answer/tool/2", "lookup", {"id": "7"}, "Bo"))
    after = buffer.getvalue()[len(shown) :]
    assert '↳ lookup({"id": "7"}) → Bo' in after and "answer running…" in after  # the model's next turn
    reporter.close()


def test_a_tool_loop_through_the_engine_shows_its_calls_and_its_answer() -> None:
    tool = FunctionTool("add", lambda arguments: arguments["a"] + arguments["b"])
    agent = ScriptedAgent([{"tool": "add", "arguments": {"a": 2, "b": 3}}, "It is 5."])
    step = AgentStep(name="answer", agent=agent, tools=ToolUse(tools=(tool,), agent="helper"))
    con, buffer = console()
    outcome = asyncio.run(
        Engine(store=MemoryStore(), reporter=LiveReporter(con)).run(Pipeline(steps=(step,)), "What is 2 + 3?")
    )
    assert outcome.status == "completed", outcome.error
    assert buffer.getvalue() == '  ↳ add({"a": 2, "b": 3}) → 5\nanswer › It is 5.\n'
