"""``mcp:`` tools: the tools of an MCP server over stdio, through the official ``mcp`` SDK (the ``mcp`` extra).

Imported only when a blueprint has an ``mcp:`` tool (``core.tools.kinds``): a run without one never imports
the SDK.

A ``McpSource`` is one ``mcp:`` entry of a blueprint: it lists the server's tools (``include`` keeps those it
names) and makes a ``McpTool`` of each, named as the server names it. A tool the server marks destructive
(``destructiveHint`` true, ``readOnlyHint`` not true) asks the person first unless the blueprint says
``approve: never``; the blueprint's ``approve`` applies to all the server's tools when given.

One server runs per distinct ``McpServerSpec`` per run: started on first use (the step's listing, or the first
call of a resumed step) and held in the run's ``ToolSessions``, which the engine closes when the run ends,
however it ends (finished, paused, failed, Ctrl-C). It is started like a ``command:`` agent's program
(``core.agents.child_process.start_command``): in a process group of its own, with a parent-death signal on
Linux, so that it never outlives flujo, even when flujo is killed with SIGKILL (it also reads end-of-file on
its stdin then). Stopping it closes its stdin, waits a moment for it to leave, then kills its process group.

The SDK speaks to it over a transport of flujo's own (``_Pipes``: newline-delimited JSON-RPC over the
process's pipes), so that the process is flujo's to start and to end, its stderr is kept for messages, and a
message longer than the setting ``bounds.agent_output_max_bytes`` ends the server instead of memory.

A server that will not start is a ``ConfigError``, one that dies a ``RunError``: one line each, with the tail
of its stderr, and the run stops. A call the server answers with ``isError`` (or a protocol error, or no
answer within the tool's ``timeout``) is an error outcome for the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from core.agents.child_process import STDERR_TAIL_CHARS, kill_group, start_command
from core.agents.script import DEFAULT_COMMAND_TIMEOUT_S
from core.model.errors import ConfigError, RunError
from core.model.tools import Approve, ToolCallContext, ToolDef, ToolOutcome, result_text
from core.ports import Tool, ToolSessions
from core.settings.config import tool_environment
from core.text.bounds import current_bounds
from core.tools.spec import DefinedTool, McpServerSpec, ToolSpec

# The SDK logs what it cannot handle; flujo says it in its own words (with --debug, a handler shows the SDK's).
logging.getLogger("mcp").addHandler(logging.NullHandler())

# What the SDK's client reads from and writes to (its transport's streams).
_Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]

START_TIMEOUT_S = 60.0  # for the server to answer the handshake (a first `npx`/`uvx` start may download)
STOP_GRACE_S = 2.0  # for the server to leave after its stdin closes, before its process group is killed
_CHUNK = 65536


class McpSource:
    """An ``mcp:`` entry of a blueprint (``core.ports.ToolSource``): the tools its server lists."""

    def __init__(self, spec: ToolSpec) -> None:
        if spec.mcp is None or not spec.mcp.command:
            raise ConfigError(
                f"tools.{spec.name}: mcp.command is empty", hint='give an argv list, e.g. ["python3", "server.py"]'
            )
        self.spec = spec
        self.server = spec.mcp
        self.shown = shlex.join(spec.mcp.command)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def source(self) -> str:
        """``mcp: <command line>``; a hash of the environment and the directory when they are given (the
        environment may hold secrets, which the journal's key never shows)."""
        extra = ""
        if self.server.env or self.server.cwd:
            digest = hashlib.sha256(f"{self.server.key}\x02{self.server.cwd or ''}".encode()).hexdigest()
            extra = f" ({digest[:12]})"
        return f"mcp: {self.shown}{extra}"

    async def listing(self, sessions: ToolSessions, run_id: str) -> list[dict[str, Any]]:
        server = await running(self, sessions, run_id)
        return await server.listing()

    def tools(self, listing: Sequence[Mapping[str, Any]]) -> list[Tool]:
        offered = {str(entry.get("name")): entry for entry in listing}
        names = self.spec.include or tuple(offered)
        missing = [name for name in names if name not in offered]
        if missing:
            have = ", ".join(sorted(offered)) or "none"
            raise ConfigError(
                f"tools.{self.name}: include names {', '.join(map(repr, missing))}, which the MCP server "
                f"{self.shown} does not offer (it offers: {have})",
                hint=f"correct tools.{self.name}.include",
            )
        return [McpTool(self, _definition(offered[name]), self._approve(offered[name])) for name in names]

    def _approve(self, entry: Mapping[str, Any]) -> Approve:
        if self.spec.approve is not None:
            return self.spec.approve
        hints = entry.get("annotations")
        hints = hints if isinstance(hints, Mapping) else {}
        return "ask" if hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True else "never"


class McpTool(DefinedTool):
    """One tool of an MCP server (``core.ports.Tool``), as its server listed it."""

    def __init__(self, source: McpSource, definition: ToolDef, approve: Approve) -> None:
        self.source = source
        self._definition = definition
        self._approve = approve

    async def call(self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions) -> ToolOutcome:
        server = await running(self.source, sessions, where.run_id)
        timeout = self.source.spec.timeout
        return await server.call(self.name, dict(arguments), DEFAULT_COMMAND_TIMEOUT_S if timeout is None else timeout)


def _definition(entry: Mapping[str, Any]) -> ToolDef:
    schema = entry.get("input_schema")
    description = entry.get("description")
    return ToolDef(
        str(entry.get("name")),
        description if isinstance(description, str) else "",
        schema if isinstance(schema, Mapping) else {"type": "object", "properties": {}},
    )


async def running(source: McpSource, sessions: ToolSessions, run_id: str) -> McpServer:
    """The server of ``source`` in this run, started now if it is not yet (one per distinct server spec)."""
    key = f"mcp:{source.server.key}\x02{source.server.cwd or ''}"
    server = sessions.get(key)
    if not isinstance(server, McpServer):
        server = McpServer(source.server, owner=f"tools.{source.name}", shown=source.shown)
        sessions.put(key, server, server.aclose)
    await server.start(run_id)
    return server


class McpServer:
    """One running MCP server and the SDK's client of it. ``start`` once (later calls wait for the first, and
    get its failure again); ``aclose`` stops it. The client lives in a task of its own, which enters and leaves
    the SDK's context (anyio wants both in one task), while the calls come from the steps' tasks."""

    def __init__(self, spec: McpServerSpec, *, owner: str, shown: str) -> None:
        self.spec = spec
        self.owner = owner
        self.shown = shown
        self.process: asyncio.subprocess.Process | None = None
        self.stderr = b""  # the tail of what the server wrote to stderr
        self._stderr_read = 0  # how many bytes it wrote there in all
        self.problem: str | None = None  # why flujo ended the server, when it did
        self._handshake: str | None = None  # why the handshake failed, when it did
        self._client: Client | None = None
        self._failure: ConfigError | None = None
        self._listed: list[dict[str, Any]] | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr_task: asyncio.Task[None] | None = None

    async def start(self, run_id: str) -> None:
        """Start the server and its client (once): ConfigError, one line, when it will not start."""
        async with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._client is not None:
                return
            env = tool_environment({**self.spec.env, "FLUJO_RUN_ID": run_id})
            try:
                process = await start_command(self.spec.command, env=env, cwd=self.spec.cwd)
            except OSError as exc:
                self._failure = ConfigError(
                    f"{self.owner}: cannot start the MCP server {self.shown}: {exc.strerror or exc}",
                    hint="check that the program exists and is executable (is it on PATH?), and the mcp: cwd",
                )
                raise self._failure from None
            self.process = process
            self._stderr_task = asyncio.create_task(self._read_stderr(process))
            self._task = asyncio.create_task(self._serve(process))
            try:
                await asyncio.wait_for(self._ready.wait(), START_TIMEOUT_S)
            except TimeoutError:
                self._task.cancel()
                self._failure = ConfigError(
                    f"{self.owner}: the MCP server {self.shown} did not answer within {START_TIMEOUT_S:g}s"
                    + self._said(),
                    hint="check that the command starts an MCP server that speaks on stdin and stdout",
                )
                raise self._failure from None
            if self._client is None:  # the client's task ended before the handshake did
                await self._ended()
                self._failure = ConfigError(
                    f"{self.owner}: the MCP server {self.shown} did not start: {self._why()}",
                    hint="run its command yourself to see why, or check that it is an MCP server on stdio",
                )
                raise self._failure

    async def _serve(self, process: asyncio.subprocess.Process) -> None:
        """Hold the SDK's client until ``aclose``; the process group is killed however this ends."""
        try:
            async with Client(_pipes(self, process), cache=None) as client:
                self._client = client
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # the handshake failed, or the connection broke: ``start`` and the calls say so
            if not self._ready.is_set():
                self._handshake = _words(exc)
        finally:
            self._ready.set()
            kill_group(process)

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        stderr = process.stderr
        assert stderr is not None
        while chunk := await stderr.read(_CHUNK):
            self.stderr = (self.stderr + chunk)[-4 * STDERR_TAIL_CHARS :]
            self._stderr_read += len(chunk)

    async def _ended(self) -> None:
        """Wait (a moment at most) for the server's exit and the end of its stderr, to tell why it stopped."""
        if self.process is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), STOP_GRACE_S)
        if self._stderr_task is not None:
            await asyncio.wait([self._stderr_task], timeout=STOP_GRACE_S)

    def _why(self, since: int = 0) -> str:
        """Why the server is gone, in words, with the tail of its stderr (of what it wrote after it had written
        ``since`` bytes there, when it wrote anything since: an earlier call's logged error is not why)."""
        status = self.process.returncode if self.process is not None else None
        if self.problem is not None:
            words = self.problem
        elif status is not None and status >= 0:
            words = f"it exited with status {status}"
        elif self._handshake is not None:
            words = f"the MCP handshake failed ({self._handshake})"
        elif status is not None:
            words = f"it was ended by signal {-status}"
        else:
            words = "it stopped answering"
        return words + self._said(since)

    def _said(self, since: int = 0) -> str:
        written = self._stderr_read - since
        recent = self.stderr[-written:] if 0 < written < len(self.stderr) else self.stderr
        tail = recent.decode(errors="replace").strip()[-STDERR_TAIL_CHARS:]
        return f": {tail}" if tail else ""

    def _lost(self, exc: Exception) -> bool:
        """Whether ``exc`` means the connection is gone (the server died, or flujo ended it)."""
        if self.problem is not None or (self.process is not None and self.process.returncode is not None):
            return True
        if isinstance(exc, MCPError):
            return exc.code == mcp_types.CONNECTION_CLOSED
        return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream)

    async def _died(self, doing: str, since: int = 0) -> RunError:
        await self._ended()
        return RunError(
            f"{self.owner}: the MCP server {self.shown} stopped {doing}: {self._why(since)}",
            hint="run the server's command yourself to see why it stops",
        )

    async def listing(self) -> list[dict[str, Any]]:
        """The server's tools as plain data (asked once per run: changes to them later are not followed)."""
        if self._listed is not None:
            return self._listed
        client = self._client
        assert client is not None
        listed: list[dict[str, Any]] = []
        cursor: str | None = None
        try:
            while True:
                page = await client.list_tools(cursor=cursor)
                listed.extend(_plain_tool(tool) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        except Exception as exc:
            if self._lost(exc):
                raise await self._died("while listing its tools") from None
            raise RunError(
                f"{self.owner}: the MCP server {self.shown} did not list its tools: {_words(exc)}",
                hint="check the server with an MCP inspector",
            ) from None
        self._listed = listed
        return listed

    async def call(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolOutcome:
        """One call: its result, or an error outcome; RunError when the server has died."""
        client = self._client
        assert client is not None
        before = self._stderr_read  # what the server says as it dies in this call is why, not earlier logs
        try:
            result = await client.call_tool(name, arguments, read_timeout_seconds=timeout)
        except Exception as exc:
            if self._lost(exc):
                raise await self._died(f"during a call of {name}", since=before) from None
            if isinstance(exc, MCPError) and exc.code == mcp_types.REQUEST_TIMEOUT:
                return ToolOutcome(f"Error: {name} did not answer within {timeout:g}s", error=True)
            return ToolOutcome(f"Error: {name}: {_words(exc)}", error=True)
        return _outcome(result)

    async def aclose(self) -> None:
        """Stop the server: its client leaves (``_pipes`` closes its stdin, waits a moment, kills its group)."""
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=2 * STOP_GRACE_S + 1)
            task.cancel()  # still leaving: its own ``finally`` kills the group as it ends
        elif task is not None and not task.cancelled():
            task.exception()  # retrieved: what ended it was said already (``start``, a call), not by asyncio
        if self.process is not None:
            kill_group(self.process)
        if self._stderr_task is not None:
            self._stderr_task.cancel()


@contextlib.asynccontextmanager
async def _pipes(server: McpServer, process: asyncio.subprocess.Process) -> AsyncIterator[_Streams]:
    """The SDK's transport over the server's stdin and stdout: one JSON-RPC message per line each way. Leaving
    it stops the server (``_stop``)."""
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None
    limit = current_bounds().agent_output_max_bytes
    incoming_writer, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with incoming_writer:
            pending = bytearray()
            while chunk := await stdout.read(_CHUNK):
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    pending += chunk[start:end]
                    start = end + 1
                    if len(pending) > limit:
                        break
                    message = _message(bytes(pending))
                    pending.clear()
                    if message is None:  # anything else on stdout (a stray print) is skipped
                        continue
                    try:
                        await incoming_writer.send(message)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the client has left
                        return
                else:
                    pending += chunk[start:]
                if len(pending) > limit:
                    server.problem = (
                        f"flujo ended it: it sent a message over {limit:,} bytes"
                        " (the setting bounds.agent_output_max_bytes)"
                    )
                    kill_group(process)
                    return

    async def write() -> None:
        async with outgoing_reader:
            async for item in outgoing_reader:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
                except OSError:  # it is gone (a broken pipe): reading sees the end
                    return

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
            group.cancel_scope.cancel()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Close the server's stdin (an MCP server leaves then), wait a moment, kill what is left of its group."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    with anyio.move_on_after(STOP_GRACE_S):
        await process.wait()
    kill_group(process)
    with anyio.move_on_after(STOP_GRACE_S):
        await process.wait()


def _message(line: bytes) -> SessionMessage | None:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        return None


def _plain_tool(tool: mcp_types.Tool) -> dict[str, Any]:
    """A listed tool as the journal keeps it: name, description, input schema, and the hints flujo reads."""
    entry: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description or "",
        "input_schema": tool.input_schema,
    }
    hints = tool.annotations
    if hints is not None:
        read = {"readOnlyHint": hints.read_only_hint, "destructiveHint": hints.destructive_hint}
        entry["annotations"] = {key: value for key, value in read.items() if value is not None}
    return entry


def _outcome(result: mcp_types.CallToolResult) -> ToolOutcome:
    """A call's result as the model reads it: its text blocks (others named), or its structured content."""
    texts = [_block_text(block) for block in result.content]
    structured = result.structured_content
    text = "\n".join(texts) if texts else ("" if structured is None else result_text(structured))
    return ToolOutcome(text, structured if structured is not None else text, error=result.is_error)


def _block_text(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource):
        text = getattr(block.resource, "text", None)
        return text if isinstance(text, str) else f"[resource {block.resource.uri}]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource {block.uri}]"
    return f"[{block.type}: {block.mime_type}]"  # an image or a sound: the model is told there is one


def _words(exc: BaseException) -> str:
    """An exception in one line (the first of a group's)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
