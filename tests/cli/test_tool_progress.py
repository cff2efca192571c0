"""What a person watching ``flujo run`` sees of an agent's tool calls, through the real command (issue 32):
one line per call with its arguments and its result (an error as the tool's error, a declined call as
declined), masked like a trace, the approval's question between them, the model's turns not at all; with
``--json``, none of it. The reporter itself is tested in tests/cli/test_progress.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo_process

BLUEPRINT = """\
version: "0.1"
name: customers
tools:
  lookup: {python: "customer_tools:lookup"}
  forget:
    python: "customer_tools:forget"
    approve: ask
agents:
  helper:
    model: scripted
    tools: [lookup, forget]
    replies:
      - {tool_calls: [{name: lookup, arguments: {customer: "42"}}, {name: lookup, arguments: {customer: "x"}}]}
      - {tool: forget, arguments: {customer: "42"}}
      - "Customer 42 is Ada."
steps:
  - {kind: step, name: answer, uses: agents.helper}
"""
TOOLS = '''\
def lookup(customer: str) -> str:
    """Look a customer up."""
    if not customer.isdigit():
        raise ValueError(f"no customer {customer!r}")
    return f"customer {customer}: Ada, password=hunter2x"


def forget(customer: str) -> str:
    """Forget a customer."""
    return "forgotten"
'''


@pytest.fixture
def blueprint(tmp_path: Path) -> Path:
    (tmp_path / "customer_tools.py").write_text(TOOLS, encoding="utf-8")
    path = tmp_path / "customers.yaml"
    path.write_text(BLUEPRINT, encoding="utf-8")
    return path


def test_each_tool_call_is_a_line_and_the_model_s_turns_are_not_shown(blueprint: Path, tmp_path: Path) -> None:
    env = {"FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    run = flujo_process(["run", str(blueprint), "--input", "Who is 42?", "--answer", "n"], env=env)
    assert run.returncode == exit_codes.OK, run.stderr
    assert run.stdout == "Customer 42 is Ada.\n"
    lines = run.stderr.splitlines()
    assert lines[:-1] == [
        '  ↳ lookup({"customer": "42"}) → customer 42: Ada, password=[REDACTED]',
        '  ↳ lookup({"customer": "x"}) → Error: ValueError: no customer \'x\'',
        '? Allow helper to call forget({"customer": "42"})? [y/N] (answered) n',
        '  ↳ forget({"customer": "42"}) declined by the person',
        "answer › Customer 42 is Ada.",
    ]
    assert lines[-1].startswith("✓ completed run ")
    assert "hunter2x" not in run.stderr  # masked on the screen, kept whole in the journal (lens shows it masked)


def test_with_json_no_tool_line_is_shown(blueprint: Path, tmp_path: Path) -> None:
    env = {"FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    run = flujo_process(["run", str(blueprint), "--input", "Who is 42?", "--answer", "y", "--json"], env=env)
    assert run.returncode == exit_codes.OK, run.stderr
    assert json.loads(run.stdout)["output"] == "Customer 42 is Ada."
    assert "↳" not in run.stderr and "lookup" not in run.stderr  # the question (about forget) still is
