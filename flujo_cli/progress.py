"""Live progress on stderr: a spinner naming the running step, streamed text, each agent's reply.

The human sees every agent reply as it finishes (or streams), so a HITL question is never asked blind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, assert_never

from rich.console import Console
from rich.markup import escape
from rich.status import Status
from rich.text import Text

from core import Activity, StepRecord
from flujo_cli.line_writer import LineWriter


def preview(value: Any, limit: int = 2000) -> str:
    """One readable line for a step output: text as is; a flat mapping as ``key: value · key: value``."""
    if isinstance(value, dict) and value and all(isinstance(v, str | int | float | bool) for v in value.values()):
        text = " · ".join(f"{key}: {item}" for key, item in value.items())
    else:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


class Waiting:
    """A spinner's text that counts the seconds as it is redrawn: ``smol thinking…``, then ``smol thinking… 3 s``
    (``clock`` is ``time.monotonic``; a test passes its own)."""

    def __init__(self, name: str, what: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.name, self.what, self.clock = name, what, clock
        self.since = clock()

    def __rich__(self) -> Text:
        seconds = int(self.clock() - self.since)
        text = Text.assemble((self.name, "bold"), f" {self.what}…")
        return text.append(f" {seconds} s") if seconds >= 1 else text


class LiveReporter:
    """Shows progress on a console; ``quiet`` keeps only agent replies and errors off (for --json)."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self._console = console
        self._lines = LineWriter(console)
        self._quiet = quiet
        self._status: Status | None = None
        self._streaming: str | None = None
        self._terminal = console.is_terminal  # read once: Rich looks at the environment on every read

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def step_started(self, path: str, name: str, kind: str) -> None:
        self._stop_status()
        if self._quiet or kind != "step" or not self._terminal:
            return
        self._status = self._console.status(f"[bold]{escape(name)}[/] running…", spinner="dots")
        self._status.start()
        # Draw the first frame now, not on the refresh thread's first tick: loading a local model holds the
        # GIL for the whole load (xllamacpp), and the spinner would stay blank until it is done.
        self._status.update(spinner="dots")

    def activity(self, path: str, activity: Activity) -> None:
        if self._status is None:  # quiet, not a terminal, or the reply already streams
            return
        name = path.rsplit("/", 1)[-1]
        if activity.kind == "loading":
            # Drawn now (a new spinner is drawn at once): the load holds the GIL, so the spinner's own refresh
            # thread draws nothing until it is done.
            self._status.update(f"[bold]{escape(name)}[/] loading {escape(activity.subject)}…", spinner="dots")
        elif activity.kind == "thinking":
            self._status.update(Waiting(name, "thinking"), spinner="dots")
        else:
            assert_never(activity.kind)

    def text_delta(self, path: str, text: str) -> None:
        if self._quiet:
            return
        self._stop_status()
        if self._streaming != path:
            self._streaming = path
            self._lines.line(("bold green", path.rsplit("/", 1)[-1]), " › ", end="")
        self._lines.line(text, end="")

    def agent_replied(self, path: str, name: str, output: Any) -> None:
        self._stop_status()
        if self._quiet:
            return
        if self._streaming == path:  # already shown as it streamed
            self._streaming = None
            self._lines.line()  # the streamed line's end
            return
        self._lines.line(("bold green", name), " › ", preview(output))

    def step_finished(self, record: StepRecord) -> None:
        if record.kind != "step":
            return
        self._stop_status()
        if self._streaming == record.path:  # a stream that ended without a reply (the step failed)
            self._streaming = None
            self._lines.line()  # the streamed line's end

    def note(self, message: str) -> None:
        # Printed above a running spinner, which keeps turning: a retry's note comes while its step still runs.
        if self._quiet:
            return
        if self._streaming is not None:  # a reply cut off mid-stream: its text stays, on its own line
            self._streaming = None
            self._lines.line()
        self._lines.line(("dim", message))

    def close(self) -> None:
        self._stop_status()
