"""A schema whose ``$ref`` does not resolve inside it, or whose ``$ref``s lead back to themselves, fails the
check of a value with a RunError that says so: never a raw RecursionError or jsonschema error, and never a
fetch of a remote reference (validate refuses such schemas first; this is what the run does if one gets
through)."""

from __future__ import annotations

from typing import Any

import pytest

from core import RunError
from core.agents.structured import OutputSchema
from core.text.schema_check import parse_answer, schema_errors

CYCLE = {"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/a"}}}
REMOTE = {"$ref": "http://127.0.0.1:1/x"}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (CYCLE, "its $refs lead back to themselves"),
        (REMOTE, "$ref 'http://127.0.0.1:1/x' does not resolve inside the schema"),
    ],
)
def test_a_broken_ref_is_a_run_error(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(RunError, match="the schema cannot be used") as caught:
        schema_errors("x", schema)
    assert message in caught.value.message
    with pytest.raises(RunError, match=r"agents\.a has an output_schema that cannot be used") as caught:
        OutputSchema(schema, owner="agents.a").check_value("x")
    assert message in caught.value.message


def test_a_ref_to_the_drafts_own_meta_schema_still_resolves() -> None:
    assert schema_errors({}, {"$ref": "https://json-schema.org/draft/2020-12/schema"}) is None


PLAN = {"type": "object", "properties": {"steps": {"type": "array"}}, "required": ["steps"]}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"$ref": "#/$defs/Plan", "$defs": {"Plan": PLAN}}, {"steps": [1]}),
        (
            {"$ref": "#/definitions/Plan", "definitions": {"Plan": {"$ref": "#/definitions/Real"}, "Real": PLAN}},
            {"steps": [1]},
        ),  # a $ref to a $ref
        ({"anyOf": [{"$ref": "#/$defs/Plan"}, {"type": "array"}], "$defs": {"Plan": PLAN}}, {"steps": [1]}),
        ({"oneOf": [PLAN, {"type": "null"}]}, {"steps": [1]}),
        ({"allOf": [{"$ref": "#/$defs/Plan"}, {"required": ["steps"]}], "$defs": {"Plan": PLAN}}, {"steps": [1]}),
        ({"anyOf": [PLAN, {"type": "string"}]}, '{"steps": [1]}'),  # an alternative takes the text as typed
        ({"$ref": "#/$defs/missing"}, '{"steps": [1]}'),  # schema_errors says the schema cannot be used
        (CYCLE, '{"steps": [1]}'),
        (REMOTE, '{"steps": [1]}'),  # nothing fetched
    ],
    ids=["ref", "ref-to-ref", "anyOf", "oneOf", "allOf", "anyOf-with-text", "unresolved", "cycle", "remote"],
)
def test_an_answer_is_read_as_the_schema_a_ref_or_combinator_leads_to(schema: dict[str, Any], expected: Any) -> None:
    assert parse_answer('{"steps": [1]}', schema) == expected
    if expected != '{"steps": [1]}':
        assert schema_errors(expected, schema) is None


def test_a_yes_no_answer_behind_a_ref_is_a_boolean() -> None:
    schema = {"$ref": "#/$defs/Ok", "$defs": {"Ok": {"type": "boolean"}}}
    assert (parse_answer("yes", schema), parse_answer("n", schema)) == (True, False)
    assert parse_answer("Ada", {"$ref": "#/$defs/Name", "$defs": {"Name": {"type": "string"}}}) == "Ada"
