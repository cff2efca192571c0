"""The shared base of every blueprint model and the small constrained types they use.

Every model is strict (YAML already gives typed values: a quoted ``"3"`` is text, not a number) and
forbids unknown keys, so a typo is an error, never silently ignored. ``label`` names the model in
messages ("unknown key 'conversaton' in loop settings").
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError


class StrictModel(BaseModel):
    """Base of every blueprint model: strict types, unknown keys rejected, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)
    label: ClassVar[str] = "mapping"


def _pattern(regex: str, expected: str) -> AfterValidator:
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise PydanticCustomError("bad_value", "{message}", {"message": f"expected {expected}, got {value!r}"})
        return value

    return AfterValidator(check)


_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

CallablePath = Annotated[str, _pattern(rf"{_IDENT}(\.{_IDENT})*:{_IDENT}(\.{_IDENT})*", "'module:function'")]
"""``package.module:function`` — a Python callable imported when the blueprint is compiled."""

ContextPath = Annotated[str, _pattern(rf"{_IDENT}(\.{_IDENT})*", "a context path like scratchpad.goal")]
"""A dotted path into the run context, e.g. ``scratchpad.goal``."""

UsesRef = Annotated[str, _pattern(rf"(agents|imports)\.{_IDENT}", "agents.<name> or imports.<name>")]
"""What a ``step`` calls: ``agents.<name>`` or ``imports.<alias>``."""

ImportRef = Annotated[str, _pattern(rf"imports\.{_IDENT}", "imports.<name>")]
"""A blueprint declared under ``imports:`` (a ``workflow:`` tool)."""

AgentRef = Annotated[str, _pattern(rf"agents\.{_IDENT}", "agents.<name>")]
"""An agent defined under ``agents:`` (``answered_by: agents.<name>``)."""

Name = Annotated[str, Field(min_length=1)]
PositiveInt = Annotated[int, Field(ge=1)]
JsonSchema = dict[str, Any]
