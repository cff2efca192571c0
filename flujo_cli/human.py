"""The human at the terminal: HITL answers from flags, an answers file, a TTY prompt or piped stdin.

Order of answers for each question: ``--answers`` entries for that step's path (``chat/answer``: the names of
the steps enclosing it and its own, ``core.steps.paths``), then for its name, then the positional
``--answer``/``--answers`` list, then the terminal (a line-editing prompt on a TTY, see
``flujo_cli.line_input``; one line per question when stdin is piped). When none is left and no terminal may
be used, ``ask`` returns None: the run pauses.

At a terminal an empty answer is asked again, with a hint, unless the step's ``input_schema`` accepts an
empty string; a piped empty line stays an answer (asking again would shift every later answer). A ``[y/N]``
question (a tool call's approval) at a terminal takes Enter for no and asks again after an answer that is
neither a yes nor a no word (``yse``). Every
answer, however given, is remembered so that Up recalls it at the next prompt of the run.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape

from core import (
    BoundsSettings,
    ConfigError,
    HumanQuestion,
    RunError,
    SourcePosition,
    StepPaths,
    parse_answer,
    schema_errors,
    yes_or_no,
)
from flujo_cli.line_input import LineInput
from flujo_cli.line_writer import LineWriter
from flujo_cli.messages import not_utf8_at

EMPTY_ANSWER_HINT = "type an answer, or Ctrl-D to pause the run"
YES_NO_HINT = "answer y to allow the call, or n (or Enter) to decline it"
_LEAST_ROOM = 30


def one_line(answer: str, room: int) -> str:
    """``answer`` as it is echoed: whole when it fits in ``room`` cells of one line, else as much of its first
    line as fits and its length (``xxxx… (1,000,323 characters)``). The run stores the answer whole. A question
    that leaves too little room still gets a few characters of the answer (the line then wraps once)."""
    room = max(room, _LEAST_ROOM)
    if len(answer) <= room and "\n" not in answer and "\r" not in answer and cell_len(answer) <= room:
        return answer
    length = f"… ({len(answer):,} characters)"
    # Its first line, at most a character per cell (a character takes one cell or more: enough to fill it).
    head = (answer.lstrip()[: max(room - len(length), 1)].splitlines() or [""])[0]
    while head and cell_len(head) + len(length) > room:
        head = head[:-1]
    return head + length


def load_answers_file(path: Path, *, bounds: BoundsSettings | None = None) -> tuple[list[str], dict[str, list[str]]]:
    """Read ``--answers FILE``: a YAML/JSON list (in order) or a mapping of step name → answer(s).

    It is read like a blueprint, within the same ``bounds`` (nesting, aliases expanded) and with the same
    rules (a duplicate key is an error, not the last one silently taken); ConfigError names file:line:col.
    """
    from blueprints import parse_yaml

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read answers file {path}: {exc.strerror or exc}") from None
    try:
        source = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        at = SourcePosition.of_byte(str(path), raw, exc.start)
        raise ConfigError(
            f"answers file {at}: not UTF-8 text (byte {exc.start})", hint="save it as UTF-8 YAML or JSON"
        ) from None
    parsed = parse_yaml(source, str(path), bounds=bounds, fast=True)
    problem = next((finding for finding in parsed.findings if finding.is_error), None)
    if problem is not None:
        where = problem.position or path
        raise ConfigError(f"answers file {where}: {problem.message}", hint=problem.hint)
    data = parsed.data
    binary = _binary_at(data, ())
    if binary is not None:
        where = parsed.index.value(binary) or path
        raise ConfigError(
            f"answers file {where}: a binary value (!!binary) cannot be an answer", hint="write the answer as text"
        )

    def text(value: Any) -> str:
        if isinstance(value, str):
            return value
        return value.isoformat() if isinstance(value, date) else json.dumps(value, default=_json_value)

    if isinstance(data, list):
        return [text(item) for item in data], {}
    if isinstance(data, Mapping):
        by_step = {
            str(name): [text(item) for item in value] if isinstance(value, list) else [text(value)]
            for name, value in data.items()
        }
        return [], by_step
    root = parsed.index.value(()) or SourcePosition(str(path), 1, 1)
    raise ConfigError(
        f"answers file {root}: it must hold a list of answers or a mapping of step name to answer(s)",
        hint='e.g. ["first answer", "second"] or {get_goal: "plan a trip", answer: ["yes", "done"]}',
    )


def _binary_at(value: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    """The path of the first binary value (YAML's ``!!binary``: bytes) in an answers file's data, if any."""
    if isinstance(value, bytes):
        return path
    parts = value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list) else ()
    return next((found for key, item in parts if (found := _binary_at(item, (*path, key))) is not None), None)


def _json_value(value: Any) -> Any:
    """The JSON of a value YAML reads that JSON has none for: a date or a time (``2001-12-14``) as ISO 8601 text.
    (The reader builds every list and mapping itself: the other values are JSON's own or binary,
    refused before.)"""
    if isinstance(value, date):  # datetime too
        return value.isoformat()
    raise TypeError(f"an answer cannot hold a {type(value).__name__}")


def accepts_empty(schema: Mapping[str, Any] | None) -> bool:
    """Whether an empty line is a valid answer to a question with this ``input_schema`` (never without one)."""
    return schema is not None and schema_errors(parse_answer("", schema), schema) is None


class TerminalHuman:
    """Answers HITL questions; see the module docstring for where answers come from."""

    def __init__(
        self,
        *,
        answers: Sequence[str] = (),
        by_step: Mapping[str, Sequence[str]] | None = None,
        interactive: bool = True,
        console: Console,
        stdin: TextIO | None = None,
        paths: StepPaths | None = None,
        while_typing: Callable[[], None] | None = None,
    ) -> None:
        self._answers = list(answers)
        self._by_step = {name: list(values) for name, values in (by_step or {}).items()}
        self._paths = paths  # the pipeline's step paths, which ``by_step`` keys may be
        self._interactive = interactive
        self._console = console
        self._lines = LineWriter(console)
        self._stdin = stdin or sys.stdin
        self._last_was_scripted = False
        self._line = LineInput(console)
        self._while_typing = while_typing  # called as a person is asked at a terminal (the run's local models load)

    def key_by(self, paths: StepPaths) -> tuple[str, list[str]] | None:
        """Match the ``--answers`` keys against the step paths of the pipeline run (``paths``) too. Returns the
        first key that is a name several steps of one blueprint have (a step inside a loop, map or parallel
        step of the same name), with their step paths, for the caller to refuse; None otherwise."""
        self._paths = paths
        for key in self._by_step:
            named = paths.ambiguous(key)
            if named:
                return key, named
        return None

    def remember(self, answers: Sequence[str]) -> None:
        """Add answers given earlier in this run (a resumed run's stored answers) to what Up recalls."""
        for answer in answers:
            self._line.remember(answer)

    def unused_keys(self) -> list[str]:
        """The ``--answers`` keys (step names or paths) whose answers no question took."""
        return [key for key, values in self._by_step.items() if values]

    @property
    def unused(self) -> int:
        """How many answers given on the command line (``--answer``, ``--answers``) no question took."""
        return len(self._answers) + sum(len(values) for values in self._by_step.values())

    def pass_over(self, asked: Sequence[tuple[str, str]]) -> None:
        """Drop the answers that these questions ((step name, full path) each) took already, by the rule
        ``ask`` takes them (the step's own answers first, then the list in order): a run re-executed from its
        journal gives its next question the next answer, not the first one again."""
        for step, path in asked:
            self._scripted(step, path)

    def _scripted(self, step: str, path: str) -> str | None:
        step_path = self._paths.of(path) if self._paths is not None else None
        for key in (step_path, step):
            queue = self._by_step.get(key) if key is not None else None
            if queue:
                return queue.pop(0)
        if self._answers:
            return self._answers.pop(0)
        return None

    def _prompt(self, question: HumanQuestion) -> str | None:
        """Ask on the terminal until the answer is not empty (or may be). Ctrl-C or Ctrl-D here pauses the
        run (returns None).

        asyncio.run's own SIGINT handler only cancels the task, which would leave input() blocked; for the
        length of the prompt the default handler is put back so Ctrl-C interrupts the read at once.
        """
        previous = signal.getsignal(signal.SIGINT)
        in_main_thread = threading.current_thread() is threading.main_thread()
        if in_main_thread:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            while True:
                answer = self._line.read(question.message)
                if (at := not_utf8_at(answer)) is not None:
                    self._console.print(f"[red]✗ the answer is not UTF-8 text (byte {at})[/] — please answer again.")
                elif question.yes_no:  # [y/N]: Enter is no; a typo (yse) is asked again, never taken for a no
                    if not answer.strip():
                        return "n"
                    if yes_or_no(answer) is not None:
                        return answer
                    self._console.print(
                        f"[red]✗ {escape(repr(answer.strip()))} is neither yes nor no[/] — {YES_NO_HINT}."
                    )
                elif answer.strip() or accepts_empty(question.input_schema):
                    return answer
                else:
                    self._console.print(f"  [dim]{EMPTY_ANSWER_HINT}[/]")
        except (KeyboardInterrupt, EOFError):
            self._console.print()
            return None
        finally:
            if in_main_thread:
                signal.signal(signal.SIGINT, previous)

    async def ask(self, question: HumanQuestion) -> str | None:
        if question.error is not None:
            if self._last_was_scripted:
                raise RunError(
                    f"the answer given for {question.step!r} was rejected: {question.error}",
                    hint="fix the --answer/--answers value so it matches the step's input_schema",
                )
            self._console.print(f"[red]✗ {escape(question.error)}[/] — please answer again.")
        scripted = self._scripted(question.step, question.full_path or question.path)
        if scripted is not None:
            self._last_was_scripted = True
            self._line.remember(scripted)
            said = f"? {question.message} (answered) "
            shown = one_line(scripted, self._console.width - cell_len(said.rsplit("\n", 1)[-1]))
            self._lines.line(("bold cyan", "?"), " ", question.message, " ", ("dim", "(answered)"), " ", shown)
            return scripted
        self._last_was_scripted = False
        if not self._interactive:
            return None
        if self._stdin.isatty():
            if self._while_typing is not None:
                self._while_typing()
            return self._prompt(question)
        self._lines.line(("bold cyan", "?"), " ", question.message)
        while True:
            line: str = await asyncio.to_thread(self._stdin.readline)
            if not line:
                return None  # end of piped input: pause
            answer = line.rstrip("\n").rstrip("\r")
            if (at := not_utf8_at(answer)) is None:
                break
            self._console.print(f"[red]✗ the answer is not UTF-8 text (byte {at})[/] — please answer again.")
        self._line.remember(answer)
        self._lines.line("  ", ("dim", f"> {one_line(answer, self._console.width - 4)}"))
        return answer
