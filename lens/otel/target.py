"""Where a run's trace goes: the collector's OTLP/HTTP endpoint and what is sent (nothing imports
OpenTelemetry here, so the CLI can decide whether to before it does).

The endpoint is written as ``OTEL_EXPORTER_OTLP_ENDPOINT`` is: the collector's base URL
(``http://localhost:4318``), to which OTLP's path for traces, ``/v1/traces``, is added; a URL that already
ends with it (Phoenix shows ``http://localhost:6006/v1/traces``) is taken as it is.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

TRACES_PATH = "/v1/traces"
EXTRA = "pip install 'flujo-runner[otel]'"
"""How to install what sending traces needs (the ``otel`` extra: the OpenTelemetry SDK and its OTLP/HTTP
exporter)."""


@dataclass(frozen=True)
class OtlpTarget:
    """A collector to send traces to: ``endpoint`` as the module docstring says; ``capture_content`` sends
    messages, inputs and outputs (masked); ``timeout_s`` bounds each send, retries included."""

    endpoint: str
    capture_content: bool = False
    timeout_s: float = 10.0

    @property
    def traces_url(self) -> str:
        """The URL the traces are posted to."""
        url = self.endpoint.strip()
        return url if url.rstrip("/").endswith(TRACES_PATH) else url.rstrip("/") + TRACES_PATH


def otel_installed() -> bool:
    """Whether the ``otel`` extra is installed (found without importing it)."""
    try:
        return all(
            importlib.util.find_spec(name) is not None
            for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
        )
    except ModuleNotFoundError:  # a parent package (``opentelemetry``) is missing
        return False
