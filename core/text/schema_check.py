"""JSON Schema checks for human answers and agent outputs (jsonschema, imported only when needed).

A ``$ref`` resolves only inside its schema (and the drafts' own meta-schemas): nothing is fetched, where
jsonschema by default would fetch a remote one. A schema that cannot be used — a ``$ref`` that does not
resolve, ``$ref``s that lead back to themselves — is a RunError naming the problem (``flujo validate``
refuses such schemas first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from core.model.errors import RunError
from core.text.excerpts import source_window

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

_REF_HINT = "make each $ref point inside the schema (e.g. '#/$defs/name'), to a schema that is not only a $ref"


def local_validator(schema: Mapping[str, Any]) -> Validator:
    """jsonschema's validator for ``schema`` (its draft by ``$schema``), fetching no ``$ref``."""
    import jsonschema  # lazy: ~60 ms of imports, only for blueprints that declare schemas
    from referencing import Registry

    validator_cls = jsonschema.validators.validator_for(schema)
    return validator_cls(schema, registry=Registry())


def violations(validator: Validator, value: Any, *, owner: str = "the schema") -> list[ValidationError]:
    """What is wrong with ``value`` under ``validator``'s schema, by place; RunError ("``owner`` cannot be
    used: ...") when the schema itself cannot be used."""
    from referencing.exceptions import Unresolvable

    try:
        return sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except Unresolvable as exc:
        message = f"{owner} cannot be used: $ref {exc.ref!r} does not resolve inside the schema"
        raise RunError(message + " (a remote reference is never fetched)", hint=_REF_HINT) from None
    except RecursionError:
        raise RunError(f"{owner} cannot be used: its $refs lead back to themselves", hint=_REF_HINT) from None


def schema_errors(value: Any, schema: Mapping[str, Any]) -> str | None:
    """None when ``value`` satisfies ``schema``, else one short line saying what is wrong. jsonschema's
    message repeats the value it rejects: a long one (a pasted answer) is shown as its first
    ``EXCERPT_WIDTH`` characters; the value itself is the caller's, unchanged."""
    errors = violations(local_validator(schema), value)
    if not errors:
        return None
    first = errors[0]
    quoted = repr(first.instance)
    shown, _ = source_window(quoted, 1)
    message = first.message.replace(quoted, shown, 1) if shown != quoted else first.message
    where = "/".join(str(part) for part in first.path)
    return f"{where}: {message}" if where else message


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
