"""Planned spans (``lens.otel.plan``) through the OpenTelemetry SDK to an OTLP/HTTP collector: now, for
``flujo lens export --otlp``, or in the background as runs end (``LiveExport``).

The spans are made with the SDK's tracer, each given its planned ids (``_PlannedIds``, the SDK's extension point
for ids), times, attributes, events and status, then handed to the SDK's OTLP/HTTP exporter. The SDK's own log
lines about a failed send are kept from the terminal (``_Failures`` keeps the first reason): flujo says what
failed in one line of its own.

Only ``lens.otel`` imports OpenTelemetry, and only when a trace is sent: the CLI imports this module when an
endpoint is configured or ``--otlp`` is given.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from core import ConfigError, Redactor, RunRecord, RunStore
from lens.otel.plan import PlannedSpan, plan_spans, trace_id_of
from lens.otel.target import OtlpTarget
from lens.snapshot import load_run

BATCH = 512
"""Spans per request."""
LIVE_WAIT_S = 3.0
"""How long a command waits, once its run has ended, for the run's spans to be sent; a collector that
refuses the connection ends the wait at once."""

_NS = 1_000_000_000
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_T = TypeVar("_T")


async def export_run(
    store: RunStore, run_id: str, target: OtlpTarget, *, redactor: Redactor, record: RunRecord | None = None
) -> tuple[int, str]:
    """Send the run ``run_id`` names (its child runs with it) to ``target`` now, masked with ``redactor`` as lens
    shows it: the number of spans sent and the trace's id (32 hex digits). The errors of ``load_run`` when no
    run or several match; ConfigError (``send``) when the collector does not take them."""
    snapshot = await load_run(store, run_id, redactor=redactor, record=record)
    spans = make_spans(plan_spans(snapshot, capture_content=target.capture_content))
    await _off_the_loop(lambda: send(spans, target), name="flujo-otel-export")
    return len(spans), f"{trace_id_of(snapshot.record.run_id):032x}"


def make_spans(planned: Iterable[PlannedSpan]) -> list[ReadableSpan]:
    """The SDK's spans of ``planned``, ended, in the same order."""
    ids = _PlannedIds()
    made = _Made()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "flujo"}), id_generator=ids, shutdown_on_exit=False
    )
    provider.add_span_processor(made)
    tracer = provider.get_tracer("flujo", _version())
    for plan in planned:
        ids.trace_id, ids.span_id = plan.trace_id, plan.span_id
        parent = Context()  # a run's own span has no parent: not the caller's current span either
        if plan.parent_id is not None:
            above = SpanContext(plan.trace_id, plan.parent_id, is_remote=False, trace_flags=_SAMPLED)
            parent = trace.set_span_in_context(NonRecordingSpan(above))
        span = tracer.start_span(
            plan.name,
            context=parent,
            kind=SpanKind.CLIENT if plan.client else SpanKind.INTERNAL,
            attributes=plan.attributes,
            start_time=_ns(plan.start),
        )
        for event in plan.events:
            span.add_event(event.name, event.attributes, timestamp=_ns(event.at))
        if plan.error is not None:
            span.set_status(Status(StatusCode.ERROR, plan.error))
        span.end(end_time=_ns(plan.end))
    return made.spans


def send(spans: Sequence[ReadableSpan], target: OtlpTarget) -> None:
    """Send ``spans`` to ``target`` now, retrying an unreachable collector for ``target.timeout_s``;
    ConfigError naming the collector and why, when it could not take them all."""
    failures = _Failures.watching()
    exporter = OTLPSpanExporter(endpoint=target.traces_url, timeout=target.timeout_s)
    try:
        for start in range(0, len(spans), BATCH):
            if exporter.export(spans[start : start + BATCH]) is not SpanExportResult.SUCCESS:
                sent = f"{start} of {len(spans)} spans were sent" if start else "no span was sent"
                raise ConfigError(
                    f"could not send the trace to {target.traces_url}: {failures.reason()}",
                    hint=f"{sent}; is the collector running there? (tried again for up to {target.timeout_s:g} s:"
                    " [otel] timeout_s)",
                )
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK's exporter does not type it


@dataclass(frozen=True)
class LiveResult:
    """What became of the spans a ``LiveExport`` was given: how many, how many were sent, and why the
    others were not (None when all were)."""

    given: int
    sent: int
    problem: str | None


class LiveExport:
    """Sends the spans of runs in the background as they end (``add``), on the SDK's batch processor; ``close``
    waits a little for the last ones (``LIVE_WAIT_S``). A collector that cannot be reached never fails or holds
    up a run: ``close`` says what was not sent."""

    def __init__(self, target: OtlpTarget) -> None:
        self.target = target
        self._failures = _Failures.watching()
        self._exporter = _Counted(OTLPSpanExporter(endpoint=target.traces_url, timeout=LIVE_WAIT_S))
        self._processor = BatchSpanProcessor(self._exporter)
        self._given = 0

    async def add_run(self, store: RunStore, run_id: str, *, redactor: Redactor, since: float) -> None:
        """Queue the spans of the run ``run_id`` (and its child runs) that this process made: those from
        ``since`` on (``plan_spans``), masked with ``redactor`` as lens shows them."""
        snapshot = await load_run(store, run_id, redactor=redactor)
        self.add(make_spans(plan_spans(snapshot, capture_content=self.target.capture_content, since=since)))

    def add(self, spans: Iterable[ReadableSpan]) -> None:
        for span in spans:
            self._given += 1
            self._processor.on_end(span)

    async def close(self, wait_s: float = LIVE_WAIT_S) -> LiveResult:
        """Send what is left (for at most ``wait_s``; no longer once a send has failed), then stop. Cancelled
        (Ctrl-C), it stops waiting at once: ``result(interrupted=True)`` then says what was sent."""
        settled = self._failures.failed  # set by a failed send, or below when all is sent

        def shut() -> None:
            self._processor.shutdown()  # type: ignore[no-untyped-call]  # the SDK does not type it
            settled.set()

        # A daemon thread: a collector that never answers does not keep the process from ending.
        threading.Thread(target=shut, name="flujo-otel-close", daemon=True).start()
        await _off_the_loop(lambda: settled.wait(wait_s), name="flujo-otel-wait")
        return self.result(wait_s)

    def result(self, wait_s: float = LIVE_WAIT_S, *, interrupted: bool = False) -> LiveResult:
        """What was sent so far; why the rest was not: the collector's failure, no answer within ``wait_s``, or
        (``interrupted``) the wait stopped by Ctrl-C."""
        sent = min(self._exporter.sent, self._given)
        if sent == self._given:
            return LiveResult(self._given, sent, None)
        if self._failures.messages:
            problem = self._failures.reason()
        elif interrupted:
            problem = "the wait for the collector was interrupted"
        else:
            problem = f"it did not answer within {wait_s:g} s"
        return LiveResult(self._given, sent, problem)


class _PlannedIds(IdGenerator):
    """Gives the ids planned for the span being started (the tracer asks for a span id for every span, and a
    trace id for one without a parent)."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_span_id(self) -> int:
        return self.span_id

    def generate_trace_id(self) -> int:
        return self.trace_id


class _Made(SpanProcessor):
    """Keeps each span as it ends."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


class _Counted(SpanExporter):
    """An exporter that counts the spans it sent."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.sent = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class _Failures(logging.Handler):
    """Takes the OpenTelemetry SDK's log lines in place of the terminal: the first failure's reason is kept
    (``reason``) and ``failed`` is set when a send fails (at its first attempt, before any retry)."""

    _ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\"()\]]+)")
    _CODE = re.compile(r"code: (\d+), reason: (.*)")
    _installed: _Failures | None = None

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.failed = threading.Event()

    @classmethod
    def watching(cls) -> _Failures:
        """The handler of this process, set on the ``opentelemetry`` logger (once); its log lines no longer
        reach the terminal."""
        if cls._installed is None:
            cls._installed = cls()
            logger = logging.getLogger("opentelemetry")
            logger.addHandler(cls._installed)
            logger.propagate = False
        cls._installed.messages.clear()
        cls._installed.failed.clear()
        return cls._installed

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.failed.set()

    def reason(self) -> str:
        """Why sending failed, in a few words: the system's error (``Connection refused``), the collector's
        HTTP status, or that it did not answer in time."""
        for message in self.messages:
            found = self._ERRNO.search(message)
            if found:
                return found.group(1).strip()
            code = self._CODE.search(message)
            if code and code.group(1) != "None":
                return f"HTTP {code.group(1)} {code.group(2).strip()}"
        if any("timeout" in message.lower() or "timed out" in message.lower() for message in self.messages):
            return "it did not answer in time"
        return "it could not be reached"


async def _off_the_loop(work: Callable[[], _T], *, name: str) -> _T:
    """``work()`` run in a daemon thread of its own, its result awaited. Not ``asyncio.to_thread``: the default
    executor's threads are joined as ``asyncio.run`` ends, so a send stuck on a collector that does not answer
    would hold up a Ctrl-C'd command until its timeout."""
    done: Future[_T] = Future()
    done.set_running_or_notify_cancel()  # running: cancelling the awaiting task leaves it to finish or fail

    def target() -> None:
        try:
            done.set_result(work())
        except BaseException as exc:  # handed to the awaiting task, which raises it
            done.set_exception(exc)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await asyncio.wrap_future(done)


def _ns(seconds: float) -> int:
    return round(seconds * _NS)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("flujo-runner")
    except PackageNotFoundError:
        return "0"
