"""JSON Schema checks for human answers and agent outputs (jsonschema, imported only when needed).

A ``$ref`` resolves only inside its schema (and the drafts' own meta-schemas): nothing is fetched, where
jsonschema by default would fetch a remote one. A schema that cannot be used — a ``$ref`` that does not
resolve, ``$ref``s that lead back to themselves — is a RunError naming the problem (``flujo validate``
refuses such schemas first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from core.model.errors import RunError
from core.text.excerpts import source_window

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator
    from referencing._core import Resolver  # referencing does not export it

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
    """Turn a typed answer into the value its schema expects (JSON for objects, numbers, booleans). A schema
    that is only a ``$ref`` is read as the schema it points to, and ``allOf``/``anyOf``/``oneOf`` as their
    members: JSON when they all expect JSON (``allOf``: when one does), text when one of them takes text."""
    if not schema:
        return text
    reading = _reading(schema, _References(schema), depth=0)
    if reading == "text":
        return text
    if reading == "boolean":
        lowered = text.strip().lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        return text
    try:
        return json.loads(text.strip())
    except ValueError:  # not JSON, or an integer of more digits than Python reads (sys.get_int_max_str_digits)
        return text


_Reading = Literal["text", "boolean", "json"]
_MAX_DEPTH = 32  # $refs followed and combinators entered before an answer is read as text


def _reading(schema: Any, references: _References, *, depth: int) -> _Reading:
    """How an answer to ``schema`` is read: as text, as yes/no, or as JSON."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return "text"
    kind = schema.get("type")
    if kind == "string":
        return "text"
    if kind == "boolean":
        return "boolean"
    if kind is not None or "enum" in schema or "properties" in schema:
        return "json"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = references.lookup(ref)
        if target is not None:
            return _reading(target, references, depth=depth + 1)
    for key in ("allOf", "anyOf", "oneOf"):
        members = schema.get(key)
        if not isinstance(members, list) or not members:
            continue
        readings = {_reading(member, references, depth=depth + 1) for member in members}
        if key == "allOf":  # every member applies: one that says JSON (or yes/no) says it for the value
            return "json" if "json" in readings else "boolean" if "boolean" in readings else "text"
        if "text" in readings:  # one alternative takes the text as typed
            return "text"
        return "boolean" if readings == {"boolean"} else "json"
    return "text"


class _References:
    """The schemas ``$ref``s point to inside one schema (nothing is fetched); None for a ``$ref`` that does
    not resolve (``schema_errors`` then says so)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._schema = schema
        self._resolver: Resolver[Any] | None = None

    def lookup(self, ref: str) -> Any:
        from referencing import Registry
        from referencing.exceptions import Unresolvable
        from referencing.jsonschema import DRAFT202012, specification_with

        if self._resolver is None:
            dialect = self._schema.get("$schema")
            spec = specification_with(dialect, default=DRAFT202012) if isinstance(dialect, str) else DRAFT202012
            self._resolver = Registry().resolver_with_root(spec.create_resource(self._schema))
        try:
            return self._resolver.lookup(ref).contents
        except (Unresolvable, ValueError):  # ValueError: an unknown $schema dialect
            return None
