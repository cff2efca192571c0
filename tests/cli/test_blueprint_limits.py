"""Blueprints too large or loops too long, through the real CLI: a blueprint over ``bounds.blueprint_max_bytes``
is refused before it is parsed; a YAML over ``bounds.yaml_max_values`` without aliases is refused for its
values, not blamed on aliases it does not have; a ``max_loops`` over ``bounds.loop_max_iterations`` is an
error, and a loop that nothing can end early and that may run more than 10,000 iterations is a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

PASS = "{kind: step, name: %s, agent: {id: flujo.builtins.passthrough}}"


def flow_steps(count: int) -> str:
    return 'version: "0.1"\nsteps:\n' + "".join(f"  - {PASS % f's{n}'}\n" for n in range(count))


def test_a_blueprint_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """The file starts with a YAML syntax error: parsed, it would be reported; refused by its size, only
    the size is."""
    big = tmp_path / "big.yaml"
    big.write_text("steps: [unclosed\n" + "# filler\n" * 600_000, encoding="utf-8")  # 5.4 MB
    code, _, err = flujo(["validate", str(big)])
    assert code == exit_codes.FAILED
    assert f"error: {big} is 5,400,017 bytes, more than the 5,000,000 a blueprint may be" in err
    assert "bounds.blueprint_max_bytes" in err and "syntax" not in err
    code, _, err = flujo(["run", str(big), "--input", "x"])
    assert code == exit_codes.BLUEPRINT and "more than the 5,000,000 a blueprint may be" in err
    small = tmp_path / "small.yaml"
    small.write_text(flow_steps(3), encoding="utf-8")
    code, _, err = flujo(["validate", str(small), "--set", "bounds.blueprint_max_bytes=100"])
    assert code == exit_codes.FAILED and "more than the 100 a blueprint may be" in err


def test_an_import_over_the_size_limit_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text(flow_steps(5), encoding="utf-8")
    (tmp_path / "main.yaml").write_text(
        'version: "0.1"\nimports: {child: child.yaml}\nsteps:\n  - {kind: step, name: c, uses: imports.child}\n',
        encoding="utf-8",
    )
    code, _, err = flujo(["validate", str(tmp_path / "main.yaml"), "--set", "bounds.blueprint_max_bytes=150"])
    assert code == exit_codes.FAILED
    assert f"{tmp_path / 'child.yaml'} is " in err and "a blueprint may be" in err


def test_too_many_values_without_aliases_say_so(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(flow_steps(200), encoding="utf-8")
    code, _, err = flujo(["validate", str(tmp_path / "flow.yaml"), "--set", "bounds.yaml_max_values=1000"])
    assert code == exit_codes.FAILED
    assert "flow.yaml:113:30: error: the YAML holds more than 1,000 values\n" in err, err
    assert "alias" not in err and "bounds.yaml_max_values" in err


def test_too_many_values_with_aliases_still_name_them(tmp_path: Path) -> None:
    bomb = 'version: "0.1"\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n'
    bomb += "c: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nsteps: []\n"
    (tmp_path / "bomb.yaml").write_text(bomb, encoding="utf-8")
    code, _, err = flujo(["validate", str(tmp_path / "bomb.yaml"), "--set", "bounds.yaml_max_values=1000"])
    assert code == exit_codes.FAILED
    assert "the YAML holds more than 1,000 values once its aliases are expanded" in err
    assert "use fewer aliases" in err


@pytest.mark.slow
def test_twenty_thousand_flow_style_steps_are_refused_for_their_values(tmp_path: Path) -> None:
    """The measured case: 1.4 MB of flow-style steps, no alias at all."""
    (tmp_path / "flow.yaml").write_text(flow_steps(20_000), encoding="utf-8")
    code, _, err = flujo(["validate", str(tmp_path / "flow.yaml")])
    assert code == exit_codes.FAILED
    assert "flow.yaml:11113:32: error: the YAML holds more than 100,000 values\n" in err
    assert "alias" not in err
    line, caret = [text for text in err.splitlines() if "|" in text][:2]
    assert line.index("agent: {id") == caret.index("^")  # the caret under its column, past a 5-digit gutter


def loop(max_loops: str, *, body: str = PASS % "a", more: str = "") -> str:
    return (
        'version: "0.1"\nagents:\n  bot: {model: scripted, replies: [{action: finish}]}\nsteps:\n'
        f"  - kind: loop\n    name: spin\n    loop:\n      max_loops: {max_loops}\n{more}      body: [{body}]\n"
    )


def test_a_max_loops_over_the_ceiling_is_refused(state_db: Path, tmp_path: Path) -> None:
    (tmp_path / "huge.yaml").write_text(loop("99999999999999999999999999999999999999"), encoding="utf-8")
    code, _, err = flujo(["validate", "huge.yaml"])
    assert code == exit_codes.FAILED
    assert "huge.yaml:8:18: error: max_loops is a number of 38 digits, more than the 1,000,000 iterations" in err
    assert "bounds.loop_max_iterations" in err
    code, _, err = flujo(["run", "huge.yaml", "--input", "x"])
    assert code == exit_codes.BLUEPRINT and "nothing ran" in err
    (tmp_path / "two.yaml").write_text(loop("2000000", more='      exit_expression: "iteration > 1"\n'))
    code, _, err = flujo(["validate", "two.yaml"])
    assert code == exit_codes.FAILED and "max_loops is 2,000,000, more than the 1,000,000 iterations" in err
    code, _, err = flujo(["validate", "two.yaml", "--set", "bounds.loop_max_iterations=3000000"])
    assert code == exit_codes.OK, err


@pytest.mark.parametrize(
    ("max_loops", "body", "more", "warned"),
    [
        ("50000", PASS % "a", "", True),  # a passthrough body, no exit: all 50,000 iterations
        ("50000", PASS % "a", "      stop_when: agent_finished\n", True),  # and nothing to say finish
        ("10000", PASS % "a", "", False),  # not more than 10,000
        ("50000", PASS % "a", '      exit_expression: "iteration > 3"\n', False),
        ("50000", "{kind: step, name: ask, uses: agents.bot}", "      stop_when: agent_finished\n", False),
        ("50000", "{kind: hitl, name: ask, message: go on}", "      conversation: true\n", False),
        ("50000", "{kind: step, name: ask, uses: agents.bot}", "", True),  # an agent, but nothing listens to it
    ],
    ids=[
        "passthrough",
        "stop-when-no-agent",
        "10000",
        "exit-expression",
        "agent-finished",
        "conversation-hitl",
        "agent-no-stop",
    ],
)
def test_a_loop_nothing_can_end_is_warned_about(
    tmp_path: Path, max_loops: str, body: str, more: str, warned: bool
) -> None:
    (tmp_path / "spin.yaml").write_text(loop(max_loops, body=body, more=more), encoding="utf-8")
    code, _, err = flujo(["validate", str(tmp_path / "spin.yaml")])
    assert code == exit_codes.OK, err
    shown = f"spin.yaml:8:18: warning: this loop runs all {int(max_loops):,} iterations: it has no exit_expression"
    assert (shown in err) is warned, err


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            'version: "0.1"\nsteps:\n  - {kind: step, name: s, agent: {id: flujo.builtins.passthrough}, input: "'
            + "x" * 4_900_000
            + '{{ contxt }}"}\n',
            "contxt",
        ),
        ('version: "0.1"\nx: ' + "[" * 30000 + "]" * 30000 + "\nsteps: []\n", "["),
    ],
    ids=["long-template", "deep-nesting"],
)
def test_a_finding_on_a_very_long_line_shows_a_window_of_it(tmp_path: Path, text: str, found: str) -> None:
    """The source line of a finding is cut to about 120 characters around its column (it was printed whole:
    4.9 MB), the caret under the same character."""
    (tmp_path / "long.yaml").write_text(text, encoding="utf-8")
    code, _, err = flujo(["validate", str(tmp_path / "long.yaml")])
    assert code == exit_codes.FAILED
    lines = err.splitlines()
    assert max(len(line) for line in lines) < 300, [len(line) for line in lines]
    first = next(n for n, line in enumerate(lines) if ": error: " in line)
    line, column = (int(part) for part in lines[first].split("long.yaml:")[1].split(":")[:2])
    source, caret = lines[first + 1], lines[first + 2]
    assert "…" in source, source
    assert source[caret.index("^") :].startswith(found)
    assert text.splitlines()[line - 1][column - 1 :].startswith(found)
