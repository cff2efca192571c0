"""``flujo validate`` catches what ``flujo run`` would reject: malformed JSON Schemas and templates that
load other templates (``{% include %}`` and friends) are errors at file:line:col, not run-time failures."""

# Expected messages are kept one per line, whole, so a reader sees exactly what a user sees.
# ruff: noqa: E501

from __future__ import annotations

from pathlib import Path

import pytest

from blueprints import validate_file
from tests.support.cli_helpers import flujo

BAD = """version: "0.1"
agents:
  a:
    model: scripted
    replies: ["x"]
    output_schema: {type: 12}
steps:
  - kind: hitl
    name: ask
    message: "hi {% include 'x.html' %}"
    input_schema:
      type: object
      properties: []
  - kind: step
    name: s
    uses: agents.a
    output_schema: {type: object, required: yes}
    input: |
      line one
      {% extends "base" %}
  - kind: step
    name: t
    agent: {id: flujo.builtins.passthrough}
    input: "{% import 'm' as m %}{% from 'n' import x %}"
"""


def test_malformed_schemas_and_loading_templates_are_located(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD, encoding="utf-8")
    found = [(f.position.line, f.position.column, f.code, f.message) for f in validate_file(path) if f.position]
    assert found == [
        (6, 27, "bad-value", "output_schema is not a valid JSON Schema: 12 is not valid under any of the given schemas (at type)"),
        (10, 15, "template-syntax", "template syntax error: {% include %} is not supported: a template cannot load other templates"),
        (13, 19, "bad-value", "input_schema is not a valid JSON Schema: [] is not of type 'object' (at properties)"),
        (17, 45, "bad-value", "output_schema is not a valid JSON Schema: True is not of type 'array' (at required)"),
        (20, 7, "template-syntax", "template syntax error: {% extends %} is not supported: a template cannot load other templates"),
        (24, 13, "template-syntax", "template syntax error: {% import %} is not supported: a template cannot load other templates"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "schema", ["{type: object, properties: {answer: {type: string}}, required: [answer]}", "{enum: [a, b]}", "{}"]
)
def test_valid_schemas_pass_validation(state_db: Path, tmp_path: Path, schema: str) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(
        f'version: "0.1"\nsteps:\n  - kind: hitl\n    name: ask\n    message: "?"\n    input_schema: {schema}\n',
        encoding="utf-8",
    )
    assert [f for f in validate_file(path) if f.is_error] == []
    code, _, err = flujo(["validate", str(path)])
    assert code == 0, err
