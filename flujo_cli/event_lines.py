"""``flujo run FILE --events jsonl`` and ``--events-file F`` (and ``flujo resume``): a run's trace events as JSON
lines, written as they are committed.

Each line is one JSON object, ``{"path", "kind", "ts", "payload"}``: an event as the store keeps it (its payload
masked as stored), in the store's order (a sub-workflow's events at their place in the run, ``review/critique``,
as ``flujo lens trace`` shows them). The last line is ``{"path": "", "kind": "run.finished", ...}``, whose
payload is what ``flujo run --json`` prints of the run (``run_id``, ``status``, ``output``, ``error``,
``failed_step``, ``usage``, and ``pause``: its ``step``, ``path`` and ``message``), masked. With ``--events
jsonl`` the lines are everything written to stdout (the run's output is in the last one; progress and
messages stay on stderr); with ``--events-file F`` they go to ``F`` and stdout is as without it.

The engine tells the run's reporter of each commit (``Reporter.events_committed``); nothing is written, or
made, when neither option is given. A reader that stops reading (``| head``) does not stop the run: its lines
stop, the run goes on and is stored as ever. So does a write that fails (a full disk): the lines stop, and the
command says so when the run has ended (``failure``), its events still in the store.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from flujo_cli.messages import quiet_stdout, usage_error

if TYPE_CHECKING:
    from core import Redactor, RunOutcome, TraceEvent

FORMATS = ("jsonl",)


@dataclass(frozen=True)
class EventFlags:
    """``--events FORMAT`` and ``--events-file F`` as given."""

    format: str | None = None
    file: Path | None = None

    def check(self, *, json_output: bool) -> None:
        """Stop with a usage error (exit 2) for a format other than ``jsonl``, or ``--events`` with ``--json``
        (both would write to stdout)."""
        if self.format is not None and self.format not in FORMATS:
            usage_error(f"--events takes {' or '.join(FORMATS)}, not {self.format!r}", "for example: --events jsonl")
        if self.format is not None and json_output:
            usage_error(
                "--events and --json cannot be given together: both write to stdout",
                "drop one of them, or write the events to a file with --events-file FILE",
            )

    def open(self) -> EventLines | None:
        """Where the lines go (None: nowhere); a file that cannot be written is a usage error (exit 2)."""
        if self.file is not None:
            try:
                out = self.file.open("w", encoding="utf-8")
            except OSError as exc:
                usage_error(f"--events-file {self.file}: cannot write it: {exc.strerror or exc}")
            return EventLines(out, stdout=False, name=f"--events-file {self.file}")
        if self.format is not None:
            return EventLines(sys.stdout, stdout=True, name="stdout")
        return None


NO_EVENTS = EventFlags()


class EventLines:
    """Writes events to ``out`` as JSON lines; ``stdout``: ``out`` is stdout, which then holds nothing else;
    ``name`` says where they go, in messages (``--events-file F``)."""

    def __init__(self, out: IO[str], *, stdout: bool, name: str) -> None:
        self.out = out
        self.stdout = stdout
        self.name = name
        self._gone = False  # the reader stopped reading, or a write failed
        self.failure: str | None = None  # why a write failed, for the command to say once the run has ended

    def write(self, events: Sequence[TraceEvent]) -> None:
        """Write ``events`` (masked, as committed), one line each."""
        self._lines(_line(event.path, event.kind, event.ts, event.payload) for event in events)

    def finished(self, outcome: RunOutcome, redactor: Redactor) -> None:
        """The last line: how the run ended, as ``flujo run --json`` says it, masked."""
        paused = outcome.pause
        pause = {"step": paused.step, "path": paused.path, "message": paused.message} if paused else None
        payload = {
            "run_id": outcome.run_id,
            "status": outcome.status,
            "output": outcome.output,
            "error": outcome.error.message if outcome.error else outcome.detail,
            "failed_step": outcome.failed_step,
            "pause": pause,
            "usage": outcome.usage.to_dict(),
        }
        self._lines([_line("", "run.finished", time.time(), redactor.value(payload))])

    def close(self) -> None:
        if not self.stdout:
            try:
                self.out.close()
            except OSError as exc:  # what was still buffered could not be written
                self.failure = self.failure or exc.strerror or str(exc)

    def _lines(self, lines: Any) -> None:
        if self._gone:
            return
        try:
            self.out.write("".join(lines))
            self.out.flush()
        except BrokenPipeError:
            self._gone = True  # the run goes on; what it stores does not depend on its lines being read
            if self.stdout:
                quiet_stdout()
        except OSError as exc:  # a full disk, a file of /proc: the run goes on, and this is said when it ends
            self._gone = True
            self.failure = exc.strerror or str(exc)


def _line(path: str, kind: str, ts: float, payload: Any) -> str:
    event = {"path": path, "kind": kind, "ts": ts, "payload": dict(payload)}
    return json.dumps(event, ensure_ascii=False, default=str) + "\n"
