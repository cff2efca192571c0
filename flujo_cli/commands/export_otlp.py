"""``flujo lens export RUN --otlp [ENDPOINT]``: send a stored run, with its sub-workflows' runs, to an
OpenTelemetry collector as one trace in the GenAI conventions (docs/observability.md).

ENDPOINT left out: the configured one (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``[otel] endpoint``); none: exit 2.
The trace is the one the run sent live, if it did (``lens.otel.plan``: same trace id, same span ids, the
stored times); what is sent is masked as lens shows it, message content only with ``[otel] capture_content``
or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``. An unreachable collector is tried again for
``[otel] timeout_s`` seconds, then said in one line: exit 6. The result is one line on stdout.

Exit codes: 0 sent; 1 no run matches; 2 no endpoint, or one that is not an http(s) URL; 6 the collector did not
take the trace, or the ``otel`` extra is not installed; 7 the store is missing or cannot be read.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import error_line, usage_error

if TYPE_CHECKING:
    from core import Redactor, RunStore


def export_otlp(run_id: str, endpoint: str | None, *, state: str | None, debug: bool) -> int:
    """Send run ``run_id`` to ``endpoint`` (None or empty: the configured one)."""
    from flujo_cli.commands.lens import _found, _with_store
    from flujo_cli.store_access import settings_with_state
    from lens import OTEL_EXTRA, OtlpTarget, otel_installed

    otel = settings_with_state(state).otel
    url = endpoint or otel.endpoint
    if not url:
        usage_error(
            "--otlp needs a collector: none is given and none is configured",
            "give one (--otlp http://localhost:4318), or set OTEL_EXPORTER_OTLP_ENDPOINT or [otel] endpoint in"
            " flujo.toml",
        )
    check_endpoint(url, "--otlp" if endpoint else "the configured endpoint")
    if not otel_installed():
        error_line("sending traces needs the otel extra, which is not installed", f"install it: {OTEL_EXTRA}")
        return exit_codes.CONFIG
    target = OtlpTarget(url, capture_content=otel.capture_content, timeout_s=otel.timeout_s)

    async def body(store: RunStore, redactor: Redactor, where: str) -> int:
        from lens import export_run

        record = await _found(store, run_id, where)
        if record is None:
            return exit_codes.FAILED
        sent, trace_id = await export_run(store, record.run_id, target, redactor=redactor, record=record)
        spans = "1 span" if sent == 1 else f"{sent} spans"
        sys.stdout.write(f"run {record.run_id}: {spans} sent to {target.traces_url} (trace {trace_id})\n")
        return exit_codes.OK

    return _with_store(body, state=state, debug=debug)


def check_endpoint(url: str, given_as: str) -> None:
    """Stop with a usage error unless ``url`` is an http:// or https:// URL with a host."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        usage_error(
            f"{given_as} {url!r} is not an http:// or https:// URL",
            "an OTLP/HTTP collector's address, e.g. http://localhost:4318 (Jaeger) or http://localhost:6006/v1/traces"
            " (Phoenix)",
        )
