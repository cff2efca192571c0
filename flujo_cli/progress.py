"""Live progress on stderr: a spinner naming the running step, streamed text, each agent's reply, each tool call.

The human sees every agent reply as it finishes (or streams), so a HITL question is never asked blind. In an
agent step's tool loop each tool call is a spinner naming the tool and its arguments while it runs, then one
line with its result (its error, or that the person declined it), masked like a trace; the model's turns
are not shown (the reply is, as any agent's).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, assert_never

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from core import MODEL_TURN_KIND, TOOL_CALL_KIND, Activity, Redactor, StepRecord, TraceEvent
from flujo_cli.line_writer import LineWriter

if TYPE_CHECKING:  # a spinner is made by ``Console.status``, which imports it (and Rich's tables) when one starts
    from rich.status import Status


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


def short(text: str, limit: int) -> str:
    """``text`` on one line (its whitespace runs made one space), cut at ``limit`` characters with ``…``."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class LiveReporter:
    """Shows progress on a console; ``quiet`` keeps only agent replies and errors off (for --json). ``redactor``
    masks what a tool call's line shows (its arguments and result)."""

    def __init__(self, console: Console, *, quiet: bool = False, redactor: Redactor | None = None) -> None:
        self._console = console
        self._lines = LineWriter(console)
        self._quiet = quiet
        self.redactor = redactor
        self._status: Status | None = None
        self._streaming: str | None = None
        self._terminal = console.is_terminal  # read once: Rich looks at the environment on every read
        self._running: dict[str, str] = {}  # agent step path → name, while its spinner may come back after a tool
        # Agent step path → the calls its latest model turn asked for and that have not started yet: a call's
        # spinner names its arguments (the engine says only which tool starts).
        self._asked: dict[str, deque[tuple[str, Any]]] = {}
        # Where the run's trace events go as they are committed (``flujo run --events``: flujo_cli.event_lines).
        self.events: Callable[[Sequence[TraceEvent]], None] | None = None
        self.started = False  # a step started: the run was stored (and claimed) before it

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def step_started(self, path: str, name: str, kind: str) -> None:
        self.started = True
        self._stop_status()
        if kind == TOOL_CALL_KIND:
            self._tool_started(path, name)
            return
        if self._quiet or kind != "step" or not self._terminal:
            return
        self._running[path] = name
        self._spin(f"[bold]{escape(name)}[/] running…")

    def _spin(self, what: str | Text) -> None:
        self._status = self._console.status(what, spinner="dots")
        self._status.start()
        # Draw the first frame now, not on the refresh thread's first tick: loading a local model holds the
        # GIL for the whole load (xllamacpp), and the spinner would stay blank until it is done.
        self._status.update(spinner="dots")

    def _tool_started(self, path: str, name: str) -> None:
        self._end_stream()  # what the model said with its calls stays, on its own line
        waiting = self._asked.get(_agent_of(path))
        arguments = waiting.popleft()[1] if waiting and waiting[0][0] == name else None
        if self._quiet or not self._terminal:
            return
        shown = f"({self._arguments(arguments)})" if arguments is not None else ""
        self._spin(Text.assemble((name, "bold"), f"{shown} running…"))

    def _tool_finished(self, record: StepRecord) -> None:
        self._stop_status()
        self._end_stream()
        if self._quiet:
            return
        given = record.input.get("arguments") if isinstance(record.input, Mapping) else None
        outcome = record.output if isinstance(record.output, Mapping) else {}
        call = f"{record.name}({self._arguments(given)})"
        if outcome.get("declined"):
            self._lines.line(("dim", "  ↳ "), ("yellow", f"{call} declined by the person"))
        elif outcome.get("error"):
            self._lines.line(("dim", "  ↳ "), ("red", f"{call} → {self._masked(str(outcome.get('content')), 100)}"))
        else:
            self._lines.line(("dim", "  ↳ "), call, " → ", self._masked(str(outcome.get("content", "")), 100))
        agent = _agent_of(record.path)
        name = self._running.get(agent)
        if name is not None and not self._asked.get(agent):  # its turn's calls are done: the model's next turn
            self._spin(f"[bold]{escape(name)}[/] running…")

    def _arguments(self, arguments: Any) -> str:
        return self._masked(json.dumps(arguments, ensure_ascii=False, default=str), 60)

    def _masked(self, text: str, limit: int) -> str:
        """``text`` masked, then cut (a secret is never shown in part)."""
        return short(self.redactor.text(text) if self.redactor is not None else text, limit)

    def _end_stream(self) -> None:
        if self._streaming is not None:
            self._streaming = None
            self._lines.line()  # the streamed line's end

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
        if record.kind == TOOL_CALL_KIND:
            self._tool_finished(record)
            return
        if record.kind == MODEL_TURN_KIND:  # internal: its calls are shown as they run
            asked = record.output.get("tool_calls") if isinstance(record.output, Mapping) else None
            self._asked[_agent_of(record.path)] = deque(
                (str(call.get("name")), call.get("arguments")) for call in asked or () if isinstance(call, Mapping)
            )
            return
        if record.kind != "step":
            return
        self._running.pop(record.path, None)
        self._asked.pop(record.path, None)
        self._stop_status()
        if self._streaming == record.path:  # a stream that ended without a reply (the step failed)
            self._streaming = None
            self._lines.line()  # the streamed line's end

    def note(self, message: str) -> None:
        # Printed above a running spinner, which keeps turning: a retry's note comes while its step still runs.
        if self._quiet:
            return
        self._end_stream()  # a reply cut off mid-stream: its text stays, on its own line
        self._lines.line(("dim", message))

    def events_committed(self, events: Sequence[TraceEvent]) -> None:
        if self.events is not None:
            self.events(events)

    def close(self) -> None:
        self._stop_status()
        self._end_stream()  # a reply cut off mid-stream (Ctrl-C): what comes next starts on a line of its own


def _agent_of(path: str) -> str:
    """The path of the agent step whose tool loop a turn or call at ``path`` (``P/tool/N``) belongs to."""
    return path.rsplit("/", 2)[0]
