"""An OpenTelemetry collector for tests: an OTLP/HTTP receiver of traces on 127.0.0.1.

``POST /v1/traces`` bodies are decoded as ``ExportTraceServiceRequest`` (the ``opentelemetry-proto`` messages,
protobuf as the SDK's OTLP/HTTP exporter sends them) into ``ReceivedSpan`` values; each request is answered
200 with an empty ``ExportTraceServiceResponse``. Stdlib HTTP server in a thread, on a free port::

    with OtlpReceiver() as collector:
        ... flujo run with OTEL_EXPORTER_OTLP_ENDPOINT=collector.url ...
        collector.wait_for_spans(5)           # an event: returns once 5 spans have arrived (no sleep)
        tree = collector.by_name()

A test waits for what it expects to arrive; its time limit (pytest-timeout) ends a wait that never ends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class ReceivedEvent:
    name: str
    time_ns: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True)
class ReceivedSpan:
    """A span as the collector received it (ids as hex, as backends show them)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: int
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    events: tuple[ReceivedEvent, ...]
    status_code: int
    status_message: str
    resource: Mapping[str, Any] = field(default_factory=dict)

    def content(self) -> dict[str, Any]:
        """The JSON attributes (messages, tool arguments and results) decoded."""
        return {
            key: json.loads(value)
            for key, value in self.attributes.items()
            if key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments")
        }


class OtlpReceiver:
    """The receiver; ``url`` is its base URL (what ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set to)."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver._received(request)  # before the answer: a sender that got its answer finds them here
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _received(self, request: ExportTraceServiceRequest) -> None:
        found: list[ReceivedSpan] = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    found.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex() or None,
                            kind=span.kind,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            attributes=_attributes(span.attributes),
                            events=tuple(
                                ReceivedEvent(e.name, e.time_unix_nano, _attributes(e.attributes)) for e in span.events
                            ),
                            status_code=span.status.code,
                            status_message=span.status.message,
                            resource=resource,
                        )
                    )
        with self._arrived:
            self.spans.extend(found)
            self.requests += 1
            self._arrived.notify_all()

    def wait_for_spans(self, count: int) -> list[ReceivedSpan]:
        """Wait until at least ``count`` spans have arrived (no deadline: the test's time limit is one)."""
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.spans) >= count)
            return list(self.spans)

    def named(self, prefix: str) -> list[ReceivedSpan]:
        """The spans received whose names start with ``prefix``, in the order they started."""
        with self._arrived:
            return sorted((s for s in self.spans if s.name.startswith(prefix)), key=lambda s: s.start_ns)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    return None if which is None else getattr(value, which)
