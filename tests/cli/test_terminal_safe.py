"""A reply or a tool's output can hold escape sequences (a window title, an OSC 52 clipboard write, colours
that hide text): flujo shows them as pictures wherever it shows such a text to a person (a run's lines,
``lens show``, ``lens trace``), and keeps them as they are where a program reads them (the run's output,
``--final-output``, ``--json``)."""

from __future__ import annotations

import json
from pathlib import Path

from core.text.terminal import terminal_safe
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

ECHO = """\
version: "0.1"
agents: {e: {model: echo}}
steps: [{kind: step, name: s, uses: agents.e}]
"""
HOSTILE = "a\x1b]0;pwned\x07b\x1b]52;c;ZXZpbA==\x07c\x1b[8md\x00e"


def test_texts_are_shown_without_escape_sequences_and_read_as_they_are(state_db: Path, tmp_path: Path) -> None:
    flow = tmp_path / "echo.yaml"
    flow.write_text(ECHO, encoding="utf-8")
    code, out, err = flujo(["run", str(flow), "--input", HOSTILE])
    assert code == exit_codes.OK, err
    assert out == HOSTILE + "\n"  # the run's output, for a program: as it is
    assert "\x1b" not in err and "s › a␛]0;pwnedb␛]52;c;ZXZpbA==c␛[8md␀e" in err  # its lines, for a person
    code, out, err = flujo(["lens", "list", "--json"])
    run_id = json.loads(out)["runs"][0]["run_id"]
    for command in (["lens", "show", run_id], ["lens", "trace", run_id], ["lens", "trace", run_id, "--expand", "s"]):
        code, shown, err = flujo(command)
        assert code == exit_codes.OK, err
        assert "\x1b]" not in shown and "\x00" not in shown and "␛]0;pwned" in shown, (command, shown)
    code, output, _ = flujo(["lens", "show", run_id, "--final-output"])
    assert code == exit_codes.OK and output == HOSTILE + "\n"


def test_line_breaks_and_tabs_stay_and_the_codes_rich_strips_go() -> None:
    assert terminal_safe("a\tb\nc\r\nd\x07\x08\x0b\x0ce\x7f\x9b") == "a\tb\nc\nde␡�"
