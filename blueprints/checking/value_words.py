"""Plain words for values and for pydantic's error types ("expected a whole number, got 'three'")."""

from __future__ import annotations

from typing import Any

_MAX_SHOWN = 40


def show(value: Any) -> str:
    """A short, YAML-flavoured rendering of a value for messages."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= _MAX_SHOWN else value[: _MAX_SHOWN - 1] + "…"
        return repr(text)
    if isinstance(value, dict):
        return "a mapping" if value else "an empty mapping"
    if isinstance(value, list | tuple):
        return "a list" if value else "an empty list"
    return str(value)


# pydantic error type -> what was expected, in plain words.
_EXPECTED = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "text",
    "dict_type": "a mapping",
    "dataclass_type": "a mapping",  # a model's value that is no mapping (each model is a dataclass)
    "list_type": "a list",
    "tuple_type": "a list",
}


def expectation(error_type: str, ctx: dict[str, Any], fallback: str) -> str:
    """What the value should have been, for a pydantic error of ``error_type``."""
    if error_type in _EXPECTED:
        return _EXPECTED[error_type]
    if error_type == "greater_than_equal":
        return f"a number of at least {ctx.get('ge')}"
    if error_type == "greater_than":
        return f"a number above {ctx.get('gt')}"
    if error_type == "less_than":
        return f"a number below {ctx.get('lt')}"
    if error_type == "less_than_equal":
        return f"a number of at most {ctx.get('le')}"
    if error_type in ("too_short", "string_too_short"):
        least = ctx.get("min_length", 1)
        if error_type == "string_too_short":
            return "non-empty text"
        return f"at least {least} item" + ("" if least == 1 else "s")
    if error_type == "too_long":
        return f"at most {ctx.get('max_length')} items"
    # Anything else: pydantic's own words without its boilerplate.
    text = fallback.removeprefix("Input should be ").removeprefix("Value error, ")
    return text[0].lower() + text[1:] if text else "a different value"
