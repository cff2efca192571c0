"""``flujo lens trace --expand NAME``: a step is found by its name as the blueprint writes it (a name holding
``/`` is escaped in its path, ``chat%2F1``), by its full path or the path of a step or iteration above it;
a value that names no step is one line with the closest names and exit code 1 (docs/lens.md)."""

from __future__ import annotations

import json
from pathlib import Path

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

BLUEPRINT = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: ["hello there"]}
steps:
  - kind: loop
    name: outer
    loop:
      max_loops: 1
      body:
        - {kind: step, name: chat/1, uses: agents.bot}
  - {kind: step, name: clarify, uses: agents.bot}
"""

WHOLE = "→ reply hello there"  # a call shown whole (--expand none shows only its label)


def _run(state_db: Path) -> str:
    Path("bp.yaml").write_text(BLUEPRINT, encoding="utf-8")
    code, out, err = flujo(["run", "bp.yaml", "--input", "hi", "--json"])
    assert code == exit_codes.OK, err
    return str(json.loads(out)["run_id"])


def _trace(run_id: str, *expand: str) -> tuple[int, str, str]:
    args = ["lens", "trace", run_id, "--plain", "--expand", "none"]
    for value in expand:
        args += ["--expand", value]
    return flujo(args)


def _opened(out: str) -> list[str]:
    """The steps whose call is shown whole: the step label line above each whole reply."""
    lines = out.splitlines()
    opened = []
    for index, line in enumerate(lines):
        if WHOLE in line:
            label = next(above for above in reversed(lines[:index]) if "✓" in above)
            opened.append(label.split("✓ ")[1].split()[0])
    return opened


def test_a_step_is_found_by_its_name_as_written_by_its_path_and_by_the_path_above_it(state_db: Path) -> None:
    run_id = _run(state_db)
    code, out, err = _trace(run_id)
    assert code == exit_codes.OK and _opened(out) == [], err
    assert "--expand outer/1/chat%2F1 shows" in out  # the hint names the path
    for value in ("chat/1", "outer/1/chat%2F1", "outer/1", "outer"):
        code, out, err = _trace(run_id, value)
        assert code == exit_codes.OK, err
        assert _opened(out) == ["chat/1"], (value, out)
    code, out, _ = _trace(run_id, "clarify", "chat/1")
    assert _opened(out) == ["chat/1", "clarify"]


def test_a_value_that_names_no_step_is_an_error_with_the_closest_names(state_db: Path) -> None:
    run_id = _run(state_db)
    code, out, err = _trace(run_id, "clarfy")
    assert code == exit_codes.FAILED and out == ""
    assert f"error: --expand clarfy: run {run_id} has no step of that name or path" in err
    assert "did you mean clarify?" in err
    code, _, err = _trace(run_id, "zzz")
    assert code == exit_codes.FAILED and "its steps: chat/1, clarify, outer" in err
