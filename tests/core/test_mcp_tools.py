"""``mcp:`` tools (core.tools.mcp_tool) against a real MCP stdio server written with the SDK
(tests/support/mcp_server.py): the server's tools are offered named as it names them (``include`` keeps some),
called, and their errors read by the model; a destructive one asks first; one server per run, stopped when the
run ends, however it ends, and never outliving flujo (Ctrl-C, SIGKILL); the tools it listed are kept with the
step, so a resumed step is told the same ones; a server that will not start, or dies, is one line."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core import AgentStep, ConfigError, Engine, Pipeline, RunError, StepRecord
from core.agents.offline import ScriptedAgent
from core.model.calls import AgentCall, ChatMessage
from core.model.tools import ModelTurn, ToolDef, ToolMode
from core.ports import ToolSource
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from core.testing import ScriptedHuman
from core.tools.kinds import build_runner_tool
from core.tools.spec import McpServerSpec, ToolSpec
from tests.support.cli_helpers import ROOT

SERVER = ROOT / "tests" / "support" / "mcp_server.py"
DRIVER = ROOT / "tests" / "support" / "mcp_driver.py"
ALL_TOOLS = {"read_file", "delete_file", "add", "fail", "pid", "hang", "log", "crash"}
ON_LINUX = sys.platform.startswith("linux")


def files(*args: str, include: Sequence[str] = (), approve: Any = None, command: Sequence[str] = ()) -> ToolSource:
    server = McpServerSpec(command=tuple(command) or (sys.executable, str(SERVER), *args))
    source = build_runner_tool(ToolSpec(name="files", mcp=server, include=tuple(include), approve=approve))
    assert isinstance(source, ToolSource)
    return source


class Seeing(ScriptedAgent):
    """A scripted model that keeps the tools each of its turns was offered."""

    def __init__(self, replies: Sequence[Any]) -> None:
        super().__init__(replies)
        self.offered: list[list[ToolDef]] = []

    async def tool_turn(
        self, call: AgentCall, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> ModelTurn:
        self.offered.append(list(tools))
        return await super().tool_turn(call, messages, tools, mode)


def pipeline(agent: ScriptedAgent, *sources: ToolSource, steps: Sequence[str] = ("answer",)) -> Pipeline:
    use = ToolUse(tools=sources, agent="helper")
    return Pipeline(steps=tuple(AgentStep(name=name, agent=agent, tools=use) for name in steps))


async def records(store: MemoryStore, run_id: str) -> dict[str, StepRecord]:
    return {record.path: record for record in await store.steps(run_id)}


def gone(pid: int, timeout: float = 60.0) -> bool:
    """Whether process ``pid`` has ended (waiting for that, up to ``timeout`` seconds, on a pidfd: an event)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


async def test_the_server_s_tools_are_offered_as_it_names_them_and_called() -> None:
    agent = Seeing([{"tool": "add", "arguments": {"a": 2, "b": 3}}, "It is 5."])
    store = MemoryStore()
    source = files()
    outcome = await Engine(store=store).run(pipeline(agent, source), "2 + 3?")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "It is 5."
    offered = {definition.name: definition for definition in agent.offered[0]}
    assert set(offered) == ALL_TOOLS
    assert offered["add"].description == "Add two integers."
    assert offered["add"].input_schema["required"] == ["a", "b"]
    steps = await records(store, outcome.run_id)
    assert steps["answer/tool/1"].name == "add"
    assert steps["answer/tool/1"].output["content"] == "5" and steps["answer/tool/1"].output["error"] is False
    listed = steps["answer/model/1"].output["listed"]  # what the server listed, kept with the step's first turn
    assert list(listed) == [source.source] and {tool["name"] for tool in listed[source.source]} == ALL_TOOLS


async def test_include_keeps_the_tools_it_names_in_its_order() -> None:
    Path("notes.txt").write_text("hello from a file", encoding="utf-8")  # the server runs in flujo's directory
    agent = Seeing([{"tool": "read_file", "arguments": {"path": "notes.txt"}}, "read it"])
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline(agent, files(include=["read_file", "add"])), "read notes.txt")
    assert outcome.status == "completed", outcome.error
    assert [definition.name for definition in agent.offered[0]] == ["read_file", "add"]
    steps = await records(store, outcome.run_id)
    assert steps["answer/tool/1"].output["content"] == "hello from a file"
    (listing,) = steps["answer/model/1"].output["listed"].values()  # only what the step offers is kept
    assert sorted(tool["name"] for tool in listing) == ["add", "read_file"]


async def test_include_of_a_tool_the_server_does_not_have_fails_the_run_in_one_line() -> None:
    outcome = await Engine(store=MemoryStore()).run(pipeline(Seeing(["hi"]), files(include=["read_fil"])), "go")
    assert outcome.status == "failed" and isinstance(outcome.error, ConfigError)
    message = outcome.error.message
    assert message.startswith("tools.files: include names 'read_fil', which the MCP server") and "\n" not in message
    assert "read_file" in message  # what it has


async def test_two_tools_of_one_name_fail_the_step_in_one_line() -> None:
    other = build_runner_tool(ToolSpec(name="calc", mcp=McpServerSpec(command=(sys.executable, str(SERVER)))))
    assert isinstance(other, ToolSource)
    outcome = await Engine(store=MemoryStore()).run(pipeline(Seeing(["hi"]), files(include=["add"]), other), "go")
    assert outcome.status == "failed" and isinstance(outcome.error, ConfigError)
    assert outcome.error.message == "agent 'helper' is given two tools named 'add'"


async def test_a_tool_s_error_result_is_an_error_the_model_reads() -> None:
    agent = Seeing([{"tool": "fail", "arguments": {"reason": "the disk is full"}}, "It failed."])
    store = MemoryStore()
    outcome = await Engine(store=store).run(pipeline(agent, files()), "go")
    assert outcome.status == "completed", outcome.error
    output = (await records(store, outcome.run_id))["answer/tool/1"].output
    assert output["error"] is True and "the disk is full" in output["content"]


async def test_a_destructive_tool_asks_first_unless_the_blueprint_says_never() -> None:
    target = Path("old.txt")
    target.write_text("keep me", encoding="utf-8")
    replies: list[Any] = [{"tool": "delete_file", "arguments": {"path": "old.txt"}}, "done"]
    store = MemoryStore()
    declined = await Engine(store=store, human=ScriptedHuman(["n"])).run(pipeline(Seeing(replies), files()), "go")
    assert declined.status == "completed", declined.error
    steps = await records(store, declined.run_id)
    assert steps["answer/tool/1/approve"].name == "approve:delete_file" and steps["answer/tool/1/approve"].output == "n"
    assert steps["answer/tool/1"].output["declined"] is True and target.exists()
    # approve: never: no question (nobody would answer it: the run would pause), the file is deleted
    allowed = await Engine(store=store).run(pipeline(Seeing(replies), files(approve="never")), "go")
    assert allowed.status == "completed", allowed.error
    assert not target.exists()


async def test_the_hints_decide_who_asks_and_the_blueprint_s_approve_decides_for_all() -> None:
    source = files()
    listing = [
        {"name": "read", "input_schema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "wipe", "input_schema": {"type": "object"}, "annotations": {"destructiveHint": True}},
        {"name": "odd", "annotations": {"destructiveHint": True, "readOnlyHint": True}},
        {"name": "plain"},
    ]
    assert {tool.name: tool.approve for tool in source.tools(listing)} == {
        "read": "never", "wipe": "ask", "odd": "never", "plain": "never",
    }  # fmt: skip
    assert {tool.approve for tool in files(approve="ask").tools(listing)} == {"ask"}
    assert {tool.approve for tool in files(approve="never").tools(listing)} == {"never"}


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (
            (sys.executable, str(SERVER), "--broken"),
            "did not start: it exited with status 3: cannot start: no configuration found",
        ),
        (("no-such-mcp-server-flujo",), "cannot start the MCP server no-such-mcp-server-flujo"),
    ],
    ids=["exits-at-once", "no-such-program"],
)
async def test_a_server_that_will_not_start_fails_the_run_in_one_line(command: Sequence[str], says: str) -> None:
    outcome = await Engine(store=MemoryStore()).run(pipeline(Seeing(["hi"]), files(command=command)), "go")
    assert outcome.status == "failed" and isinstance(outcome.error, ConfigError)
    assert outcome.error.message.startswith("tools.files: ") and says in outcome.error.message
    assert "\n" not in outcome.error.message and outcome.error.hint
    assert outcome.failed_step == "answer"


async def test_a_server_that_dies_during_a_call_fails_the_run_in_one_line() -> None:
    outcome = await Engine(store=MemoryStore()).run(pipeline(Seeing([{"tool": "crash"}, "never"]), files()), "go")
    assert outcome.status == "failed" and isinstance(outcome.error, RunError)
    message = outcome.error.message
    assert message.startswith("tools.files: the MCP server ") and "\n" not in message
    assert "stopped during a call of crash: it exited with status 5: the server crashed on purpose" in message


async def test_a_server_that_dies_is_said_with_what_it_wrote_during_that_call_not_its_earlier_logs() -> None:
    agent = Seeing([{"tool": "log"}, {"tool": "crash"}, "never"])
    outcome = await Engine(store=MemoryStore()).run(pipeline(agent, files()), "go")
    assert outcome.status == "failed" and isinstance(outcome.error, RunError)
    message = outcome.error.message
    assert message.endswith("stopped during a call of crash: it exited with status 5: the server crashed on purpose")


async def test_one_server_serves_the_whole_run_and_stops_when_it_ends() -> None:
    agent = Seeing([{"tool": "pid"}, "first", {"tool": "pid"}, "second"])
    # Two blueprint entries of one server (a distinct include each), in two steps: one server.
    one = ToolSpec(name="files", mcp=McpServerSpec(command=(sys.executable, str(SERVER))), include=("pid",))
    two = ToolSpec(name="more", mcp=one.mcp, include=("pid", "add"))
    steps = tuple(
        AgentStep(name=name, agent=agent, tools=ToolUse(tools=(build_runner_tool(spec),)))
        for name, spec in (("one", one), ("two", two))
    )
    store = MemoryStore()
    outcome = await Engine(store=store).run(Pipeline(steps=steps), "go")
    assert outcome.status == "completed", outcome.error
    done = await records(store, outcome.run_id)
    pids = {int(done[f"{step}/tool/1"].output["content"]) for step in ("one", "two")}
    assert len(pids) == 1
    if ON_LINUX:
        assert gone(pids.pop())


async def test_a_resumed_step_is_offered_what_the_server_listed_before() -> None:
    Path("old.txt").write_text("x", encoding="utf-8")
    replies: list[Any] = [{"tool": "pid"}, {"tool": "delete_file", "arguments": {"path": "old.txt"}}, "deleted"]
    store = MemoryStore()
    first = await Engine(store=store).run(pipeline(Seeing(replies), files()), "go", run_id="m1")
    assert first.status == "paused" and first.pause is not None and first.pause.path == "answer/tool/2/approve"
    if ON_LINUX:  # the paused run stopped its server
        assert gone(int((await records(store, "m1"))["answer/tool/1"].output["content"]))
    Path("more_tools").write_text("", encoding="utf-8")  # the server now lists one more tool
    fresh = Seeing(["hi"])
    assert (await Engine(store=MemoryStore()).run(pipeline(fresh, files()), "go")).status == "completed"
    assert {definition.name for definition in fresh.offered[0]} == ALL_TOOLS | {"multiply"}
    agent = Seeing(replies)
    resumed = await Engine(store=store, human=ScriptedHuman(["y"])).resume(pipeline(agent, files()), "m1")
    assert resumed.status == "completed", resumed.error
    assert {definition.name for definition in agent.offered[0]} == ALL_TOOLS  # as the step was told before
    assert not Path("old.txt").exists()  # the call, allowed now, started the server again


def test_a_run_without_tools_imports_neither_the_sdk_nor_the_mcp_code(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(
        'version: "0.1"\nagents:\n  a: {model: scripted, replies: [hello]}\n'
        "steps:\n  - {kind: step, name: s, uses: agents.a}\n",
        encoding="utf-8",
    )
    loaded = "[m for m in ('mcp', 'mcp_types', 'core.tools.mcp_tool') if m in sys.modules]"
    code = (
        f"import atexit, sys; atexit.register(lambda: print('LOADED', {loaded}, file=sys.stderr)); "
        "from flujo_cli.main import main; main()"
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(tmp_path / "s.db")}
    done = subprocess.run(
        [sys.executable, "-c", code, "run", str(path), "--input", "hi"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stderr, done.stderr
    # The same check sees them when an MCP tool is built.
    code = (
        "import sys; from core.tools.kinds import build_runner_tool; from core.tools.spec import McpServerSpec, "
        "ToolSpec; build_runner_tool(ToolSpec(name='f', mcp=McpServerSpec(command=('x',)))); "
        f"print({loaded})"
    )
    built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert built.stdout.strip() == "['mcp', 'mcp_types', 'core.tools.mcp_tool']", built.stderr


def test_without_the_mcp_package_an_mcp_tool_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None; from core.model.errors import ConfigError; "
        "from core.tools.kinds import build_runner_tool; from core.tools.spec import McpServerSpec, ToolSpec\n"
        "try:\n    build_runner_tool(ToolSpec(name='files', mcp=McpServerSpec(command=('x',))))\n"
        "except ConfigError as error:\n    print(error.message); print(error.hint)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.stdout.splitlines() == [
        "tools.files is an MCP server, and MCP needs the mcp package, which is not installed",
        "pip install 'flujo-runner[mcp]'",
    ], done.stderr


def server_pid(fifo: Path, driver: subprocess.Popen[str]) -> int:
    """The pid the server's ``hang`` tool writes to ``fifo`` once the call is in flight (waiting for it: an
    event; the driver's end is the other event that ends the wait)."""
    fd = os.open(fifo, os.O_RDWR)  # on Linux, opening a FIFO for reading and writing waits for no writer
    try:
        while not select.select([fd], [], [], 1.0)[0]:
            if driver.poll() is not None:
                assert driver.stderr is not None
                raise AssertionError(f"the run ended before the tool was called: {driver.stderr.read()}")
        return int(os.read(fd, 64))
    finally:
        os.close(fd)


@pytest.mark.slow
@pytest.mark.skipif(not ON_LINUX, reason="the parent-death signal and pidfd are Linux's")
@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_no_server_outlives_flujo(tmp_path: Path, how: str) -> None:
    fifo = tmp_path / "pid.fifo"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_TEST_MCP_FIFO": str(fifo)}
    with subprocess.Popen(
        [sys.executable, str(DRIVER), "--stubborn"],  # a server that does not leave when its stdin ends
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env,
    ) as driver:  # fmt: skip
        pid: int | None = None
        try:
            pid = server_pid(fifo, driver)  # the server is inside the call
            if how == "ctrl-c":
                driver.send_signal(signal.SIGINT)
                assert driver.stdout is not None and driver.stdout.readline().strip() == "interrupted"
                assert gone(pid)  # flujo, still running, stopped it
            else:
                driver.kill()  # SIGKILL: flujo cannot clean up; the kernel's parent-death signal ends the server
                driver.wait()
                assert gone(pid)
        finally:
            if pid is not None and not gone(pid, timeout=0):  # a failed check leaves no server behind
                os.kill(pid, signal.SIGKILL)
            if driver.poll() is None:
                driver.communicate("\n", timeout=120)
