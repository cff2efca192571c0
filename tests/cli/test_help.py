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
