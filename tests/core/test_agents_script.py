"""Script agents: ``python: "module:function"`` and ``command: [argv...]``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from core import Abort, AgentCall, ChatMessage, ConfigError, RunError, Settings, TemplateError
from core.agents import AgentSpec, CommandAgent, PythonAgent, build_agent

HERE = "tests.core.test_agents_script"


# -- functions the python: agents below point at ---------------------------------------------------------
def shout(value: str, context: Mapping[str, Any]) -> str:
    return f"{value.upper()} for {context['user']}"


async def count_words(value: str, context: Mapping[str, Any]) -> dict[str, int]:
    await asyncio.sleep(0)
    return {"words": len(value.split())}


def only_input(value: Any) -> Any:
    return [value, value]


def mutate_context(value: Any, context: Any) -> None:
    context["user"] = "changed"


def boom(value: Any, context: Any) -> None:
    raise ValueError("bad input")


def flujo_error(value: Any, context: Any) -> None:
    raise TemplateError("template broke")


def abort(value: Any, context: Any) -> None:
    raise Abort("stop now")


def three_args(a: Any, b: Any, c: Any) -> None:
    return None


NOT_CALLABLE = 42


def python_agent(function: str) -> Any:
    return build_agent(AgentSpec(name="tool", python=f"{HERE}:{function}"), Settings())


async def test_sync_function_gets_input_and_read_only_context() -> None:
    agent = python_agent("shout")
    assert isinstance(agent, PythonAgent) and not agent.is_model
    assert agent.label == f"python:{HERE}:shout"
    call = AgentCall(input="hi", step="s", context={"user": "ana"})
    assert agent.prompt(call) == [ChatMessage("user", "hi")]
    reply = await agent.run(call)
    assert reply.output == "HI for ana" and reply.usage.total_tokens == 0


async def test_async_function_and_single_argument_function() -> None:
    assert (await python_agent("count_words").run(AgentCall(input="a b c", step="s"))).output == {"words": 3}
    assert (await python_agent("only_input").run(AgentCall(input=7, step="s"))).output == [7, 7]


async def test_a_callable_can_be_given_directly() -> None:
    agent = PythonAgent(only_input, name="direct")
    assert agent.label == f"python:{HERE}:only_input"
    assert (await agent.run(AgentCall(input="x", step="s"))).output == ["x", "x"]


async def test_context_cannot_be_changed() -> None:
    context = {"user": "ana"}
    with pytest.raises(RunError, match="raised TypeError"):
        await python_agent("mutate_context").run(AgentCall(input=None, step="s", context=context))
    assert context == {"user": "ana"}


async def test_exceptions_become_run_errors_naming_the_agent() -> None:
    with pytest.raises(RunError) as caught:
        await python_agent("boom").run(AgentCall(input=None, step="s"))
    assert caught.value.message == f"agents.tool ({HERE}:boom) raised ValueError: bad input"
    assert isinstance(caught.value.__cause__, ValueError)


async def test_flujo_errors_and_control_signals_pass_through() -> None:
    with pytest.raises(TemplateError, match="template broke"):
        await python_agent("flujo_error").run(AgentCall(input=None, step="s"))
    with pytest.raises(Abort):
        await python_agent("abort").run(AgentCall(input=None, step="s"))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("no_such_module_xyz:run", "cannot import 'no_such_module_xyz' for python: no_such_module_xyz:run"),
        (f"{HERE}:missing", f"'{HERE}' has no attribute 'missing'"),
        (f"{HERE}:NOT_CALLABLE", "is not callable"),
        (f"{HERE}:three_args", "must accept"),
        ("just_a_module", "is not of the form 'package.module:function'"),
    ],
)
def test_bad_python_paths_are_config_errors(path: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(").replace(")", r"\)")) as caught:
        build_agent(AgentSpec(name="tool", python=path), Settings())
    assert caught.value.message.startswith("agents.tool")
    assert caught.value.hint


def test_a_module_that_fails_to_import_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "flujo_broken_tool.py").write_text("raise RuntimeError('half-written module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="RuntimeError: half-written module"):
        build_agent(AgentSpec(name="tool", python="flujo_broken_tool:run"), Settings())


# -- command: agents -----------------------------------------------------------------------------------
def command(script: str, **spec: Any) -> Any:
    return build_agent(AgentSpec(name="cmd", command=(sys.executable, "-c", script), **spec), Settings())


async def test_text_in_text_out_without_trailing_newline() -> None:
    agent = command("import sys; print(sys.stdin.read().upper())")
    assert isinstance(agent, CommandAgent) and not agent.is_model
    assert agent.label == f"command:{sys.executable}"
    reply = await agent.run(AgentCall(input="hello\n", step="s"))
    assert reply.output == "HELLO\n"  # only the one newline print added is removed


async def test_json_in_json_out() -> None:
    agent = command("import json, sys; data = json.load(sys.stdin); print(json.dumps({'double': data['n'] * 2}))")
    assert (await agent.run(AgentCall(input={"n": 21}, step="s"))).output == {"double": 42}


async def test_non_zero_exit_is_a_run_error_with_the_stderr_tail() -> None:
    agent = command("import sys; sys.stderr.write('x' * 5000 + 'the real reason'); sys.exit(3)")
    with pytest.raises(RunError, match="exited with status 3") as caught:
        await agent.run(AgentCall(input="", step="s"))
    assert caught.value.message.endswith("the real reason")
    assert len(caught.value.message) < 2500


async def test_timeout_kills_the_command() -> None:
    agent = command("import time; time.sleep(30)", timeout=0.5)
    with pytest.raises(RunError, match=r"did not finish within 0\.5 s"):
        await agent.run(AgentCall(input="", step="s"))


async def test_missing_program_is_a_run_error() -> None:
    agent = build_agent(AgentSpec(name="cmd", command=("no-such-program-flujo",)), Settings())
    with pytest.raises(RunError, match="cannot start no-such-program-flujo") as caught:
        await agent.run(AgentCall(input="", step="s"))
    assert caught.value.hint and "PATH" in caught.value.hint
