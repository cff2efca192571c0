"""The blueprint language of tools: ``tools:`` beside ``agents:``, an agent's ``tools``, ``max_tool_calls``,
``tool_mode`` and ``tool_result_chars``. Each mistake is a finding at its file:line:col; a valid blueprint
compiles into agent steps carrying a ``ToolUse``, runs, and is explained with its tools."""

# Expected messages are kept one per line, whole, so a reader sees exactly what a user sees.
# ruff: noqa: E501

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from blueprints import explain_blueprint, load_blueprint, load_pipeline, validate_file
from core import AgentStep, Engine, PythonTool, Settings, ToolUse
from core.store import MemoryStore
from core.testing import ScriptedHuman
from tests.support.blueprint_findings import DATA, row, rows
from tests.support.cli_helpers import ROOT


def test_each_mistake_is_reported_at_its_place() -> None:
    assert rows("tools_invalid") == [
        (6, 21, "bad-value", "tools.untyped (python: tests.support.tool_functions:untyped): parameter 'a' of untyped has no type hint"),
        (7, 21, "import-failed", "cannot import 'tests.support.tool_functions:subtract': 'tests.support.tool_functions' has no 'subtract'"),
        (8, 3, "missing-field", "tool 'nothing' needs one of python, command, workflow or mcp"),
        (9, 54, "bad-value", "tool 'both' sets python and command; a tool is exactly one of them"),
        (10, 77, "bad-value", "input_schema is not a valid JSON Schema: 12 is not valid under any of the given schemas (at type)"),
        (11, 70, "bad-value", "input_schema of a tool describes its arguments, a JSON object: it needs type: object"),
        (12, 20, "unknown-reference", "tool 'flow' runs import 'triag', which is not declared — did you mean 'triage'?"),
        (13, 3, "missing-field", "tool 'quiet' has no description: tests.support.tool_functions:shout has no docstring, so the model is told only its name"),
        (18, 18, "unknown-reference", "agent 'helper' lists tool 'ad', which is not defined — did you mean 'add'?"),
        (21, 5, "bad-value", "agent 'script' cannot use tools: it is a Python function, not a model"),
    ]  # fmt: skip
    hints = {f.message.split(":")[0]: f.hint for f in validate_file(DATA / "tools_invalid.yaml")}
    assert hints["tools.untyped (python"] == "annotate each parameter, e.g. def add(a: int, b: int) -> int"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_refused_tool_is_reported_once_and_the_agents_listing_it_still_find_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'version: "0.1"\n'
        "tools:\n"
        '  lookup: {command: ["cat"], description: "Echo.", approve: maybe, pyhton: "x:y"}\n'
        "agents:\n"
        "  helper: {model: scripted, replies: [ok], tools: [lookup], tool_mode: xml}\n"
        "steps: [{kind: step, name: answer, uses: agents.helper}]\n",
    )
    assert [row(f) for f in validate_file(path)] == [
        (3, 61, "bad-value", "approve: unknown value 'maybe'"),
        (3, 68, "unknown-key", "unknown key 'pyhton' in tool 'lookup' — did you mean 'python'?"),
        (5, 72, "bad-value", "tool_mode: unknown value 'xml'"),
    ]  # fmt: skip


def test_tool_keys_without_tools_and_tools_an_agent_cannot_use_are_said(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'version: "0.1"\n'
        "tools:\n"
        '  add: {python: "tests.support.tool_functions:add", include: [x]}\n'
        "agents:\n"
        "  echo: {model: echo, tools: [add, add]}\n"
        "  quiet: {model: scripted, replies: [ok], max_tool_calls: 3}\n"
        "  person: {model: scripted, replies: [ok], tools: [add]}\n"
        "steps:\n"
        "  - {kind: step, name: answer, uses: agents.echo}\n"
        "  - {kind: step, name: other, uses: agents.quiet}\n"
        '  - {kind: hitl, name: ask, message: "Why?", answered_by: agents.person}\n',
    )
    assert [(*row(f), f.severity) for f in validate_file(path)] == [
        (3, 53, "ignored-key", "include has no effect on tool 'add'; only an mcp tool offers several tools to choose from", "warning"),
        (5, 23, "bad-value", "agent 'echo' cannot use tools: model: echo only repeats its input", "error"),
        (5, 36, "duplicate-name", "agent 'echo' lists tool 'add' twice", "error"),
        (6, 43, "ignored-key", "max_tool_calls has no effect on agent 'quiet', which has no tools", "warning"),
        (11, 59, "ignored-key", "agent 'person' has tools, but the simulated person of 'ask' calls it without them", "warning"),
    ]  # fmt: skip


def test_native_tools_on_a_model_on_this_machine_are_warned_of(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'version: "0.1"\n'
        'tools: {add: {python: "tests.support.tool_functions:add"}}\n'
        "agents: {small: {model: local, tools: [add], tool_mode: native}}\n"
        "steps: [{kind: step, name: answer, uses: agents.small}]\n",
    )
    [finding] = validate_file(path)
    assert (*row(finding), finding.severity) == (
        3, 57, "bad-value", "agent 'small': a model on this machine ignores tools offered natively and answers in plain text", "warning"
    )  # fmt: skip


def test_agent_steps_carry_their_agent_s_tools_built_once() -> None:
    pipeline = load_pipeline(DATA / "tools_valid.yaml", Settings())
    answer, again, other = pipeline.steps
    assert isinstance(answer, AgentStep) and isinstance(again, AgentStep) and isinstance(other, AgentStep)
    use = answer.tools
    assert isinstance(use, ToolUse)
    assert again.tools is use and other.tools is None
    assert (use.max_tool_calls, use.mode, use.result_chars, use.agent) == (3, "json", 100, "helper")
    add, shout = use.tools
    assert isinstance(add, PythonTool) and isinstance(shout, PythonTool)
    assert (add.name, add.approve, add.description, add.timeout) == (
        "add",
        "never",
        "Add two integers and return their sum.",
        None,
    )
    assert (shout.name, shout.approve, shout.description, shout.timeout) == ("shout", "ask", "Shout the text back.", 5)


async def test_a_compiled_blueprint_runs_its_tools() -> None:
    pipeline = load_pipeline(DATA / "tools_valid.yaml", Settings())
    store = MemoryStore()
    outcome = await Engine(store=store, human=ScriptedHuman(["y"])).run(pipeline, "What is 2 + 3?")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "plain"
    records = {record.path: record for record in await store.steps(outcome.run_id)}
    assert records["answer"].output == "It is 5."
    assert records["answer/tool/1"].output["content"] == "5"
    assert records["answer/tool/2/approve"].output == "y"
    assert records["answer/tool/2"].output["content"] == "FIVE"
    assert records["again"].output == "It is 5."  # the scripted replies go on: its last one repeats


def test_defaults_apply_where_the_agent_sets_none(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'version: "0.1"\n'
        'tools: {add: {python: "tests.support.tool_functions:add"}}\n'
        "agents: {helper: {model: scripted, replies: [ok], tools: [add]}}\n"
        "steps: [{kind: step, name: answer, uses: agents.helper}]\n",
    )
    (step,) = load_pipeline(path, Settings()).steps
    assert isinstance(step, AgentStep) and step.tools is not None
    assert (step.tools.max_tool_calls, step.tools.mode, step.tools.result_chars) == (8, None, 8000)


def test_explain_names_each_agent_s_tools_those_that_ask_first_its_bound_and_its_mode() -> None:
    explanation = explain_blueprint(load_blueprint(DATA / "tools_valid.yaml"))
    helper, plain = explanation.agents
    assert plain.tools is None and "tools" not in plain.to_json()
    assert helper.to_json()["tools"] == {
        "names": ["add", "shout"],
        "ask": ["shout"],
        "max_tool_calls": 3,
        "mode": "json",
        "words": "may call add, shout (asks you first); at most 3 tool calls per step; told of them in its system prompt and replying in JSON (tool_mode: json)",
    }
    assert explanation.steps[0].does == (
        "Calls helper (a scripted agent, offline), sent the run's input. Before it answers, helper may call its tools (add, shout), at most 3 calls; only its answer is the step's output."
    )
    assert (
        explanation.human[0]
        == 'answer, before each call of shout (approve: ask; up to 3 calls): "Allow helper to call shout(...)? [y/N]"'
    )


def test_explain_says_a_model_on_this_machine_uses_json_and_counts_the_loop_s_model_calls(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'version: "0.1"\n'
        'tools: {add: {python: "tests.support.tool_functions:add"}}\n'
        "agents:\n"
        "  small: {model: local, tools: [add]}\n"
        "  big: {model: openai:gpt-4o-mini, tools: [add], max_tool_calls: 2}\n"
        "steps:\n"
        "  - {kind: step, name: first, uses: agents.small}\n"
        "  - {kind: step, name: second, uses: agents.big}\n",
    )
    explanation = explain_blueprint(load_blueprint(path))
    small, big = explanation.agents
    assert small.tools is not None and small.tools.mode == "json"
    assert small.tools.words.endswith("(tool_mode: json, the default of model: local)")
    assert big.tools is not None and big.tools.mode == "native"
    assert big.tools.words.endswith("told of them through its provider's tool API (tool_mode: native)")
    assert (
        explanation.cost[0]
        == "At most 12 model calls: first (local) up to 9 times; second (openai:gpt-4o-mini) up to 3 times."
    )
    assert (
        "second uses tools: each time it runs, openai:gpt-4o-mini is called up to 3 times (at most 2 tool calls, their results sent back, then the answer)."
        in explanation.cost
    )


def test_a_blueprint_without_tools_loads_no_tool_code() -> None:
    code = (
        "import asyncio, sys; from blueprints import load_pipeline; from core import Engine, Settings; "
        "from core.store import MemoryStore; pipeline = load_pipeline('docs/examples/agents.yaml', Settings()); "
        "outcome = asyncio.run(Engine(store=MemoryStore()).run(pipeline, 'tea')); "
        "tool_code = ('core.tools.factory', 'core.tools.python_tool', 'core.tools.signature', 'mcp'); "
        "print(outcome.status, [name for name in tool_code if name in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "completed []"


def test_a_tool_that_is_not_a_mapping_is_one_error_and_agents_listing_it_still_find_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'version: "0.1"\n'
        "tools: {add: 12}\n"
        "agents: {helper: {model: scripted, replies: [ok], tools: [add]}}\n"
        "steps: [{kind: step, name: answer, uses: agents.helper}]\n",
    )
    assert [row(f) for f in validate_file(path)] == [(2, 14, "bad-value", "add: expected a mapping, got 12")]


def test_a_context_parameter_validates_and_two_are_one_error_at_the_function(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'version: "0.1"\n'
        "tools:\n"
        '  attempt: {python: "tests.support.tool_functions:attempt_of"}\n'
        '  two: {python: "tests.support.tool_functions:two_contexts"}\n'
        "agents:\n"
        "  helper: {model: scripted, replies: [ok], tools: [attempt, two]}\n"
        "steps: [{kind: step, name: answer, uses: agents.helper}]\n",
    )
    findings = validate_file(path)
    assert [row(f) for f in findings] == [
        (4, 17, "bad-value", "tools.two (python: tests.support.tool_functions:two_contexts): two_contexts takes two ToolCallContext parameters, 'first' and 'second'; a call has one context"),
    ]  # fmt: skip
    assert findings[0].hint == "keep one ToolCallContext parameter: it receives the call's run id, path and attempt"


def test_explain_lists_the_questions_of_a_sub_workflow_tool_among_those_you_are_asked(tmp_path: Path) -> None:
    (tmp_path / "check.yaml").write_text(
        'version: "0.1"\nsteps:\n  - {kind: hitl, name: check, message: "Ship it?"}\n', encoding="utf-8"
    )
    path = write(
        tmp_path,
        'version: "0.1"\n'
        "imports: {check: check.yaml}\n"
        'tools: {review: {workflow: imports.check, description: "Ask a person to check"}}\n'
        "agents:\n"
        "  helper: {model: scripted, tools: [review], max_tool_calls: 2, replies: [done]}\n"
        "steps:\n"
        "  - {kind: step, name: answer, uses: agents.helper}\n",
    )
    explanation = explain_blueprint(load_blueprint(path))
    assert explanation.human == (
        'answer, in each call of review (a sub-workflow; up to 2 calls): check, once: "Ship it?"',
    )


def test_explain_counts_a_sub_workflow_tool_s_model_calls_in_the_cost(tmp_path: Path) -> None:
    (tmp_path / "writer.yaml").write_text(
        'version: "0.1"\n'
        "agents: {w: {model: openai:gpt-4o-mini}}\n"
        "steps:\n  - {kind: step, name: write, uses: agents.w}\n",
        encoding="utf-8",
    )
    path = write(
        tmp_path,
        'version: "0.1"\n'
        "imports: {writer: writer.yaml}\n"
        'tools: {draft: {workflow: imports.writer, description: "Write a draft"}}\n'
        "agents:\n"
        "  helper: {model: scripted, tools: [draft], max_tool_calls: 2, replies: [done]}\n"
        "steps:\n"
        "  - {kind: loop, name: rounds, loop: {max_loops: 3, body: [{kind: step, name: answer, uses: agents.helper}]}}\n",
    )
    explanation = explain_blueprint(load_blueprint(path))
    assert explanation.cost[0] == (
        "At most 6 model calls: answer › draft › write (openai:gpt-4o-mini) up to 6 times."
    )  # 2 calls of the tool in each of 3 iterations


PROGRAMS = """\
version: "0.1"
tools:
  lookup: {command: ["no-such-program", "--id"], description: "Look up."}
  here: {command: ["./lookup.sh"], description: "Look up."}
  there: {command: ["/no/such/folder/lookup"], description: "Look up."}
  shown: {command: ["./lookup.txt"], description: "Look up."}
  found: {command: ["./present.sh"], description: "Look up."}
  on_path: {command: ["present-tool"], description: "Look up."}
  files: {mcp: {command: ["no-such-server"]}}
agents:
  helper: {model: scripted, replies: [ok], tools: [lookup, here, there, shown, found, on_path, files]}
  counter: {command: ["no-such-counter"]}
steps:
  - {kind: step, name: answer, uses: agents.helper}
  - {kind: step, name: count, uses: agents.counter}
"""


def test_a_command_whose_program_this_machine_lacks_is_a_warning_at_its_first_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looked for as a run starts it: a name on PATH (a tool's with flujo's Python's folder first; the hint
    lists the folders searched), a path from the blueprint's folder. A warning (the blueprint is valid): the
    program may be there by the time the run calls it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for file in (bin_dir / "present-tool", tmp_path / "present.sh"):
        file.write_text("#!/bin/sh\necho ok\n")
        file.chmod(0o755)
    (tmp_path / "lookup.txt").write_text("not a program\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{bin_dir}")
    own = os.path.dirname(sys.executable)
    findings = validate_file(write(tmp_path, PROGRAMS))
    assert {f.severity for f in findings} == {"warning"}
    assert [row(f) for f in findings] == [
        (3, 22, "program-not-found", "tool 'lookup': the program 'no-such-program' is not on PATH; a run cannot start it"),
        (4, 20, "program-not-found", f"tool 'here': the program ./lookup.sh does not exist (from {tmp_path.resolve()}); a run cannot start it"),
        (5, 21, "program-not-found", "tool 'there': the program /no/such/folder/lookup does not exist; a run cannot start it"),
        (6, 21, "program-not-found", f"tool 'shown': the program ./lookup.txt is not executable (from {tmp_path.resolve()}); a run cannot start it"),
        (9, 27, "program-not-found", "the MCP server of tool 'files': the program 'no-such-server' is not on PATH; a run cannot start it"),
        (12, 23, "program-not-found", "agent 'counter': the program 'no-such-counter' is not on PATH; a run cannot start it"),
    ]  # fmt: skip
    hints = [f.hint for f in findings]
    searched = f"PATH searched: {own}{os.pathsep}{bin_dir}; install it there, or give the program's absolute path"
    assert hints[0] == hints[4] == searched  # each folder once, flujo's Python's first, as a tool's PATH has it
    assert hints[5] == f"PATH searched: {bin_dir}; install it there, or give the program's absolute path"
    assert hints[2] == "give the path of an installed program, or a program's name on PATH"
    assert hints[3] == 'make it executable (chmod +x), or name its interpreter first: ["python3", ...]'
    load_blueprint(tmp_path / "flow.yaml")  # not an error: the blueprint loads
