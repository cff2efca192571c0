"""A real MCP server over stdio, written with the official SDK (``mcp``), for the tests of flujo's ``mcp:``
tools (tests/core/test_mcp_tools.py). Run as ``python mcp_server.py [--broken]``.

Its tools: ``read_file`` (read-only), ``delete_file`` (destructive: flujo asks first), ``add``, ``fail`` (an
error result), ``pid`` (its process id), ``hang`` (writes its process id to the FIFO named by
``FLUJO_TEST_MCP_FIFO``, then never answers) and ``crash`` (the server dies, saying so on stderr). With a file
``more_tools`` in its working directory it also lists ``multiply`` (a server that changed). ``--broken`` exits
at once with status 3, as a server that will not start; ``--stubborn`` does not leave when its stdin ends (only
a signal ends it), as some servers do.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

server = MCPServer("flujo-test-files")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_file(path: str) -> str:
    """Read a text file."""
    return Path(path).read_text(encoding="utf-8")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_file(path: str) -> str:
    """Delete a file."""
    Path(path).unlink()
    return f"deleted {path}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Fail, giving the reason (an anticipated failure: the SDK passes its message on)."""
    raise ToolError(reason)


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
async def hang() -> str:
    """Tell the test this server's process id, then never answer."""
    fifo = os.environ.get("FLUJO_TEST_MCP_FIFO")
    if fifo:
        with open(fifo, "w", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
    await anyio.sleep_forever()
    return "never"


@server.tool()
def log() -> str:
    """Log a few lines on stderr (as the SDK logs a tool's crash), then answer."""
    print("an earlier problem, logged\n  with a box\n  of lines", file=sys.stderr, flush=True)
    return "logged"


@server.tool()
def crash() -> str:
    """The server dies."""
    print("the server crashed on purpose", file=sys.stderr, flush=True)
    os._exit(5)


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


if __name__ == "__main__":
    if "--broken" in sys.argv:
        print("cannot start: no configuration found", file=sys.stderr)
        sys.exit(3)
    if Path("more_tools").exists():
        server.add_tool(multiply)
    try:
        server.run()
    finally:
        if "--stubborn" in sys.argv:  # however its session ended (its stdin, or its stdout, gone)
            threading.Event().wait()
