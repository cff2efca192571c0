"""The findings API: the JSON format is stable, keys that do nothing where they are written warn."""

# Expected messages are kept one per line, whole, so a reader sees exactly what a user sees.

from __future__ import annotations

import json
from pathlib import Path

import blueprints
from blueprints import findings_to_json, validate_file
from tests.support.blueprint_findings import DATA, rows


def test_public_api_is_pinned() -> None:
    assert set(blueprints.__all__) == {
        "AgentFactory", "Blueprint", "Finding", "InvalidBlueprint", "compile_pipeline",
        "findings_to_json", "load_blueprint", "load_pipeline", "validate_file",
        "Explanation", "explain_blueprint", "ScaffoldError", "WizardAnswers", "render_blueprint", "resolve_answers",
        "simulated_user",
        "ParsedYaml",
        "parse_yaml",
        "ModelOverrides", "ModelOverrideError",
        "SCHEMA_KINDS", "file_schema",
        "ValidatedFiles",  # blueprint files validated before, kept on disk (blueprints.checking.validated)
    } | {  # case files (flujo lens export --case, flujo test)
        "CASE_SUFFIX", "Case", "case_text", "read_case", "ExpectationResult", "Expectations", "RunFacts",
        "check_expectations",
    } | {  # what flujo_cli takes besides (it imports blueprints only through this front door)
        "Note", "StepExplanation", "StepGroup", "WizardQuestion", "parse_wizard_answer",
    }  # fmt: skip
    for name in blueprints.__all__:
        assert hasattr(blueprints, name), name


def test_json_format_is_stable() -> None:
    findings = validate_file(DATA / "anchor_templates.yaml")
    document = findings_to_json(findings)
    assert list(document) == ["file", "valid", "errors", "warnings", "findings"]
    assert document["file"] == str(DATA / "anchor_templates.yaml")
    assert (document["valid"], document["errors"], document["warnings"]) == (False, 2, 2)
    first = document["findings"][0]
    assert list(first) == ["severity", "code", "message", "file", "line", "column", "hint"]
    assert first == {
        "severity": "warning",
        "code": "passthrough-step",
        "message": "step 'first' has no agent; it passes its input through",
        "file": str(DATA / "anchor_templates.yaml"),
        "line": 4,
        "column": 5,
        "hint": "add uses: agents.<name>, or agent: {id: flujo.builtins.passthrough} to make this explicit",
    }
    json.dumps(document)  # plain data all the way down


def test_json_for_a_valid_file_and_for_a_missing_file() -> None:
    valid = findings_to_json(validate_file(DATA / "valid_all_kinds.yaml"), file="x.yaml")
    assert (valid["file"], valid["valid"], valid["errors"], valid["warnings"], valid["findings"]) == (
        "x.yaml", True, 0, 0, [],
    )  # fmt: skip
    missing = findings_to_json(validate_file(DATA / "nope.yaml"))
    assert missing["file"] == str(DATA / "nope.yaml") and missing["valid"] is False
    assert missing["findings"][0]["line"] is None and missing["findings"][0]["code"] == "file-unreadable"


def test_conversation_keys_are_supported_and_only_misplaced_ones_warn() -> None:
    assert rows("pending", severity="warning") == [
        (35, 5, "ignored-key", "use_history has no effect outside a loop with conversation: true"),
    ]
    assert rows("pending", severity="error") == []


def test_imports_are_supported_and_an_imported_file_is_validated_too() -> None:
    """imports_present.yaml has no finding of its own; those of the file it imports are reported with it."""
    assert validate_file(DATA / "imports_present.yaml") == validate_file(DATA / "valid_all_kinds.yaml")


def test_keys_that_would_do_nothing_warn() -> None:
    assert rows("ignored") == [
        (3, 22, "ignored-key", "replies has no effect on agent 'bot'; only model: scripted uses them"),
        (4, 58, "ignored-key", "system_prompt has no effect on agent 'tool', which is not a model"),
        (10, 7, "ignored-key", "stop_when is ignored because this loop has an explicit exit_expression/exit_condition"),
        (11, 7, "ignored-key", "history_management has no effect without conversation: true"),
        (15, 11, "passthrough-step", "step 'plain' has no agent; it passes its input through"),
        (17, 11, "ignored-key", "output_schema has no effect on step 'plain', which has no agent"),
        (21, 7, "ignored-key", "named_steps has no effect unless ai_turn_source is named_steps"),
    ]  # fmt: skip


def test_the_excerpt_of_a_long_line_is_a_window_around_the_column(tmp_path: Path) -> None:
    """A finding at the end of a 5,000-character line shows about 120 characters around its column, cut with
    …, the caret still under the column (the whole line, printed, was megabytes for a hostile file)."""
    path = tmp_path / "long.yaml"
    filler = "x" * 5000
    path.write_text(
        'version: "0.1"\nsteps:\n  - kind: step\n    name: s\n    agent: {id: flujo.builtins.passthrough}\n'
        f'    input: "{filler} {{{{ contxt }}}} {filler}"\n',
        encoding="utf-8",
    )
    [finding] = [f for f in validate_file(path) if f.is_error]
    assert finding.position is not None and finding.excerpt is not None
    assert finding.message.startswith("template reads 'contxt'")
    line, caret = finding.excerpt.split("\n")
    assert line.startswith("6 | …") and line.endswith("…") and len(line) <= 130, line
    assert caret.index("^") == line.index("contxt")
    short = tmp_path / "short.yaml"
    short.write_text(path.read_text(encoding="utf-8").replace(filler, "x"), encoding="utf-8")
    [finding] = [f for f in validate_file(short) if f.is_error]
    assert finding.excerpt == '6 |     input: "x {{ contxt }} x"\n                     ^'
