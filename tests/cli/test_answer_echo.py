"""An answer given without the terminal's own echo (piped, ``--answer``) is shown back on one screen line:
whole when it fits, else its start and its length. The run keeps it whole."""

from __future__ import annotations

import json
from pathlib import Path

from flujo_cli import exit_codes
from flujo_cli.human import one_line
from tests.support.cli_helpers import EXAMPLES, flujo

BIG = "x" * 1_000_321 + "ab"  # 1,000,323 characters, as pasted


def test_a_short_answer_is_shown_whole_and_a_long_one_as_its_start_and_length() -> None:
    assert one_line("Plan a trip", 60) == "Plan a trip"
    assert one_line(BIG, 60) == "x" * 36 + "… (1,000,323 characters)"
    assert one_line("first line\nsecond line", 60) == "first line… (22 characters)"
    assert one_line("\n\n  indented start", 60) == "indented start… (18 characters)"
    wide = one_line("日本語" * 30, 60)  # two cells a character: 21 characters fill 42 of the 43 cells left
    assert wide == "日本語" * 7 + "… (90 characters)"
    assert len(one_line(BIG, 5)) == 30  # a question that leaves no room still shows a little


def test_a_pasted_megabyte_is_echoed_on_one_line_and_stored_whole(state_db: Path) -> None:
    code, out, err = flujo(["run", str(EXAMPLES / "clarify.yaml"), "--json"], input=f"{BIG}\nThe views\nJune\n")
    assert code == exit_codes.OK, err[-2000:]
    echoed = [line for line in err.splitlines() if "1,000,323 characters" in line]
    assert len(echoed) == 1 and len(echoed[0]) <= 80, echoed
    assert len(err) < 2000
    output = json.loads(out)["output"]
    assert BIG in json.dumps(output)  # kept whole


def test_a_long_answer_flag_is_echoed_on_one_line(state_db: Path) -> None:
    answers = ("-a", BIG, "-a", "The views", "-a", "June")
    code, _, err = flujo(["run", str(EXAMPLES / "clarify.yaml"), *answers])
    assert code == exit_codes.OK, err[-2000:]
    assert len(err) < 2000
    [echoed] = [line for line in err.splitlines() if "(answered)" in line and "1,000,323 characters" in line]
    assert len(echoed) <= 80, echoed
