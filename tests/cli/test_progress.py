"""What the user sees while a run goes: streamed text, each agent reply, readable previews."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from core import StepRecord
from flujo_cli.progress import LiveReporter, preview


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
