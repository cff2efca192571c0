"""Each kind of blueprint mistake is reported at its exact file:line:col, with did-you-mean where it helps."""

# Expected messages are kept one per line, whole, so a reader sees exactly what a user sees.
# ruff: noqa: E501

from __future__ import annotations

import pytest

from blueprints import InvalidBlueprint, load_blueprint, validate_file
from core import SourcePosition
from tests.support.blueprint_findings import DATA, rows


def test_yaml_syntax_error_is_one_finding_with_position_excerpt_and_hint() -> None:
    [finding] = validate_file(DATA / "yaml_syntax.yaml")
    assert finding.code == "yaml-syntax"
    assert finding.position is not None
    assert (finding.position.line, finding.position.column) == (5, 4)
    assert "expected <block end>, but found '<block mapping start>'" in finding.message
    assert finding.hint == "check this line's indentation against the lines above it"
    assert finding.excerpt == '5 |    input: "misaligned"\n       ^'


def test_duplicate_keys_and_duplicate_step_names() -> None:
    assert rows("duplicates", severity="error") == [
        (6, 5, "duplicate-key", "duplicate key 'input' (first at line 5)"),
        (12, 17, "duplicate-name", f"step name 'clarify' is already used (first at {DATA / 'duplicates.yaml'}:4:11)"),
    ]


def test_yaml_booleans_as_keys_are_named() -> None:
    [finding] = [f for f in validate_file(DATA / "yaml_bool_keys.yaml") if f.is_error]
    assert finding.message == "duplicate key 'true' (YAML reads 'yes' as true) (first at line 7)"
    warnings = [(f.position.line, f.message) for f in validate_file(DATA / "yaml_bool_keys.yaml") if f.position]
    assert (10, "YAML reads the key 'yes' as true") in warnings


def test_unknown_references_suggest_the_closest_name() -> None:
    assert rows("references", severity="error") == [
        (11, 11, "unknown-reference", "step 'ask' uses agent 'clarifer', which is not defined — did you mean 'clarifier'?"),
        (14, 11, "unknown-reference", "step 'reviewed' uses import 'reveiw', which is not declared — did you mean 'review'?"),
        (20, 21, "unknown-reference", "named_steps names 'planer', which is not a step of this loop — did you mean 'planner'?"),
        (21, 33, "unknown-reference", "user_turn_sources names 'answr', which is not a step of this loop — did you mean 'answer'?"),
        (22, 67, "unknown-reference", "summarizer_agent 'sumarizer' is not defined under agents"),
        (25, 35, "unknown-reference", "from_step names 'get_gaol', but no step has that name — did you mean 'get_goal'?"),
        (32, 24, "unknown-reference", "template refers to steps.planer, but no step is named 'planer' — did you mean 'planner'?"),
    ]  # fmt: skip


def test_rules_across_values() -> None:
    assert rows("rules", severity="error") == [
        (3, 3, "missing-field", "agent 'nothing' has no model: give it model: (or python: or command:), or set default_model in the settings"),
        (4, 16, "bad-value", "agent 'bot': unknown provider 'opanai' — did you mean 'openai'?"),
        (5, 3, "missing-field", "agent 'script': model scripted needs replies: [...]"),
        (11, 7, "bad-value", "use either exit_expression or exit_condition, not both"),
        (13, 7, "bad-value", "use either output_template or output, not both"),
        (15, 25, "bad-value", "init set target must start with 'context.', got 'scratchpad.notes'"),
        (16, 28, "bad-value", "init cannot write 'context.steps.x': only the scratchpad is writable"),
        (17, 11, "missing-field", "an init operation needs one of set, append or merge"),
        (22, 11, "bad-value", "step 'body_step' sets both uses and agent; keep one"),
        (22, 60, "unknown-key", "unknown param 'greeting' for flujo.builtins.passthrough"),
        (23, 5, "missing-field", "conditional 'pick' needs condition_expression or condition"),
        (29, 16, "unknown-reference", "template reads 'contxt', which is not defined — did you mean 'context'?"),
    ]  # fmt: skip


def test_shapes_missing_fields_and_bad_kinds() -> None:
    assert rows("shapes") == [
        (3, 5, "missing-field", "missing 'map' in step 'ask'"),
        (7, 12, "bad-value", "agent: expected 'module:function', got 'just_a_word'"),
        (11, 13, "bad-value", "init: expected a list of set/append/merge operations, or a mapping with history/notes, got 5"),
        (12, 20, "bad-value", "propagation: unknown value 'ctx'"),
        (13, 15, "bad-value", "output: expected a mapping: {text: ...}, {fields: {...}} or field: template pairs, got a list"),
        (14, 13, "bad-value", "body: expected at least 1 item, got an empty list"),
        (17, 15, "bad-value", "branches: expected at least 1 item, got an empty mapping"),
        (18, 13, "bad-value", "reduce: unknown value 'sum'"),
        (19, 5, "bad-value", "a step is a mapping with kind and name, got 'just text'"),
        (21, 5, "unknown-key", "unknown key 'loop' in step 'no_kind'"),
    ]  # fmt: skip
    hints = {f.message: f.hint for f in validate_file(DATA / "shapes.yaml")}
    assert hints["unknown key 'loop' in step 'no_kind'"] == "a step without kind is a plain step; add kind: loop"
    assert (
        hints["reduce: unknown value 'sum'"] == "use 'keys', 'values', 'union', 'concat', 'dedupe', 'first' or 'last'"
    )


def test_python_paths_are_imported_at_validation() -> None:
    assert rows("python_paths") == [
        (3, 20, "import-failed", "cannot import 'tests.no_such_module:run': no module named 'tests.no_such_module'"),
        (7, 12, "import-failed", "cannot import 'tests.support.blueprint_skills:shoutt': 'tests.support.blueprint_skills' has no 'shoutt' — did you mean 'shout'?"),
        (10, 12, "import-failed", "'tests.support.blueprint_skills:NOT_A_FUNCTION' is not a function (it is a value of type int)"),
        (14, 23, "import-failed", "exit_condition 'tests.support.blueprint_skills:not_plain' is an async function; it must be a plain function returning a value"),
    ]  # fmt: skip


def test_template_errors_inside_block_scalars_point_at_the_template_line() -> None:
    assert rows("block_template", severity="error") == [
        (8, 7, "template-syntax", "template syntax error: unexpected '}'"),
        (12, 25, "template-syntax", "expression syntax error: unexpected 'end of template'"),
        (18, 16, "unknown-reference", "template refers to steps.nowhere, but no step is named 'nowhere'"),
    ]


def test_missing_import_file_is_an_error_at_the_imports_entry() -> None:
    [finding] = [f for f in validate_file(DATA / "imports_missing.yaml") if f.is_error]
    assert finding.position == SourcePosition(str(DATA / "imports_missing.yaml"), 2, 19)
    assert finding.message == f"imports.review: file 'review.yaml' not found (looked for {DATA / 'review.yaml'})"
    assert finding.hint == "paths are relative to the folder of imports_missing.yaml"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty", "the blueprint is empty"),
        ("not_mapping", "the blueprint: expected a mapping, got a list"),
    ],
)
def test_empty_or_wrong_documents(name: str, message: str) -> None:
    [finding] = validate_file(DATA / f"{name}.yaml")
    assert finding.is_error and finding.message == message
    assert finding.position is not None and (finding.position.line, finding.position.column) == (1, 1)


def test_missing_and_unreadable_files_are_one_finding(tmp_path: object) -> None:
    [missing] = validate_file(DATA / "no_such_file.yaml")
    assert (missing.code, missing.position, missing.file) == ("file-unreadable", None, str(DATA / "no_such_file.yaml"))
    [folder] = validate_file(DATA)
    assert folder.code == "file-unreadable" and "is a folder" in folder.message


def test_load_blueprint_raises_the_first_error_with_all_findings() -> None:
    with pytest.raises(InvalidBlueprint) as caught:
        load_blueprint(DATA / "anchor_structure.yaml")
    error = caught.value
    assert error.position is not None and (error.position.line, error.position.column) == (7, 7)
    assert error.message == (
        "unknown key 'conversaton' in loop settings of step 'chat' — did you mean 'conversation'? (and 9 more errors)"
    )
    assert str(error).startswith(f"{DATA / 'anchor_structure.yaml'}:7:7: unknown key 'conversaton'")
    assert len(error.findings) == 10


def test_expressions_are_checked_for_names_too() -> None:
    assert rows("expressions") == [
        (6, 43, "unknown-reference", "expression refers to steps.pol, but no step is named 'pol' — did you mean 'poll'?"),
        (12, 28, "unknown-reference", "expression reads 'iteration', which is not defined"),
        (18, 14, "unknown-reference", "expression reads 'itmes', which is not defined"),
    ]  # fmt: skip
