"""``--help`` reads like a terminal tool's help: values named by what to type (``FILE``, ``TEXT``,
``KEY=VALUE``, nothing after a flag), never Python types (``<bool>``, ``<list[str]>``) or braces
(``{file}``), and a description written over several docstring lines is one paragraph."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from flujo_cli.main import app

COMMANDS = [
    [], ["run"], ["resume"], ["validate"], ["explain"], ["create"], ["threads"], ["threads", "list"],
    ["threads", "show"], ["threads", "delete"], ["lens"], ["lens", "list"], ["lens", "show"], ["lens", "trace"],
    ["lens", "prune"],
]  # fmt: skip


def _help(command: list[str]) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: " ".join(command) or "flujo")
def test_help_names_values_without_python_types(command: list[str]) -> None:
    shown = _help(command)
    assert not re.search(r"<[a-z][a-z_\[\] ]*>", shown), shown
    assert not re.search(r"\{[a-z_]+\}", shown), shown


def test_run_help_says_what_to_type() -> None:
    shown = _help(["run"])
    assert "Usage: flujo run [OPTIONS] FILE" in shown
    rows = {line.split()[1]: line for line in shown.splitlines() if re.match(r"│ --", line)}
    assert re.search(r"--set\s+KEY=VALUE\s+Override", rows["--set"])
    assert re.search(r"--answers\s+FILE\s+YAML/JSON", rows["--answers"])
    assert re.search(r"--max-tokens\s+N \[x>=1\]\s+Token limit", rows["--max-tokens"])
    assert re.search(r"--no-input\s+Never prompt", rows["--no-input"])  # a flag takes no value


def test_a_docstring_over_several_lines_is_one_paragraph() -> None:
    shown = _help([])
    assert "steps already done are not run again (a run started with --thread stays in its thread)" in shown


def _every_command() -> list[list[str]]:
    """Every command and group of ``flujo``, as the words that name it."""
    import typer.main

    found: list[list[str]] = []

    def walk(command: object, words: list[str]) -> None:
        found.append(words)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*words, name])

    walk(typer.main.get_command(app), [])
    return found


def test_no_help_is_cut_in_an_80_column_terminal() -> None:
    # A word longer than its column used to be cut with "…" (--model's example lost its end at 80 columns).
    commands = _every_command()
    assert ["lens", "trace"] in commands and ["worker"] in commands
    for command in commands:
        result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
        assert result.exit_code == 0, (command, result.output)
        assert "…" not in result.output, (command, result.output)
