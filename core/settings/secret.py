"""``Secret``: a text that must not be shown, an API key of the settings (``ProviderSettings.api_key``).

Its ``repr`` and ``str`` mask it as pydantic's ``SecretStr`` does (``'**********'``, empty when it is), so a
settings object printed in a traceback or a log shows no key; ``get_secret_value()`` gives it. It is its own
small type, not ``SecretStr``: importing that costs a start-up what the settings cost without it, and a
pickled settings object holding one would import pydantic to be read back (``core.settings.kept_settings``). The
settings' check (``core.settings.validating``) makes one of a text, and writes its JSON Schema as
``SecretStr``'s (a write-only password string).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
    from pydantic_core import CoreSchema


class Secret:
    """A text kept out of every ``repr`` and ``str``; ``get_secret_value()`` gives it."""

    __slots__ = ("_secret_value",)

    def __init__(self, secret_value: str) -> None:
        self._secret_value = secret_value

    def get_secret_value(self) -> str:
        return self._secret_value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._secret_value == self._secret_value

    def __hash__(self) -> int:
        return hash(self._secret_value)

    def __str__(self) -> str:
        return "**********" if self._secret_value else ""

    def __repr__(self) -> str:
        return f"Secret({str(self)!r})"

    def __len__(self) -> int:
        return len(self._secret_value)

    def __getstate__(self) -> str:
        return self._secret_value

    def __setstate__(self, state: str) -> None:
        self._secret_value = state

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """A ``Secret`` as it is, or one made of a text (lax: what pydantic's ``str`` takes)."""
        from pydantic_core import core_schema

        made = core_schema.no_info_after_validator_function(cls, core_schema.str_schema())
        return core_schema.json_or_python_schema(
            json_schema=made,
            # Refused as SecretStr refuses: "Input should be a valid string" (string_type).
            python_schema=core_schema.union_schema(
                [core_schema.is_instance_schema(cls), made], custom_error_type="string_type"
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        """``SecretStr``'s: a string, written only, a password."""
        return {"type": "string", "writeOnly": True, "format": "password"}
