"""The anchor study's silent failures (flujo-anchor.md (d) 5, 7, 10) are each an error at their line."""

# Expected messages are kept one per line, whole, so a reader sees exactly what a user sees.
# ruff: noqa: E501

from __future__ import annotations

from tests.support.blueprint_findings import rows


def test_unknown_keys_and_wrong_types_are_errors_at_their_own_lines() -> None:
    assert rows("anchor_structure") == [
        (7, 7, "unknown-key", "unknown key 'conversaton' in loop settings of step 'chat' — did you mean 'conversation'?"),
        (8, 7, "unknown-key", "unknown key 'max_loop' in loop settings of step 'chat' — did you mean 'max_loops'?"),
        (12, 11, "unknown-key", "unknown key 'agnet' in step 'assistant' — did you mean 'agent'?"),
        (13, 11, "unknown-key", "unknown key 'use_histroy' in step 'assistant' — did you mean 'use_history'?"),
        (14, 11, "unknown-key", "unknown key 'bogus_key' in step 'assistant'"),
        (18, 21, "bad-value", "conversation: expected true or false, got 'yes please'"),
        (19, 18, "bad-value", "max_loops: expected a whole number, got 'three'"),
        (21, 19, "bad-value", "strategy: unknown value 'truncate_everything'"),
        (22, 21, "bad-value", "max_tokens: expected a whole number, got 'lots'"),
        (26, 11, "unknown-kind", "unknown step kind 'loopp' — did you mean 'loop'?"),
    ]  # fmt: skip


def test_broken_templates_and_unknown_step_references_are_errors() -> None:
    assert rows("anchor_templates", severity="error") == [
        (6, 13, "template-syntax", "template syntax error: unexpected '}'"),
        (9, 22, "unknown-reference", "template refers to steps.nonexistent, but no step is named 'nonexistent'"),
    ]


def test_messages_carry_no_pydantic_boilerplate() -> None:
    for _, _, _, message in rows("anchor_structure") + rows("shapes"):
        assert "errors.pydantic.dev" not in message
        assert "Input should be" not in message
        assert "Field required" not in message
