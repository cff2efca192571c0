"""``python:`` tools (core.tools.python_tool): the schema from the type hints, the description from the docstring,
arguments validated and converted by pydantic before the call, the result as text or JSON, and every failure of
the function an error outcome for the model, never an exception."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, replace
from datetime import date
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from core import ConfigError, PythonTool, ToolSpec, build_tools
from core.model.tools import ToolCallContext, ToolDef, ToolOutcome
from core.tools.sessions import OpenSessions


def add(a: int, b: int = 2) -> int:
    """Add two integers.

    The second defaults to 2 (this paragraph is not sent)."""
    return a + b


async def slow_echo(text: str, pause: float = 0.0) -> str:
    """Echo the text after a pause."""
    await asyncio.sleep(pause)
    return text


def days_until(when: date, start: date) -> int:
    """Days from start to when."""
    return (when - start).days


class Point(BaseModel):
    x: float
    y: float


def norm(point: Point, scale: Annotated[float, Field(description="a factor", gt=0)] = 1.0) -> dict[str, float]:
    """The point scaled, and its distance from the origin."""
    return {"x": point.x * scale, "y": point.y * scale, "length": (point.x**2 + point.y**2) ** 0.5 * scale}


def fails(reason: str) -> str:
    """Always raises."""
    raise ValueError(reason)


def untyped(a, b: int) -> int:
    return int(a) + b


def starred(*numbers: int) -> int:
    return sum(numbers)


def thread_name() -> str:
    """The thread the call runs in."""
    return threading.current_thread().name


@dataclass
class Pair:
    left: int
    right: int


def pair(left: int, right: int) -> Pair:
    return Pair(left, right)


async def call(tool: PythonTool, arguments: dict[str, Any]) -> ToolOutcome:
    return await tool.call(arguments, ToolCallContext(run_id="r1", path="answer/tool/1"), OpenSessions())


async def test_the_schema_comes_from_the_type_hints_and_the_description_from_the_docstring() -> None:
    tool = PythonTool("add", add)
    assert await tool.definition(OpenSessions()) == ToolDef(
        "add",
        "Add two integers.",
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 2}},
            "required": ["a"],
            "additionalProperties": False,
        },
    )
    assert tool.approve == "never"


async def test_a_pydantic_model_and_a_field_description_are_described_as_pydantic_describes_them() -> None:
    definition = await PythonTool("norm", norm).definition(OpenSessions())
    schema = definition.input_schema
    assert schema["properties"]["scale"] == {
        "type": "number",
        "description": "a factor",
        "exclusiveMinimum": 0,
        "default": 1.0,
    }
    assert schema["required"] == ["point"]
    assert "Point" in schema["$defs"]


async def test_arguments_are_converted_before_the_call_and_left_out_ones_take_the_default() -> None:
    assert (await call(PythonTool("add", add), {"a": 3})).content == "5"
    outcome = await call(PythonTool("days", days_until), {"when": "2026-03-01", "start": "2026-02-01"})
    assert (outcome.content, outcome.value, outcome.error) == ("28", 28, False)
    outcome = await call(PythonTool("norm", norm), {"point": {"x": 3, "y": 4}, "scale": 2})
    assert outcome.value == {"x": 6.0, "y": 8.0, "length": 10.0}
    assert outcome.content == '{"x": 6.0, "y": 8.0, "length": 10.0}'


async def test_arguments_that_do_not_fit_are_an_error_for_the_model_and_the_function_is_not_called() -> None:
    outcome = await call(PythonTool("add", add), {"a": "three", "c": 1})
    assert outcome.error and not outcome.declined
    assert outcome.content.startswith("Error: the arguments do not fit add: a: Input should be a valid integer")
    assert "c: Extra inputs are not permitted" in outcome.content


async def test_an_exception_is_the_result_in_one_line_without_a_traceback() -> None:
    outcome = await call(PythonTool("fails", fails), {"reason": "no such customer"})
    assert outcome == ToolOutcome("Error: ValueError: no such customer", error=True)


async def test_text_is_sent_as_it_is_and_other_values_as_json() -> None:
    outcome = await call(PythonTool("echo", slow_echo), {"text": "héllo"})
    assert (outcome.content, outcome.value) == ("héllo", "héllo")
    outcome = await call(PythonTool("pair", pair), {"left": 1, "right": 2})
    assert (outcome.content, outcome.value) == ('{"left": 1, "right": 2}', {"left": 1, "right": 2})


def not_utf8(x: int) -> bytes:
    """Returns bytes that are not UTF-8 text."""
    return b"\xff\x00abc"


def leaves(code: int) -> int:
    """Calls sys.exit."""
    raise SystemExit(code)


async def test_a_result_that_cannot_be_text_or_json_is_an_error_for_the_model() -> None:
    outcome = await call(PythonTool("raw", not_utf8), {"x": 1})
    assert outcome.error and outcome.content.startswith(
        "Error: the function returned a bytes that cannot be sent as text or JSON: UnicodeDecodeError:"
    )


async def test_sys_exit_in_the_function_is_an_error_for_the_model() -> None:
    outcome = await call(PythonTool("leaves", leaves), {"code": 3})
    assert outcome == ToolOutcome("Error: SystemExit: 3", error=True)


async def test_a_sync_function_runs_in_a_thread_of_its_own() -> None:
    outcome = await call(PythonTool("where", thread_name), {})
    assert outcome.content == "flujo:call" and outcome.content != threading.current_thread().name


async def test_a_call_past_the_timeout_is_an_error_for_the_model() -> None:
    tool = PythonTool("echo", slow_echo, timeout=0.05)
    outcome = await call(tool, {"text": "late", "pause": 30})
    assert outcome == ToolOutcome("Error: echo did not finish within 0.05 s", error=True)
    assert (await call(tool, {"text": "on time"})).content == "on time"


def test_a_parameter_without_a_type_hint_cannot_be_described() -> None:
    with pytest.raises(ConfigError) as caught:
        PythonTool("untyped", untyped)
    assert "parameter 'a' of untyped has no type hint" in caught.value.message
    assert caught.value.hint is not None and "def add(a: int, b: int)" in caught.value.hint


async def test_an_input_schema_given_describes_untyped_parameters() -> None:
    schema = {"type": "object", "properties": {"a": {}, "b": {"type": "integer"}}, "required": ["a", "b"]}
    tool = PythonTool("untyped", untyped, description="Adds.", input_schema=schema)
    assert await tool.definition(OpenSessions()) == ToolDef("untyped", "Adds.", schema)
    assert (await call(tool, {"a": "4", "b": 1})).content == "5"


def test_star_parameters_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"takes \*numbers; a tool's arguments must each be a named parameter"):
        PythonTool("sum", starred)


async def test_the_factory_imports_module_function_and_keeps_the_spec_s_words() -> None:
    spec = ToolSpec(
        name="plus", python="tests.core.test_python_tool:add", description="Adds a and b.", approve="ask", timeout=5
    )
    (tool,) = build_tools(spec)
    assert isinstance(tool, PythonTool)
    assert (tool.name, tool.approve, tool.timeout, tool.function) == ("plus", "ask", 5, add)
    assert (await tool.definition(OpenSessions())).description == "Adds a and b."
    with pytest.raises(ConfigError, match=r"tools\.minus: .* has no attribute 'subtract'"):
        build_tools(ToolSpec(name="minus", python="tests.core.test_python_tool:subtract"))


# A parameter annotated ToolCallContext: the call's context, never an argument (docs/tools.md, "Python tools").


def where_sync(call: ToolCallContext, /, text: str) -> str:
    """Say where the call runs, and show a line while it does (from its thread)."""
    assert call.on_progress is not None
    call.on_progress(f"{text} in {threading.current_thread().name}")
    return f"{text}: {call.run_id} {call.path} attempt {call.attempt}"


async def where_async(text: str, *, context: Annotated[ToolCallContext, "the call"]) -> str:
    """Say where the call runs."""
    assert context.on_progress is not None
    context.on_progress(text)
    return f"{text}: {context.run_id} {context.path} attempt {context.attempt}"


def where_untyped(text, context: ToolCallContext):  # type: ignore[no-untyped-def]  # the input_schema describes text
    return f"{text}: attempt {context.attempt}"


CONTEXT = ToolCallContext(run_id="r7", path="answer/tool/3", attempt=2)


async def _told(tool: PythonTool, arguments: dict[str, Any]) -> tuple[ToolOutcome, list[tuple[str, str]]]:
    """The outcome of a call in CONTEXT, and each progress line with the thread it was shown in."""
    lines: list[tuple[str, str]] = []
    where = replace(CONTEXT, on_progress=lambda line: lines.append((line, threading.current_thread().name)))
    outcome = await tool.call(arguments, where, OpenSessions())
    await asyncio.sleep(0)  # a line a thread handed over is shown on the loop's next turn
    return outcome, lines


async def test_a_context_parameter_is_no_argument_and_receives_the_call_s_context() -> None:
    for function in (where_sync, where_async):
        tool = PythonTool("where", function)
        assert tool.signature.context == ("call" if function is where_sync else "context")
        assert (await tool.definition(OpenSessions())).input_schema == {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        }
        outcome, lines = await _told(tool, {"text": "here"})
        assert outcome == ToolOutcome("here: r7 answer/tool/3 attempt 2", "here: r7 answer/tool/3 attempt 2")
        shown = "here in flujo:call" if function is where_sync else "here"
        assert lines == [(shown, threading.current_thread().name)]  # shown from the loop, never from a thread


async def test_the_model_cannot_give_the_context_parameter() -> None:
    outcome = await call(PythonTool("where", where_async), {"text": "x", "context": {"attempt": 9}})
    assert outcome.error and "context: Extra inputs are not permitted" in outcome.content


async def test_with_an_input_schema_the_context_parameter_is_known_by_its_annotation_alone() -> None:
    tool = PythonTool("where", where_untyped, input_schema={"type": "object", "properties": {"text": {}}})
    assert (await call(tool, {"text": 5})).content == "5: attempt 1"


async def test_string_annotations_are_resolved_to_find_the_context_parameter() -> None:
    (tool,) = build_tools(ToolSpec(name="attempt", python="tests.support.tool_functions:attempt_of"))
    assert isinstance(tool, PythonTool) and tool.signature.context == "call"
    assert list((await tool.definition(OpenSessions())).input_schema["properties"]) == ["text"]
    assert (await call(tool, {"text": "hi"})).content == "hi: r1 answer/tool/1 attempt 1"


def test_two_context_parameters_are_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        build_tools(ToolSpec(name="two", python="tests.support.tool_functions:two_contexts"))
    assert caught.value.message == (
        "tools.two (python: tests.support.tool_functions:two_contexts): two_contexts takes two ToolCallContext "
        "parameters, 'first' and 'second'; a call has one context"
    )
