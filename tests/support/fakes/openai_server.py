"""A fake LLM server for tests: the OpenAI chat completions API and the Anthropic Messages API.

Stdlib only (``http.server.ThreadingHTTPServer`` in a thread), bound to 127.0.0.1 on a free port, so a
test talks real HTTP without ever leaving the machine. Use the ``fake_llm`` fixture (tests/conftest.py)
or ``with FakeLLM() as fake: ...``.

Routes (``POST``):
    /v1/chat/completions   OpenAI-compatible; SSE chunks when the body has ``"stream": true`` (then a usage
                           chunk when ``stream_options.include_usage``, then ``data: [DONE]``)
    /v1/messages           Anthropic Messages API; typed SSE events when ``"stream": true``; a 400 (as the
                           real API) when the first message is not the user's, without consuming a reply

Scripting (responses are consumed in order, whatever the route)::

    fake.reply("hello", usage=(12, 3))        # text with prompt/completion token counts
    fake.reply({"action": "finish"})          # any non-string value is sent as its JSON text
    fake.reply("slow", delay=2.0)             # answer after a delay (for timeouts)
    fake.reply("a b c", cut_after=2)          # a stream that breaks off after 2 SSE events (incomplete body)
    fake.reply("a b c", cut_after=2, cut="end")    # ... that simply ends there (the connection closes)
    fake.reply("a b c", cut_after=2, cut="reset")  # ... whose connection is reset (TCP RST)
    fake.reply("a b c", end_marker=False)     # a whole stream without its end (finish_reason and [DONE],
                                              # or Anthropic's message_stop), then the connection closes
    fake.reply("a b", finish_reason="length", done=False)   # how an OpenAI stream ends
    fake.reply("done", hold=True)             # a stream sent whole but for its end, then held open:
    fake.held.wait(); ...; fake.let_go()      # the client has the whole answer and still waits
    fake.fail(429, retry_after=0.01)          # an error status (OpenAI or Anthropic error body)
    fake.fail(500, times=2)                   # ... twice
    fake.fail(401, message="bad key")
    fake.reply("", tool_calls=[("add", {"a": 2, "b": 3})])  # a reply that asks for a tool (OpenAI
                                                             # tool_calls, Anthropic tool_use blocks)
    fake.reply("Adding.", tool_calls=[("add", '{"a": 2')])   # arguments given as a text go as they are

With the queue empty the server echoes the last user message (``"echo: <text>"``) with usage (10, 5).

Holding answers back (to act while calls are in flight)::

    fake.hold()                   # requests are received (and recorded) but not answered ...
    fake.wait_for_requests(2)     # ... until two have arrived ...
    fake.release()                # ... and then answered, in any order

Inspection::

    fake.requests                 # every request: FakeRequest(path, headers, body), headers lower-cased
    fake.bodies                   # just the JSON bodies
    fake.last.body["messages"]    # the last request

Wiring an agent to it::

    fake.openai_url               # "http://127.0.0.1:PORT/v1"   (OPENAI_BASE_URL, ollama base_url)
    fake.anthropic_url            # "http://127.0.0.1:PORT"      (ANTHROPIC_BASE_URL)
    fake.settings()               # core.settings.config.Settings with openai/anthropic/ollama pointing here
    fake.env()                    # the environment variables that do the same, for CLI tests
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from core import Settings

FAKE_API_KEY = "sk-test-fake"

Cut = Literal["broken", "end", "reset"]
"""How a stream is cut (``reply(cut_after=N, cut=...)``): ``broken``, a chunked body without its last chunk
(the client sees an incomplete body); ``end``, the connection closes as if the body were complete; ``reset``,
the connection is reset (TCP RST)."""


@dataclass(frozen=True)
class FakeRequest:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class _Scripted:
    text: str | None = None
    status: int = 200
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    chunks: tuple[str, ...] | None = None
    cut_after: int | None = None
    cut: Cut = "broken"
    end_marker: bool = True
    finish_reason: str | None = "stop"
    done: bool = True
    message: str | None = None
    retry_after: float | None = None
    hold: bool = False
    tool_calls: tuple[tuple[str, str, str], ...] = ()  # (id, name, the arguments' JSON text)


class FakeLLM:
    """The fake server. Start with ``start()`` (or ``with``); ``close()`` stops it and joins its thread."""

    def __init__(self) -> None:
        self.requests: list[FakeRequest] = []
        self._queue: deque[_Scripted] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.held = threading.Event()  # a reply queued with hold=True was sent, all but its end
        self._let_go = threading.Event()
        self._open = threading.Event()  # cleared by hold(): answers wait for release()
        self._open.set()
        self._arrived = threading.Condition(self._lock)
        self._calls_made = 0  # tool calls scripted so far: their ids are call_1, call_2, ...
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        # A short poll interval makes close() (shutdown) quick: it waits for the serve loop's next poll.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-llm", daemon=True
        )

    # -- life cycle ------------------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping on a delay
        self._let_go.set()  # and a held reply
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- addresses -------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"{self.anthropic_url}/v1"

    def settings(self, **overrides: Any) -> Settings:
        """Settings whose three providers point at this server, with a fake API key."""
        from core.settings.config import ProviderSettings, Settings
        from core.settings.secret import Secret

        key = Secret(FAKE_API_KEY)
        providers = {
            "openai": ProviderSettings(base_url=self.openai_url, api_key=key),
            "anthropic": ProviderSettings(base_url=self.anthropic_url, api_key=key),
            "ollama": ProviderSettings(base_url=self.openai_url),
        }
        return Settings(**{**providers, **overrides})

    def env(self) -> dict[str, str]:
        """Environment variables that point every provider at this server (for CLI tests)."""
        return {
            "OPENAI_BASE_URL": self.openai_url,
            "OPENAI_API_KEY": FAKE_API_KEY,
            "ANTHROPIC_BASE_URL": self.anthropic_url,
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "OLLAMA_HOST": f"127.0.0.1:{self.port}",
        }

    # -- scripting -------------------------------------------------------------------------------------
    def reply(
        self,
        content: Any,
        *,
        usage: tuple[int, int] = (10, 5),
        delay: float = 0.0,
        chunks: list[str] | None = None,
        cut_after: int | None = None,
        cut: Cut = "broken",
        end_marker: bool = True,
        finish_reason: str | None = "stop",
        done: bool = True,
        hold: bool = False,
        tool_calls: list[tuple[str, Any]] | None = None,
    ) -> FakeLLM:
        """Queue a successful answer. ``usage`` is (input, output) tokens; ``chunks`` fixes the stream
        deltas (default: one per word); ``cut_after`` cuts the stream after that many SSE events, as
        ``cut`` says (``Cut``); ``end_marker=False`` leaves out the events that end a stream (OpenAI's
        ``finish_reason`` chunk and ``data: [DONE]``, Anthropic's ``message_stop``). An OpenAI stream's last
        choice says ``finish_reason`` (None: no such chunk); ``done=False`` leaves out its ``data: [DONE]``.
        ``hold`` (a streamed request): every SSE event but the last (``[DONE]``, Anthropic's ``message_stop``)
        is sent, usage included, then ``held`` is set and the connection is kept open, the stream unfinished,
        until ``let_go()`` or ``close()``: the provider has served the call and the client is still waiting
        for its end. ``tool_calls`` (name, arguments) are the calls the reply asks for, with ids ``call_1``,
        ``call_2``, ... in the order scripted (Anthropic: ``toolu_1`` ...): arguments that are a text are sent
        as they are (OpenAI ``arguments``, Anthropic ``partial_json`` when streamed), anything else as JSON;
        a stream sends each call's arguments in three pieces."""
        text = content if isinstance(content, str) else json.dumps(content)
        pieces = tuple(chunks) if chunks else None
        calls: list[tuple[str, str, str]] = []
        for name, arguments in tool_calls or ():
            self._calls_made += 1
            calls.append(
                (str(self._calls_made), name, arguments if isinstance(arguments, str) else json.dumps(arguments))
            )
        self._push(
            _Scripted(
                text=text,
                usage=usage,
                delay=delay,
                chunks=pieces,
                cut_after=cut_after,
                cut=cut,
                end_marker=end_marker,
                finish_reason=finish_reason,
                done=done,
                hold=hold,
                tool_calls=tuple(calls),
            )
        )
        return self

    def let_go(self) -> None:
        """Let a held reply's connection go (closed without the stream's end)."""
        self._let_go.set()

    def fail(
        self,
        status: int,
        *,
        message: str | None = None,
        retry_after: float | None = None,
        times: int = 1,
        delay: float = 0.0,
    ) -> FakeLLM:
        """Queue ``times`` error answers with this status (and ``Retry-After`` when given)."""
        for _ in range(times):
            self._push(_Scripted(status=status, message=message, retry_after=retry_after, delay=delay))
        return self

    def hold(self) -> FakeLLM:
        """Answer no request until ``release()``: each is received and recorded, then waits."""
        self._open.clear()
        return self

    def release(self) -> FakeLLM:
        """Answer the requests held back, and those that come next, again."""
        self._open.set()
        return self

    def wait_for_requests(self, count: int, *, timeout: float = 120) -> None:
        """Return once ``count`` requests have been received in all; AssertionError after ``timeout``."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= count, timeout=timeout):
                raise AssertionError(f"{len(self.requests)} request(s) arrived, not {count}")

    def _push(self, item: _Scripted) -> None:
        with self._lock:
            self._queue.append(item)

    def _next(self) -> _Scripted | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    # -- inspection ------------------------------------------------------------------------------------
    @property
    def bodies(self) -> list[Any]:
        return [request.body for request in self.requests]

    @property
    def last(self) -> FakeRequest:
        return self.requests[-1]

    @property
    def pending(self) -> int:
        """Scripted responses not consumed yet."""
        with self._lock:
            return len(self._queue)

    def _record(self, request: FakeRequest) -> None:
        with self._arrived:
            self.requests.append(request)
            self._arrived.notify_all()

    def _held(self) -> bool:
        """Wait while answers are held back; True when the server is closing meanwhile (answer nothing)."""
        while not self._open.wait(0.05):
            if self._closing.is_set():
                return True
        return False


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a timeout test) closes its socket while we write: that is expected.
        # Anything else would be a bug in the fake; let socketserver print it.
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler_for(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive state to clean up

        def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
            return None

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            fake._record(FakeRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            anthropic = self.path.rstrip("/").endswith("/v1/messages")
            if not (anthropic or self.path.rstrip("/").endswith("/chat/completions")):
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            if anthropic and _first_role(body) not in (None, "user"):  # as the Messages API rejects it
                self._error(
                    _Scripted(status=400, message='messages: first message must use the "user" role'), anthropic=True
                )
                return
            if fake._held():
                return
            scripted = fake._next() or _Scripted(text=f"echo: {_last_user_text(body)}")
            if scripted.delay and fake._closing.wait(scripted.delay):
                return
            if scripted.status >= 400:
                self._error(scripted, anthropic=anthropic)
                return
            model = body.get("model", "fake") if isinstance(body, dict) else "fake"
            stream = isinstance(body, dict) and body.get("stream") is True
            if anthropic:
                if stream:
                    self._sse(_anthropic_events(scripted, model), scripted)
                else:
                    self._json(200, _anthropic_message(scripted, model))
            elif stream:
                options = body.get("stream_options") or {}
                events = _openai_chunks(scripted, model, usage=bool(options.get("include_usage")))
                self._sse(events, scripted)
            else:
                self._json(200, _openai_completion(scripted, model))

        def _error(self, scripted: _Scripted, *, anthropic: bool) -> None:
            message = scripted.message or f"fake error {scripted.status}"
            kind = {401: "authentication_error", 429: "rate_limit_error"}.get(scripted.status, "api_error")
            payload: dict[str, Any] = (
                {"type": "error", "error": {"type": kind, "message": message}}
                if anthropic
                else {"error": {"message": message, "type": kind, "code": None}}
            )
            headers = {} if scripted.retry_after is None else {"Retry-After": f"{scripted.retry_after:g}"}
            self._json(scripted.status, payload, headers)

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: Iterator[tuple[str | None, str]], scripted: _Scripted) -> None:
            # A stream to be broken uses HTTP/1.1 chunked encoding: closing the socket then is an error the
            # client can see (under HTTP/1.0 a closed connection is simply the end of the body).
            cut_after = scripted.cut_after
            chunked = cut_after is not None and scripted.cut == "broken"
            if chunked:
                self.protocol_version = "HTTP/1.1"
                self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            listed = list(events)
            for sent, (event, data) in enumerate(listed):
                if cut_after is not None and sent >= cut_after:
                    if scripted.cut == "reset":
                        # SO_LINGER with a zero timeout: closing sends a reset, not the end of the stream.
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.connection.close()
                    return  # "broken": no terminating chunk, the body is incomplete; "end": the body ends
                if not scripted.end_marker and _ends_stream(event, data):
                    continue
                if scripted.hold and sent == len(listed) - 1:
                    fake.held.set()
                    fake._let_go.wait()
                    return  # the connection closes with the stream unfinished
                head = f"event: {event}\n" if event else ""
                payload = f"{head}data: {data}\n\n".encode()
                if chunked:
                    payload = f"{len(payload):x}\r\n".encode() + payload + b"\r\n"
                self.wfile.write(payload)
                self.wfile.flush()

    return Handler


def _ends_stream(event: str | None, data: str) -> bool:
    """Whether this SSE event is one that ends a stream: ``[DONE]`` or a chunk with a ``finish_reason``
    (OpenAI), ``message_stop`` (Anthropic)."""
    if event == "message_stop" or data == "[DONE]":
        return True
    if event is not None:
        return False
    choices = json.loads(data).get("choices") or []
    return any(isinstance(choice, dict) and choice.get("finish_reason") for choice in choices)


def _last_user_text(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # Anthropic content blocks
                return "".join(block.get("text", "") for block in content if isinstance(block, dict))
            return str(content)
    return ""


def _pieces(scripted: _Scripted) -> list[str]:
    if scripted.chunks is not None:
        return list(scripted.chunks)
    return re.findall(r"\s*\S+\s*", scripted.text or "") or [scripted.text or ""]


def _openai_calls(scripted: _Scripted) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{number}", "type": "function", "function": {"name": name, "arguments": arguments}}
        for number, name, arguments in scripted.tool_calls
    ]


def _openai_completion(scripted: _Scripted, model: str) -> dict[str, Any]:
    prompt, completion = scripted.usage
    message: dict[str, Any] = {"role": "assistant", "content": scripted.text}
    if scripted.tool_calls:
        message = {"role": "assistant", "content": scripted.text or None, "tool_calls": _openai_calls(scripted)}
    finish = "tool_calls" if scripted.tool_calls else "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _openai_chunks(scripted: _Scripted, model: str, *, usage: bool) -> Iterator[tuple[str | None, str]]:
    def chunk(choices: list[Any], **extra: Any) -> tuple[None, str]:
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model, "choices": choices}
        return None, json.dumps({**base, **extra})

    yield chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
    for piece in _pieces(scripted):
        yield chunk([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
    for index, call in enumerate(_openai_calls(scripted)):
        function = call["function"]
        start = {**call, "index": index, "function": {"name": function["name"], "arguments": ""}}
        yield chunk([{"index": 0, "delta": {"tool_calls": [start]}, "finish_reason": None}])
        for piece in _thirds(function["arguments"]):
            fragment = {"index": index, "function": {"arguments": piece}}
            yield chunk([{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}])
    if scripted.finish_reason is not None:
        finish = "tool_calls" if scripted.tool_calls and scripted.finish_reason == "stop" else scripted.finish_reason
        yield chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
    if usage:
        prompt, completion = scripted.usage
        yield chunk(
            [],
            usage={
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        )
    if scripted.done:
        yield None, "[DONE]"


def _thirds(text: str) -> list[str]:
    """``text`` in three pieces (fewer when it is shorter), as a stream sends a call's arguments."""
    size = max(1, -(-len(text) // 3))
    return [text[start : start + size] for start in range(0, len(text), size)]


def _first_role(body: Any) -> Any:
    messages = body.get("messages") if isinstance(body, dict) else None
    first = messages[0] if isinstance(messages, list) and messages else None
    return first.get("role") if isinstance(first, dict) else None


def _anthropic_uses(scripted: _Scripted) -> list[dict[str, Any]]:
    uses = []
    for number, name, arguments in scripted.tool_calls:
        try:
            given = json.loads(arguments)
        except ValueError:
            given = {}  # the API always sends an object; only a stream can carry a broken one
        uses.append({"type": "tool_use", "id": f"toolu_{number}", "name": name, "input": given})
    return uses


def _anthropic_message(scripted: _Scripted, model: str) -> dict[str, Any]:
    prompt, completion = scripted.usage
    text = [{"type": "text", "text": scripted.text}] if scripted.text or not scripted.tool_calls else []
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [*text, *_anthropic_uses(scripted)],
        "stop_reason": "tool_use" if scripted.tool_calls else "end_turn",
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def _anthropic_events(scripted: _Scripted, model: str) -> Iterator[tuple[str | None, str]]:
    prompt, completion = scripted.usage
    message = {
        **_anthropic_message(scripted, model),
        "content": [],
        "usage": {"input_tokens": prompt, "output_tokens": 1},
    }
    yield "message_start", json.dumps({"type": "message_start", "message": message})
    index = 0
    if scripted.text or not scripted.tool_calls:
        yield (
            "content_block_start",
            json.dumps({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )
        yield "ping", json.dumps({"type": "ping"})
        for piece in _pieces(scripted):
            delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
            yield "content_block_delta", json.dumps(delta)
        yield "content_block_stop", json.dumps({"type": "content_block_stop", "index": 0})
        index = 1
    for use, (_, _, arguments) in zip(_anthropic_uses(scripted), scripted.tool_calls, strict=True):
        block = {**use, "input": {}}
        yield "content_block_start", json.dumps({"type": "content_block_start", "index": index, "content_block": block})
        for piece in _thirds(arguments):
            delta = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            yield "content_block_delta", json.dumps(delta)
        yield "content_block_stop", json.dumps({"type": "content_block_stop", "index": index})
        index += 1
    stop = "tool_use" if scripted.tool_calls else "end_turn"
    yield (
        "message_delta",
        json.dumps(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": completion},
            }
        ),
    )
    yield "message_stop", json.dumps({"type": "message_stop"})
