"""Text that came from a user or a model is printed as written: Rich's emoji codes (``:x:``, ``:fire:``) stay
codes in error messages, quoted source lines and a run's output, through the real CLI."""

from __future__ import annotations

from pathlib import Path

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

CODED = 'version: "0.1"\nsteps:\n  - {kind: hitl, name: ask, message: "Say :x: and :fire: {{ steps.nope.output }}"}\n'
FAILING = """\
version: "0.1"
steps:
  - {kind: step, name: boom, agent: {id: flujo.builtins.passthrough}, input: "{{ previous_step.nope }} :x:"}
"""


def test_a_validate_error_quotes_the_source_line_as_written(tmp_path: Path) -> None:
    (tmp_path / "coded.yaml").write_text(CODED, encoding="utf-8")
    code, _, err = flujo(["validate", str(tmp_path / "coded.yaml")])
    assert code == exit_codes.FAILED
    assert 'message: "Say :x: and :fire: {{ steps.nope.output }}"' in err
    assert "❌" not in err and "🔥" not in err
    line, caret = [text for text in err.splitlines() if "|" in text][:2]
    assert line.index("steps.nope") == caret.index("^")  # the caret still points at the reference


def test_a_run_error_and_the_output_print_user_text_as_written(state_db: Path, tmp_path: Path) -> None:
    (tmp_path / "failing.yaml").write_text(FAILING, encoding="utf-8")
    code, out, err = flujo(["run", "failing.yaml", "--input", ":fire: go"])
    assert code == exit_codes.FAILED
    assert "'{{ previous_step.nope }} :x:'" in err and "❌" not in err
    (tmp_path / "echo.yaml").write_text(
        'version: "0.1"\nsteps:\n  - {kind: step, name: say, agent: {id: flujo.builtins.passthrough}}\n',
        encoding="utf-8",
    )
    code, out, err = flujo(["run", "echo.yaml", "--input", "done :white_check_mark: :x:"])
    assert code == exit_codes.OK, err
    assert "done :white_check_mark: :x:" in out and "✅" not in out + err
