"""A schema whose ``$ref`` does not resolve inside it, or whose ``$ref``s lead back to themselves, fails the
check of a value with a RunError that says so: never a raw RecursionError or jsonschema error, and never a
fetch of a remote reference (validate refuses such schemas first; this is what the run does if one gets
through)."""

from __future__ import annotations

from typing import Any

import pytest

from core import RunError
from core.agents.structured import OutputSchema
from core.text.schema_check import schema_errors

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
