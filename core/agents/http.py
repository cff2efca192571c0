"""The HTTP transport the model providers share: JSON POSTs and SSE streams, with retries and error mapping.

This is the one place where httpx exceptions and HTTP error statuses become flujo errors:

- 429, 408 and 5xx answers, and transport failures (connection refused, DNS, timeouts, dropped
  connections) are retried with exponential backoff, honouring ``Retry-After``, up to
  ``Endpoint.max_retries`` more attempts;
- each retry is told, before its delay, to the listener of the current call (``retry_listener``, set by
  the chat agent from ``AgentCall.on_retry``), so the person watching sees it as it happens;
- after the last attempt a connect failure is ``ProviderUnreachable``, anything else ``ProviderError``,
  whose message ends with how many attempts were made and over how long;
- other 4xx answers are ``ProviderError`` at once, with the provider's own message and the status
  (401/403 with a hint about the API key);
- a reply longer than the setting ``bounds.agent_output_max_bytes`` is refused (ProviderError) as soon as
  that is known, without reading the rest;
- a stream must end with its end marker (the provider's ``StreamReader`` says when it has arrived): a
  stream that ends before it, or whose connection breaks after its first event, was cut off. The attempt
  failed and is retried like the others (its ``Retry`` carries the text received, which the person has
  seen; the next attempt streams anew), and after the last attempt it is ``ReplyCutOff``, a
  ``ProviderError``: a partial reply is never returned as if it were the whole.

Each request uses its own ``httpx.AsyncClient``, closed before the function returns; they share one TLS
context (``tls_context``), and plain HTTP without a proxy (a local server) makes none.
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import functools
import json
import ssl
import time
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from core.agents.httpx_import import httpx
from core.model.calls import Retry
from core.model.errors import ConfigError, ProviderError, ProviderUnreachable, ReplyCutOff
from core.text.bounds import current_bounds

T = TypeVar("T")

# Who hears of the retries of the provider call in progress. A context variable, so that concurrent calls
# (parallel branches) each tell their own step, and the providers' ``_complete`` need not pass it along.
retry_listener: contextvars.ContextVar[Callable[[Retry], None] | None] = contextvars.ContextVar(
    "retry_listener", default=None
)


@dataclass(frozen=True)
class Backoff:
    """Delays between attempts: ``base_delay * 2**(n-1)`` seconds, or the server's ``Retry-After``,
    never more than ``max_delay``. Tests pass a tiny ``base_delay``."""

    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, retry: int, retry_after: float | None) -> float:
        wanted = retry_after if retry_after is not None else self.base_delay * 2 ** (retry - 1)
        return max(0.0, min(wanted, self.max_delay))


@dataclass(frozen=True)
class Endpoint:
    """Where and how one agent talks to its provider.

    ``label`` names the agent's model in messages (``openai:gpt-4o-mini``), ``agent`` the agent (its name
    under ``agents:``, when it has one); the hints are shown with authentication failures and unreachable
    endpoints.
    """

    label: str
    base_url: str
    timeout: float
    max_retries: int
    headers: Mapping[str, str] = field(default_factory=dict)
    backoff: Backoff = field(default_factory=Backoff)
    auth_hint: str = "check the provider's API key"
    unreachable_hint: str = "is the server running? check the base URL in flujo.toml"
    agent: str = ""
    # An agent built without its API key for a run that may never call it (``build_agent(...,
    # defer_missing_key=True)``: a replay, whose calls are served from a recording): raised by the first
    # request, before anything is sent.
    missing_key: ConfigError | None = None

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path


@dataclass(frozen=True)
class SSEEvent:
    """One server-sent event: its ``event:`` name (None when absent) and its ``data:`` text."""

    event: str | None
    data: str


class SSEParser:
    """Feeds lines of a ``text/event-stream`` and returns each event when its blank line arrives."""

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, line: str) -> SSEEvent | None:
        if line == "":
            return self.flush()
        if line.startswith(":"):  # a comment / keep-alive
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None

    def flush(self) -> SSEEvent | None:
        """The pending event, if any (also called at the end of the stream)."""
        event = SSEEvent(self._event, "\n".join(self._data)) if self._data else None
        self._event, self._data = None, []
        return event


class _Retryable(Exception):
    """Internal: a failure worth another attempt. Never escapes this module."""

    def __init__(
        self, error: ProviderError, reason: str, retry_after: float | None = None, *, cut: str | None = None
    ) -> None:
        super().__init__(error.message)
        self.error = error
        self.reason = reason
        self.retry_after = retry_after
        self.cut = cut  # the text received before the stream was cut off, when it was


async def post_json(endpoint: Endpoint, path: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """POST ``body`` as JSON to ``endpoint.url(path)``; the reply's JSON object and the attempts made."""

    async def once(client: httpx.AsyncClient) -> dict[str, Any]:
        try:
            async with client.stream("POST", endpoint.url(path), json=body) as streamed:
                response = await _read_bounded(endpoint, streamed)
        except httpx.TransportError as exc:
            raise _transport_failure(endpoint, exc) from exc
        if response.status_code >= 400:
            raise _status_failure(endpoint, response)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ProviderError(
                f"{endpoint.label}: {endpoint.base_url} answered with something that is not a JSON object: "
                f"{_excerpt(response.text)}",
                status=response.status_code,
                hint="is the base URL an OpenAI/Anthropic-compatible API?",
            )
        return data

    return await _with_retries(endpoint, once)


class StreamReader(Protocol):
    """What a provider makes of one attempt's stream: it is handed each event, says whether the event that
    ends a complete stream has arrived (``finished``) and what text it has received so far."""

    def feed(self, event: SSEEvent) -> None: ...

    @property
    def finished(self) -> bool: ...

    @property
    def text(self) -> str: ...


Reader = TypeVar("Reader", bound=StreamReader)


async def stream_events(
    endpoint: Endpoint, path: str, body: Mapping[str, Any], reader: Callable[[], Reader]
) -> tuple[Reader, int]:
    """POST ``body`` and hand each server-sent event to a reader made by ``reader`` (a new one for each
    attempt); the reader of the attempt that finished, and the number of attempts made.

    A stream that ends, or whose connection breaks, before its reader is ``finished`` was cut off: the
    attempt failed (``ReplyCutOff`` after the last one), whatever it had shown already.
    """

    async def once(client: httpx.AsyncClient) -> Reader:
        attempt = reader()
        delivered = False
        try:
            async with client.stream("POST", endpoint.url(path), json=body) as response:
                if response.status_code >= 400:
                    raise _status_failure(endpoint, await _read_bounded(endpoint, response))
                parser = SSEParser()
                limit = current_bounds().agent_output_max_bytes
                received = 0
                async for line in response.aiter_lines():
                    received += len(line) + 1
                    if received > limit:
                        raise _too_long(endpoint, limit)
                    event = parser.feed(line)
                    if event is not None:
                        delivered = True
                        attempt.feed(event)
                last = parser.flush()
                if last is not None:
                    attempt.feed(last)
        except httpx.TransportError as exc:
            if delivered:
                raise _cut_off(endpoint, attempt.text, _broke(endpoint, exc)) from exc
            raise _transport_failure(endpoint, exc) from exc
        if not attempt.finished:
            raise _cut_off(endpoint, attempt.text, "the stream ended before its end marker")
        return attempt

    return await _with_retries(endpoint, once)


def _broke(endpoint: Endpoint, exc: httpx.TransportError) -> str:
    """Why a stream that had started stopped: its connection broke, or nothing more came in time."""
    if isinstance(exc, httpx.TimeoutException):
        return f"nothing more came within {endpoint.timeout:g} s"
    return f"the connection broke: {str(exc) or type(exc).__name__}"


def _cut_off(endpoint: Endpoint, received: str, reason: str) -> _Retryable:
    """The retryable failure of a stream that stopped before its end, having received ``received``."""
    size = f"{len(received):,} character" + ("" if len(received) == 1 else "s")
    what = f"{size} ({_excerpt(received, 80)!r})" if received else "no text"
    who = f"agents.{endpoint.agent} ({endpoint.label})" if endpoint.agent else endpoint.label
    error = ReplyCutOff(
        f"{who}: the reply from {endpoint.base_url} was cut off after {what}: {reason}",
        received=received,
        reason=reason,
        hint="the server stopped sending mid-reply; nothing of it was kept. Run again, or raise the agent's"
        " max_retries",
    )
    return _Retryable(error, reason, cut=received)


async def _read_bounded(endpoint: Endpoint, response: httpx.Response) -> httpx.Response:
    """The response with its body read, refusing a body over ``bounds.agent_output_max_bytes`` (ProviderError)
    as soon as it is known to be (from Content-Length, else while reading)."""
    limit = current_bounds().agent_output_max_bytes
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_long(endpoint, limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _too_long(endpoint, limit)
        chunks.append(chunk)
    # The body is decoded already: its encoding headers must not make httpx decode it again.
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(response.status_code, headers=headers, content=b"".join(chunks), request=response.request)


def _too_long(endpoint: Endpoint, limit: int) -> ProviderError:
    return ProviderError(
        f"{endpoint.label}: the reply from {endpoint.base_url} is longer than {limit:,} bytes",
        hint="ask for a shorter reply (model_settings.max_tokens), or raise the setting bounds.agent_output_max_bytes",
    )


async def _with_retries(endpoint: Endpoint, once: Callable[[httpx.AsyncClient], Awaitable[T]]) -> tuple[T, int]:
    if endpoint.missing_key is not None:
        raise endpoint.missing_key
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(endpoint.timeout), headers=dict(endpoint.headers), verify=_verify(endpoint.base_url)
    )
    async with client:
        attempt = 0
        started = time.monotonic()
        while True:
            attempt += 1
            try:
                return await once(client), attempt
            except _Retryable as failure:
                if attempt > endpoint.max_retries:
                    raise _after_attempts(failure.error, attempt, time.monotonic() - started) from failure.__cause__
                delay = endpoint.backoff.delay(attempt, failure.retry_after)
                listener = retry_listener.get()
                if listener is not None:
                    listener(Retry(attempt + 1, endpoint.max_retries + 1, delay, failure.reason, cut=failure.cut))
                await asyncio.sleep(delay)


def _verify(base_url: str) -> ssl.SSLContext | bool:
    """What the client of a call to ``base_url`` verifies TLS with: the process's one context, or False for
    plain HTTP reached without a proxy (a local server): no TLS is spoken there (httpx follows no redirect),
    and httpx then makes no context at all."""
    if base_url.lower().startswith("http://") and not {"http", "all"} & set(urllib.request.getproxies()):
        return False
    return tls_context()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """How every request of this process verifies TLS: httpx's default (certifi's CA bundle, or
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), made once. httpx makes one for each client, and reading the CA
    bundle cost 50-85 ms of CPU here: every model call paid it, a local server's over plain HTTP included."""
    return httpx.create_ssl_context()


def _after_attempts(error: ProviderError, attempts: int, seconds: float) -> ProviderError:
    """``error`` saying how many attempts were made and over how long (as it is, after a single one)."""
    if attempts == 1:
        return error
    message = f"{error.message} ({attempts} attempts over {seconds:.1f} s)"
    if isinstance(error, ReplyCutOff):
        return ReplyCutOff(message, received=error.received, reason=error.reason, attempts=attempts, hint=error.hint)
    return type(error)(message, status=error.status, hint=error.hint)


def _transport_failure(endpoint: Endpoint, exc: httpx.TransportError) -> _Retryable:
    """The retryable failure for a transport error; raises ProviderError at once when no retry can help."""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.UnsupportedProtocol):
        raise ProviderError(
            f"{endpoint.label}: {endpoint.base_url} is not an http:// or https:// URL",
            hint="fix the base URL in flujo.toml or the environment",
        ) from exc
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return _Retryable(
            ProviderUnreachable(
                f"cannot reach {endpoint.base_url} for {endpoint.label}: {reason}",
                hint=endpoint.unreachable_hint,
            ),
            f"cannot connect: {reason}",
        )
    if isinstance(exc, httpx.TimeoutException):
        return _Retryable(
            ProviderError(
                f"{endpoint.label} did not answer within {endpoint.timeout:g}s ({endpoint.base_url})",
                hint="raise the agent's timeout (or the provider's timeout_s in flujo.toml)",
            ),
            f"timed out after {endpoint.timeout:g} s",
        )
    return _Retryable(
        ProviderError(f"{endpoint.label}: the connection to {endpoint.base_url} failed: {reason}"),
        f"the connection failed: {reason}",
    )


def _status_failure(endpoint: Endpoint, response: httpx.Response) -> Exception:
    status = response.status_code
    detail = _error_message(response)
    where = f"{endpoint.label}: HTTP {status} from {endpoint.base_url}"
    if status == 429:
        error = ProviderError(
            f"{where}: {detail}",
            status=status,
            hint="rate limited: wait a moment, or check your plan's limits",
        )
        return _Retryable(error, f"HTTP {status}: {_excerpt(detail, 120)}", _retry_after(response.headers))
    if status == 408 or status >= 500:
        error = ProviderError(f"{where}: {detail}", status=status, hint="the provider failed; try again later")
        return _Retryable(error, f"HTTP {status}: {_excerpt(detail, 120)}", _retry_after(response.headers))
    if status in (401, 403):
        return ProviderError(f"{where}: {detail}", status=status, hint=endpoint.auth_hint)
    if status == 404:
        return ProviderError(f"{where}: {detail}", status=status, hint="check the model name and the base URL")
    return ProviderError(f"{endpoint.label} rejected the request (HTTP {status}): {detail}", status=status)


def _error_message(response: httpx.Response) -> str:
    """The provider's own error message: OpenAI/Anthropic ``{"error": {"message": ...}}``, ``{"error":
    "..."}`` (Ollama and others), or the start of the body."""
    try:
        data = response.json()
    except ValueError:
        return _excerpt(response.text) or response.reason_phrase
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return _excerpt(json.dumps(data))


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, ``Retry-After`` seconds or HTTP date."""
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unparseable: use our own backoff
    return max(0.0, when.timestamp() - time.time())


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
