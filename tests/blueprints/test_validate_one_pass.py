"""One ``flujo validate`` pass reports the structure's errors and the later checks' findings together.

Where the structure (the schema) has errors, the later checks (names, references, templates) still run on
the parts that validate (blueprints/checking/salvage.py), so fixing the first batch never uncovers a second. A step
or agent with a structural error is reported for that error only.
"""

# Expected messages are kept one per line, whole, so a reader sees exactly what a user sees.
# ruff: noqa: E501

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from blueprints import validate_file
from tests.support.blueprint_findings import row
from tests.support.cli_helpers import flujo

BOTH = """\
version: "0.1"
agents:
  writer:
    model: scripted
    replies: ["A draft."]
steps:
  - kind: loop
    name: polish
    loop:
      max_loops: three
      body:
        - {kind: step, name: again, uses: agents.writer}
  - kind: step
    name: draft
    uses: agents.writter
  - kind: hitl
    name: review
    message: "Happy with {{ steps.drafts.output }}?"
  - kind: step
    name: publish
    uses: agents.writer
    input: "{{ previous_step | upper }"
  - kind: step
    name: draft
    uses: agents.writer
"""


def _write(tmp_path: Path, text: str, name: str = "flow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def _rows(path: Path) -> list[tuple[int, int, str, str]]:
    return [row(f) for f in validate_file(path)]


def test_one_pass_lists_a_schema_error_and_the_later_errors_of_other_steps(tmp_path: Path) -> None:
    path = _write(tmp_path, BOTH)
    code, out, _ = flujo(["validate", str(path), "--json"])
    assert code == 1
    report = json.loads(out)
    assert {f["file"] for f in report["findings"]} == {str(path)}
    assert [(f["line"], f["column"], f["code"], f["message"]) for f in report["findings"]] == [
        (10, 18, "bad-value", "max_loops: expected a whole number, got 'three'"),
        (15, 11, "unknown-reference", "step 'draft' uses agent 'writter', which is not defined — did you mean 'writer'?"),
        (18, 29, "unknown-reference", "template refers to steps.drafts, but no step is named 'drafts' — did you mean 'draft'?"),
        (22, 13, "template-syntax", "template syntax error: unexpected '}'"),
        (24, 11, "duplicate-name", f"step name 'draft' is already used (first at {path}:14:11)"),
    ]  # fmt: skip
    assert (report["valid"], report["errors"]) == (False, 5)
    # flujo run refuses it with every error at once, as validate lists them.
    code, _, err = flujo(["run", str(path), "--no-input"])
    assert code == 3
    assert "5 error(s); nothing ran." in err


def test_fixing_the_schema_errors_uncovers_nothing_new(tmp_path: Path) -> None:
    broken = _rows(_write(tmp_path, BOTH))
    fixed = _rows(_write(tmp_path, BOTH.replace("max_loops: three", "max_loops: 3")))
    assert fixed == [r for r in broken if r[2] != "bad-value"]


def test_a_broken_step_reports_its_structure_only(tmp_path: Path) -> None:
    # 'draft' misspells agent: without it the step would pass its input through, but that warning would
    # only be an echo of the typo. The loop misspells conversation: its body's use_history warning would
    # be an echo too; the body's own error (a bad template) is not, and is reported.
    path = _write(
        tmp_path,
        """\
        version: "0.1"
        agents:
          writer: {model: scripted, replies: ["A draft."]}
        steps:
          - kind: step
            name: draft
            agnet: agents.writer
          - kind: loop
            name: talk
            loop:
              conversaton: true
              max_loops: 2
              body:
                - kind: step
                  name: reply
                  uses: agents.writer
                  use_history: true
                  input: "{{ previous_step }"
          - kind: step
            name: after
            input: "{{ steps.drfat.output }}"
        """,
    )
    assert _rows(path) == [
        (7, 5, "unknown-key", "unknown key 'agnet' in step 'draft' — did you mean 'agent'?"),
        (11, 7, "unknown-key", "unknown key 'conversaton' in loop settings of step 'talk' — did you mean 'conversation'?"),
        (18, 19, "template-syntax", "template syntax error: unexpected '}'"),
        (19, 5, "passthrough-step", "step 'after' has no agent; it passes its input through"),
        (21, 16, "unknown-reference", "template refers to steps.drfat, but no step is named 'drfat' — did you mean 'draft'?"),
    ]  # fmt: skip


def test_steps_and_agents_with_errors_keep_their_names(tmp_path: Path) -> None:
    # A hitl step without message (a note: it asks a default question), a step of an unknown kind and an agent that is not a mapping are still
    # known by name: the steps that read them get no false "not defined".
    path = _write(
        tmp_path,
        """\
        version: "0.1"
        agents:
          writer: scripted
        steps:
          - kind: hitl
            name: ask
          - kind: lop
            name: polish
          - kind: step
            name: use
            uses: agents.writer
            input: "{{ steps.ask.output }} {{ steps.polish.output }} {{ steps.nope.output }}"
        """,
    )
    assert _rows(path) == [
        (3, 11, "bad-value", "writer: expected a mapping, got 'scripted'"),
        (5, 5, "default-question", "step 'ask' has no message: it asks \"Your answer for 'ask'?\""),
        (7, 11, "unknown-kind", "unknown step kind 'lop' — did you mean 'loop'?"),
        (12, 65, "unknown-reference", "template refers to steps.nope, but no step is named 'nope'"),
    ]


def test_a_step_without_a_name_is_checked_inside(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        version: "0.1"
        steps:
          - kind: loop
            loop:
              max_loops: 2
              body:
                - kind: step
                  name: inner
                  input: "{{ previous_step }"
        """,
    )
    assert [r[2:] for r in _rows(path)] == [
        ("missing-field", "missing 'name' in a step"),
        ("template-syntax", "template syntax error: unexpected '}'"),
    ]


@pytest.mark.parametrize(
    ("broken", "first"),
    [
        ("imports: {review: 3}", "review: expected text, got 3"),
        ("agents: [writer]", "agents: expected a mapping, got a list"),
    ],
)
def test_nothing_is_salvaged_when_what_others_refer_to_is_broken(tmp_path: Path, broken: str, first: str) -> None:
    # Without its imports or agents, every step that uses them would get a false "not defined": only the
    # structure's errors are reported, as before.
    path = _write(
        tmp_path,
        f"""\
        version: "0.1"
        {broken}
        steps:
          - kind: step
            name: draft
            input: "{{{{ previous_step }}"
        """,
    )
    assert [r[3] for r in _rows(path)] == [first]


def test_imports_of_a_file_with_structure_errors_are_followed(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        version: "0.1"
        imports: {review: review.yaml}
        steps:
          - kind: step
            name: check
            uses: imports.review
            max_loops: 2
        """,
    )
    assert [r[2:] for r in _rows(path)] == [
        ("unknown-reference", f"imports.review: file 'review.yaml' not found (looked for {tmp_path / 'review.yaml'})"),
        ("unknown-key", "unknown key 'max_loops' in step 'check'"),
    ]
