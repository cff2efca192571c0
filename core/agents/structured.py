"""Structured output: turning a model's text reply into JSON that matches the agent's ``output_schema``.

A model agent with an ``output_schema`` asks its provider for JSON, checks the reply here, and when the
check fails sends one repair message built here. ``jsonschema`` is imported only when a schema is used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.model.errors import ConfigError
from core.text.schema_check import local_validator, violations

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


@dataclass(frozen=True)
class Checked:
    """The result of checking a reply: ``value`` when it is valid, else ``error`` (one short line)."""

    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class OutputSchema:
    """A compiled ``output_schema``. Building one checks the schema itself (ConfigError when invalid)."""

    def __init__(self, schema: Mapping[str, Any], *, owner: str) -> None:
        import jsonschema  # lazy: ~60 ms of imports, only for agents that declare a schema

        self.schema = dict(schema)
        validator_cls = jsonschema.validators.validator_for(self.schema)
        try:
            validator_cls.check_schema(self.schema)
        except jsonschema.SchemaError as exc:
            raise ConfigError(
                f"{owner} has an invalid output_schema: {exc.message}",
                hint="output_schema must be a JSON Schema, e.g. {type: object, properties: {...}}",
            ) from None
        self._validator: Validator = local_validator(self.schema)
        self._owner = owner

    def check_value(self, value: Any) -> Checked:
        """Validate an already-parsed value (RunError when the schema's $refs cannot be followed)."""
        errors = violations(self._validator, value, owner=f"{self._owner} has an output_schema that")
        if not errors:
            return Checked(value=value)
        first = errors[0]
        where = "/".join(str(part) for part in first.absolute_path)
        return Checked(error=f"at {where}: {first.message}" if where else first.message)

    def check_text(self, text: str) -> Checked:
        """Parse a text reply as JSON (a Markdown code fence around it is tolerated) and validate it."""
        try:
            value = json.loads(strip_fence(text))
        except ValueError as exc:
            return Checked(error=f"the reply is not valid JSON ({exc})")
        return self.check_value(value)

    def instruction(self) -> str:
        """Text for the system prompt, for providers that cannot enforce a schema themselves."""
        return (
            "Reply with a single JSON value, and nothing else, that validates against this JSON Schema:\n"
            + json.dumps(self.schema, ensure_ascii=False)
        )

    def repair_request(self, error: str) -> str:
        """The user message sent after an invalid reply, asking for a corrected one."""
        return (
            f"Your previous reply did not match the required JSON Schema: {error}\n"
            "Reply again with only the corrected JSON, no explanation, matching this schema:\n"
            + json.dumps(self.schema, ensure_ascii=False)
        )


def strip_fence(text: str) -> str:
    """``text`` without a surrounding Markdown code fence (```json ... ```), else unchanged but stripped."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) >= 6:
        inner = stripped[3:-3]
        first_line, newline, rest = inner.partition("\n")
        # The info string (``json``) sits alone on the fence's first line; a one-line fence has none.
        info = first_line.strip()
        has_info_line = bool(newline) and (info == "" or info.isalnum())
        return (rest if has_info_line else inner).strip()
    return stripped
