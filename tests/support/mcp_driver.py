"""A flujo run whose model calls the test MCP server's ``hang`` tool, which never answers: the process that
tests/core/test_mcp_tools.py interrupts (Ctrl-C) or kills (SIGKILL) mid-call. After a Ctrl-C, once the run
has ended, it prints ``interrupted`` and stays until a line comes on its stdin, so that the test can look for
the server while flujo is still alive. Run as ``python mcp_driver.py [SERVER ARGUMENTS]`` with the repository
on PYTHONPATH."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from core import AgentStep, Engine, Pipeline
from core.agents.offline import ScriptedAgent
from core.steps.kinds import ToolUse
from core.store import MemoryStore
from core.tools.kinds import build_runner_tool
from core.tools.spec import McpServerSpec, ToolSpec

SERVER = Path(__file__).with_name("mcp_server.py")


async def main() -> None:
    server = McpServerSpec(command=(sys.executable, str(SERVER), *sys.argv[1:]))
    source = build_runner_tool(ToolSpec(name="files", mcp=server))
    agent = ScriptedAgent([{"tool": "hang", "arguments": {}}, "never"])
    pipeline = Pipeline(steps=(AgentStep(name="answer", agent=agent, tools=ToolUse(tools=(source,))),))
    await Engine(store=MemoryStore()).run(pipeline, "go")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.stdin.readline()
