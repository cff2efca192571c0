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


REFS = """version: "0.1"
agents:
  a:
    model: scripted
    replies: ["x"]
    output_schema: {$ref: "#/$defs/a", $defs: {a: {$ref: "#/$defs/b"}, b: {$ref: "#/$defs/a"}}}
steps:
  - kind: hitl
    name: cycle
    message: "?"
    input_schema: {"$ref": "#/definitions/a", definitions: {a: {"$ref": "#/definitions/a"}}}
  - kind: hitl
    name: remote
    message: "?"
    input_schema: {"$ref": "http://127.0.0.1:1/x"}
  - kind: hitl
    name: nowhere
    message: "?"
    input_schema:
      type: object
      properties:
        answer: {$ref: "#/$defs/missing"}
  - kind: step
    name: s
    uses: agents.a
"""


def test_refs_that_do_not_resolve_or_lead_back_to_themselves_are_located(tmp_path: Path) -> None:
    """jsonschema would fetch a remote $ref when a value is checked, and recurse without end on a cycle of
    $refs alone: both are errors before anything runs, at the $ref."""
    path = tmp_path / "refs.yaml"
    path.write_text(REFS, encoding="utf-8")
    found = [(f.position.line, f.position.column, f.code, f.message) for f in validate_file(path) if f.position]
    assert found == [
        (6, 58, "bad-value", "output_schema: $ref '#/$defs/b' leads back to itself through $refs alone (at $defs/a/$ref)"),
        (11, 73, "bad-value", "input_schema: $ref '#/definitions/a' leads back to itself through $refs alone (at definitions/a/$ref)"),
        (15, 28, "bad-value", "input_schema: $ref 'http://127.0.0.1:1/x' does not resolve inside the schema (at $ref)"),
        (22, 24, "bad-value", "input_schema: $ref '#/$defs/missing' does not resolve inside the schema (at properties/answer/$ref)"),
    ]  # fmt: skip
    hints = {f.hint for f in validate_file(path)}
    assert hints == {"a $ref points inside its schema, e.g. $ref: '#/$defs/name'; a remote reference is never fetched"}


def test_a_recursive_schema_through_properties_is_valid_and_runs(state_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text(
        'version: "0.1"\nsteps:\n  - kind: hitl\n    name: ask\n    message: "?"\n    input_schema:\n'
        "      type: object\n      $ref: '#/$defs/node'\n      $defs:\n        node:\n          type: object\n"
        "          properties: {next: {$ref: '#/$defs/node'}}\n",
        encoding="utf-8",
    )
    assert [f for f in validate_file(path) if f.is_error] == []
    (tmp_path / "answers.yaml").write_text('ask: \'{"next": {"next": {}}}\'\n', encoding="utf-8")
    code, out, err = flujo(["run", str(path), "--answers", str(tmp_path / "answers.yaml")])
    assert code == 0, err
    assert "next" in out


WHOLE_SCRATCHPAD = """version: "0.1"
imports: {child: child.yaml}
steps:
  - kind: step
    name: a
    agent: {id: flujo.builtins.passthrough}
    sink_to: scratchpad
  - kind: hitl
    name: ask
    message: "?"
    sink_to: context.scratchpad
  - kind: loop
    name: l
    loop:
      max_loops: 1
      init:
        - set: {target: context.scratchpad, value: "x"}
      body:
        - {kind: step, name: b, agent: {id: flujo.builtins.passthrough}, sink_to: context}
  - kind: step
    name: c
    uses: imports.child
    config:
      outputs: {steps.inner.output: scratchpad}
"""
CHILD = 'version: "0.1"\nsteps:\n  - {kind: step, name: inner, agent: {id: flujo.builtins.passthrough}}\n'


def test_a_write_to_the_whole_scratchpad_is_located(state_db: Path, tmp_path: Path) -> None:
    """The run writes a step's output to a key of the scratchpad, never to the scratchpad (or the context)
    itself: ``sink_to: scratchpad`` failed the run with "cannot write to 'scratchpad'"."""
    path = tmp_path / "sinks.yaml"
    path.write_text(WHOLE_SCRATCHPAD, encoding="utf-8")
    (tmp_path / "child.yaml").write_text(CHILD, encoding="utf-8")
    found = [
        (f.position.line, f.position.column, f.code, f.message, f.hint)
        for f in validate_file(path)
        if f.is_error and f.position
    ]
    assert found == [
        (7, 14, "bad-value", "sink_to: 'scratchpad' names no key in the scratchpad", "e.g. sink_to: scratchpad.a"),
        (11, 14, "bad-value", "sink_to: 'context.scratchpad' names no key in the scratchpad", "e.g. sink_to: scratchpad.ask"),
        (17, 25, "bad-value", "init set target 'context.scratchpad' names no key in the scratchpad", "e.g. target: context.scratchpad.history"),
        (19, 83, "bad-value", "sink_to: 'context' names no key in the scratchpad", "e.g. sink_to: scratchpad.b"),
        (24, 37, "bad-value", "outputs: 'scratchpad' names no key in the parent's scratchpad", "e.g. scratchpad.result"),
    ]  # fmt: skip
    code, _, err = flujo(["run", str(path), "--input", "x"])
    assert code == 3 and "sinks.yaml:7:14: error: sink_to: 'scratchpad' names no key in the scratchpad" in err, err
