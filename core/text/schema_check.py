"""JSON Schema checks for human answers and agent outputs (jsonschema, imported only when needed)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def schema_errors(value: Any, schema: Mapping[str, Any]) -> str | None:
    """None when ``value`` satisfies ``schema``, else one short line saying what is wrong."""
    import jsonschema  # lazy: ~60 ms of imports, only for blueprints that declare schemas

    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(part) for part in first.path)
    return f"{where}: {first.message}" if where else first.message


def parse_answer(text: str, schema: Mapping[str, Any] | None) -> Any:
    """Turn a typed answer into the value its schema expects (JSON for objects, numbers, booleans)."""
    if not schema:
        return text
    kind = schema.get("type")
    stripped = text.strip()
    if kind == "string" or (kind is None and "enum" not in schema and "properties" not in schema):
        return text
    if kind == "boolean":
        lowered = stripped.lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        return text
    try:
        return json.loads(stripped)
    except ValueError:  # not JSON, or an integer of more digits than Python reads (sys.get_int_max_str_digits)
        return text
