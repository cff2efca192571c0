"""``flujo create``: ask the wizard's questions in the terminal, write the blueprint, validate it.

The questions, their defaults and checks live in ``blueprints.scaffold``; this module shows them (with
the line-editing prompt of ``flujo_cli.line_input``), re-asks an answer that does not fit, and writes the
file. A flag answers its question without asking; ``--no-interactive`` takes the defaults for the rest;
``--wizard`` says "ask" explicitly (the default).
An existing file is never replaced without ``--force``. Ctrl-C or the end of stdin at a question stops
without writing anything.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

import flujo_cli.exit_codes as exit_codes
from flujo_cli.line_input import LineInput
from flujo_cli.messages import error_line, fail, flujo_command, stderr, usage_error

if TYPE_CHECKING:
    from blueprints import WizardQuestion


def _shown(value: Any) -> str:
    """A default as the person would type it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(str(item) for item in value)
    return str(value)


_ELSEWHERE = "choose another --output (or --name)"


def _refuse_existing(path: Path, force: bool) -> tuple[str, str] | None:
    """Why ``create`` cannot write ``path``, and the hint that helps; None when it can.

    Only an existing file is helped by ``--force``: a folder, a device or a missing folder is not, so their
    hint does not offer it."""
    from core import not_a_file

    found = not_a_file(path)
    if found not in (None, "nothing"):  # a folder, a device (/dev/full): nowhere to write a blueprint file
        return f"{path} is {found}; give a file name with --output", _ELSEWHERE
    if path.exists() and not force:
        return (
            f"{path} already exists; flujo create does not replace a file without --force",
            f"{_ELSEWHERE}, or add --force to replace it",
        )
    if not path.parent.is_dir():
        return f"the folder {path.parent} does not exist", f"{_ELSEWHERE}, or create the folder first"
    return None


def _free_name(name: str) -> str:
    """``name``, or when ``NAME.yaml`` exists here, the first of ``name_2``, ``name_3``... whose file does not."""
    candidate, number = name, 1
    while Path(f"{candidate}.yaml").exists():
        number += 1
        candidate = f"{name}_{number}"
    return candidate


class _Terminal:
    """Asks one question at a time on ``console`` until the answer fits."""

    def __init__(self, console: Console, *, output: Path | None, force: bool) -> None:
        self.console = console
        self.output = output
        self.force = force
        self.line = LineInput(console)

    def __call__(self, question: WizardQuestion, default: Any, values: Mapping[str, Any]) -> Any:
        from blueprints import ScaffoldError, parse_wizard_answer

        text = question.text(values)
        if question.choices is not None:
            text += f" [{'/'.join(question.choices(values))}]"
        elif question.kind == "yes_no":
            text += " [yes/no]"
        for line in question.help:
            self.console.print(f"  [dim]{escape(line)}[/]")
        if question.key == "name" and self.output is None and not self.force and isinstance(default, str):
            default = _free_name(default)  # Enter keeps the default: never one refused below
        shown = _shown(default)
        while True:
            typed = self.line.read(text, default=shown)
            if not sys.stdin.isatty():  # piped answers are not echoed by a terminal: show them
                self.console.print(f"[dim]{escape(typed)}[/]")
            try:
                value = parse_wizard_answer(question, typed, values)
            except ScaffoldError as exc:
                self.console.print(f"  [red]✗ {escape(exc.message)}[/] — please answer again.")
                continue
            if question.key == "name" and self.output is None:
                refused = _refuse_existing(Path(f"{value}.yaml"), self.force)
                if refused is not None:
                    self.console.print(f"  [red]✗ {escape(refused[0])}[/] — choose another name.")
                    continue
            return value


def asks_questions(*, interactive: bool | None, wizard: bool) -> bool:
    """Whether ``create`` asks the questions no flag answers: it does unless told ``--no-interactive``.

    ``--wizard`` (the name the design and the first releases gave it) and ``--interactive`` both say what
    ``create`` does by default; ``--wizard --no-interactive`` asks for both at once and is refused (exit 2)."""
    if wizard and interactive is False:
        usage_error(
            "--wizard and --no-interactive contradict each other: --wizard asks the questions, --no-interactive"
            " asks none",
            "drop one: flujo create --wizard asks them; flujo create --no-interactive takes the defaults",
        )
    return interactive is not False


def create_blueprint(
    given: Mapping[str, Any], *, output: Path | None, force: bool, interactive: bool | None, wizard: bool, debug: bool
) -> int:
    """Write the blueprint the answers describe (asking for the rest unless ``--no-interactive``); the exit code."""
    interactive = asks_questions(interactive=interactive, wizard=wizard)
    console = stderr()
    try:
        from blueprints import ScaffoldError, render_blueprint, resolve_answers, validate_file
        from flujo_cli.findings_view import render_findings

        early = output if output is not None else Path(f"{given['name']}.yaml") if given.get("name") else None
        refused = _refuse_existing(early, force) if early is not None else None
        if refused is not None:
            usage_error(*refused)
        if interactive:
            console.print(
                "[bold]flujo create[/]: a few questions, then a blueprint you can run. Enter keeps the default."
            )
        try:
            answers = resolve_answers(given, _Terminal(console, output=output, force=force) if interactive else None)
        except ScaffoldError as exc:
            usage_error(exc.message, exc.hint or "see: flujo create --help")
        path = output if output is not None else Path(f"{answers.name}.yaml")
        refused = _refuse_existing(path, force)
        if refused is not None:
            usage_error(*refused)
        shown = shlex.quote(str(path))
        try:
            path.write_text(render_blueprint(answers, file=shown), encoding="utf-8")
        except OSError as exc:  # a full disk, a file of /proc
            usage_error(f"cannot write {path}: {exc.strerror or exc}", "choose another --output")
        findings = validate_file(path)
        render_findings(findings, console)
        if any(finding.is_error for finding in findings):
            console.print(
                f"[bold red]✗ wrote {escape(str(path))}, but it has errors[/] (above); fix them, then run it."
            )
            return exit_codes.FAILED
        console.print(f"[green]✓ wrote {escape(str(path))}[/] (valid)")
        run = f"{flujo_command()} run {shown}" + (' --input "..."' if answers.start == "input" else "")
        console.print(f"  run it:      [bold]{escape(run)}[/]")
        console.print(f"  explain it:  [bold]{escape(flujo_command())} explain {escape(shown)}[/]")
        return exit_codes.OK
    except (KeyboardInterrupt, EOFError) as exc:
        console.print()
        ended = "stopped with Ctrl-D" if sys.stdin.isatty() else "no more answers (stdin ended)"
        reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else ended
        error_line(f"{reason}: nothing was written", "to create without questions: flujo create --no-interactive")
        return exit_codes.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else exit_codes.USAGE
    except Exception as exc:  # the CLI's top level
        fail(exc, debug=debug)
