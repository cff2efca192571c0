"""A parallel step's settings in a ``parallel:`` block (``branches``, ``reduce``, ``merge_strategy``,
``on_branch_failure``), as ``loop:`` and ``map:`` hold theirs, or beside ``kind`` as before: the same step
either way; one form per step, and every mistake named at file:line:col."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blueprints import compile_pipeline, load_blueprint, validate_file
from core import ParallelStep, Settings
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

NESTED = """\
version: "0.1"
agents:
  optimist: {model: scripted, replies: [{verdict: ship}]}
  skeptic: {model: scripted, replies: [{verdict: wait}]}
steps:
  - kind: parallel
    name: reviews
    parallel:
      merge_strategy: keep_first
      on_branch_failure: ignore
      reduce: values
      branches:
        optimist:
          - {kind: step, name: optimist_review, uses: agents.optimist, updates_context: true}
        skeptic:
          - {kind: step, name: skeptic_review, uses: agents.skeptic, updates_context: true}
  - kind: step
    name: decide
    agent: {id: flujo.builtins.stringify}
    input: "{{ context.scratchpad.verdict }} of {{ previous_step | length }}"
"""

FLAT = """\
version: "0.1"
agents:
  optimist: {model: scripted, replies: [{verdict: ship}]}
  skeptic: {model: scripted, replies: [{verdict: wait}]}
steps:
  - kind: parallel
    name: reviews
    merge_strategy: keep_first
    on_branch_failure: ignore
    reduce: values
    branches:
      optimist:
        - {kind: step, name: optimist_review, uses: agents.optimist, updates_context: true}
      skeptic:
        - {kind: step, name: skeptic_review, uses: agents.skeptic, updates_context: true}
  - kind: step
    name: decide
    agent: {id: flujo.builtins.stringify}
    input: "{{ context.scratchpad.verdict }} of {{ previous_step | length }}"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def errors(path: Path) -> list[tuple[int, int, str, str, str | None]]:
    return [
        (f.position.line, f.position.column, f.code, f.message, f.hint)
        for f in validate_file(path)
        if f.is_error and f.position
    ]


def test_the_nested_block_is_the_same_step_as_the_flat_form(tmp_path: Path) -> None:
    steps = []
    for text in (NESTED, FLAT):
        path = write(tmp_path, text)
        assert errors(path) == []
        [parallel, _] = compile_pipeline(load_blueprint(path), Settings()).steps
        assert isinstance(parallel, ParallelStep)
        steps.append(
            (
                [(key, [s.name for s in branch]) for key, branch in parallel.branches],
                parallel.merge_strategy,
                parallel.on_branch_failure,
                parallel.reduce,
            )
        )
    assert (
        steps[0]
        == steps[1]
        == (
            [("optimist", ["optimist_review"]), ("skeptic", ["skeptic_review"])],
            "keep_first",
            "ignore",
            "values",
        )
    )


def test_the_nested_block_runs_and_explains(state_db: Path, tmp_path: Path) -> None:
    path = write(tmp_path, NESTED)
    code, out, err = flujo(["run", str(path), "--input", "logo", "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == "ship of 2"
    code, out, err = flujo(["explain", str(path)])
    assert code == exit_codes.OK, err
    flat = " ".join(out.split())
    assert "Runs 2 branches at the same time (optimist, skeptic)" in flat
    assert "The list of branch outputs, in branch order (reduce: values)" in flat
    assert "optimist_review (step, line 14)" in flat  # a branch step's own line


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # a setting both in the block and beside it
        (
            ("    parallel:\n", "    reduce: concat\n    parallel:\n"),
            (
                8,
                5,
                "unknown-key",
                "unknown key 'reduce' in step 'reviews': it has a parallel: block, which holds reduce",
                "move reduce into the parallel: block (or write every setting beside kind, without the block)",
            ),
        ),
        # a key the block does not know, at the key
        (
            ("      reduce: values\n", "      reduce: values\n      merge: keep_first\n"),
            (
                12,
                7,
                "unknown-key",
                "unknown key 'merge' in parallel settings of step 'reviews'",
                "allowed here: branches, merge_strategy, on_branch_failure, reduce",
            ),
        ),
        # a bad value inside the block, at the value
        (
            ("      reduce: values\n", "      reduce: sum\n"),
            (
                11,
                15,
                "bad-value",
                "reduce: unknown value 'sum'",
                "use 'keys', 'values', 'union', 'concat', 'dedupe', 'first' or 'last'",
            ),
        ),
    ],
)
def test_mistakes_in_the_block_are_named_at_file_line_col(
    tmp_path: Path, edit: tuple[str, str], expected: tuple[int, int, str, str, str]
) -> None:
    before, after = edit
    assert before in NESTED
    path = write(tmp_path, NESTED.replace(before, after, 1))
    assert errors(path) == [expected]
    code, _, err = flujo(["validate", str(path)])
    assert code == exit_codes.FAILED and f"{path}:{expected[0]}:{expected[1]}: error: {expected[3]}" in err


def test_a_parallel_step_without_branches_is_one_located_error(tmp_path: Path) -> None:
    path = write(tmp_path, 'version: "0.1"\nsteps:\n  - kind: parallel\n    name: fan\n    reduce: values\n')
    assert errors(path) == [
        (
            3,
            5,
            "missing-field",
            "missing 'branches' in step 'fan'",
            "add a parallel: block holding branches: {<name>: [steps]} (or branches: beside kind)",
        )
    ]
    path = write(
        tmp_path, 'version: "0.1"\nsteps:\n  - kind: parallel\n    name: fan\n    parallel: {reduce: values}\n'
    )
    assert [row[:4] for row in errors(path)] == [
        (5, 15, "missing-field", "missing 'branches' in parallel settings of step 'fan'")
    ]


def test_a_plain_step_holding_a_parallel_block_is_told_to_add_its_kind(tmp_path: Path) -> None:
    path = write(tmp_path, 'version: "0.1"\nsteps:\n  - name: fan\n    parallel: {branches: {a: [{name: s}]}}\n')
    [(line, column, code, message, hint)] = errors(path)
    assert (line, column, code, message) == (4, 5, "unknown-key", "unknown key 'parallel' in step 'fan'")
    assert hint == "a step without kind is a plain step; add kind: parallel"
