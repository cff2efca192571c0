"""Runs sent to an OpenTelemetry collector as they end, when one is configured (``[otel] endpoint``,
``OTEL_EXPORTER_OTLP_ENDPOINT``; docs/observability.md): what ``flujo run``, ``flujo resume`` and ``flujo worker``
share.

Nothing configured: nothing is imported (OpenTelemetry, ``lens.otel``) and nothing happens. Configured: a run's
spans are queued once the run ends or pauses (``lens.LiveExport``: they go out in the background) and the command
waits a little for them when it ends. Sending traces never fails, stops or holds up a run: a collector that
cannot be reached, a run that cannot be read back, or the ``otel`` extra missing, is one warning line.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from flujo_cli.messages import flujo_command, warning_line

if TYPE_CHECKING:
    from core import Redactor, RunStore, Settings
    from lens import LiveExport, OtlpTarget


class LiveTraces:
    """The live export of one command: the runs it sent, to say which were not sent.

    OpenTelemetry and the HTTP client it sends with take about a second to import: they are imported and the
    exporter made in a thread of their own as soon as the command knows it will send, while its run runs;
    the first run that ends waits for them if they are not ready yet."""

    def __init__(self, target: OtlpTarget) -> None:
        self.target = target
        self.runs: list[str] = []
        self._export: LiveExport | None = None
        self._broken: ImportError | None = None
        self._ready = threading.Thread(target=self._make, name="flujo-otel-import", daemon=True)
        self._ready.start()

    @classmethod
    def configured(cls, settings: Settings) -> LiveTraces | None:
        """The live export the settings ask for, if any (the ``otel`` extra missing: a warning, and None)."""
        endpoint = settings.otel.endpoint
        if not endpoint:
            return None
        from lens import OTEL_EXTRA, OtlpTarget, otel_installed

        if not otel_installed():
            warning_line(f"runs are not sent to {endpoint}: the otel extra is not installed ({OTEL_EXTRA})")
            return None
        otel = settings.otel
        return cls(OtlpTarget(endpoint, capture_content=otel.capture_content, timeout_s=otel.timeout_s))

    def _make(self) -> None:
        try:
            from lens import LiveExport

            self._export = LiveExport(self.target)
        except ImportError as exc:  # an install of the extra that does not import: said when a run ends
            self._broken = exc

    async def add(self, store: RunStore, run_id: str, *, redactor: Redactor, since: float) -> None:
        """Queue the spans of run ``run_id`` that this process made (from ``since`` on)."""
        from core import FlujoError

        self._ready.join()
        if self._export is None:
            warning_line(f"run {run_id} is not sent to {self.target.traces_url}: {self._broken}")
            return
        try:
            await self._export.add_run(store, run_id, redactor=redactor, since=since)
        except FlujoError as exc:  # the store could not be read back: the run itself is saved
            warning_line(f"run {run_id} is not sent to {self.target.traces_url}: {exc.message}")
            return
        except Exception as exc:  # a top level of its own: sending a trace never fails a run, which is saved
            warning_line(f"run {run_id} is not sent to {self.target.traces_url}: {type(exc).__name__}: {exc}")
            return
        self.runs.append(run_id)

    async def close(self, *, state_option: str = "") -> None:
        """Wait a little for the spans still to send; say in one line what was not sent, and how to send it.
        Ctrl-C while it waits stops the wait and is said so: the runs are over and saved, so the command
        goes on to end as its runs did (not as an interrupted run, which would say to resume it)."""
        import asyncio

        if self._export is None or not self.runs:
            return
        try:
            result = await self._export.close()
        except asyncio.CancelledError:  # Ctrl-C (asyncio.run cancels the command's task): no longer waiting
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()  # handled: the command ends as its runs did
            result = self._export.result(interrupted=True)
        if result.problem is None:
            return
        url = self.target.traces_url
        which = f"run {self.runs[0]}" if len(self.runs) == 1 else f"{len(self.runs)} runs"
        command = f"{flujo_command()} lens export {self.runs[0] if len(self.runs) == 1 else 'RUN'}{state_option} --otlp"
        warning_line(
            f"the trace of {which} was not sent to {url}: {result.problem} ({result.sent} of {result.given} spans"
            f" sent); the run is saved: send it later with {command}"
        )
