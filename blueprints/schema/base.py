"""The shared base of every blueprint model, and the names of the constrained types the models use.

Every model is a frozen stdlib dataclass: this room imports nothing of pydantic, so a command whose blueprint
was validated before (``blueprints.checking.validated``) unpickles plain values and never loads pydantic's
model machinery. ``blueprints.schema.validating`` is where pydantic comes in: it gives the names used in the
models' (string) annotations their constraints (``Name`` is text of at least one character, ``StepModel`` a
union tagged by ``kind`` ...), and validates data against the models.

Every model is strict (YAML already gives typed values: a quoted ``"3"`` is text, not a number) and
forbids unknown keys, so a typo is an error, never silently ignored. ``label`` names the model in
messages ("unknown key 'conversaton' in loop settings").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    # What mypy sees. At run time these names are given their pydantic constraints, in every module of this
    # room, by ``blueprints.schema.validating`` (the annotations are strings, resolved when a validator is made).
    Name = str  # non-empty
    PositiveInt = int  # at least 1
    NonNegativeInt = int  # at least 0
    PositiveFloat = float  # above 0
    Ratio = float  # above 0, below 1
    Command = list[str]  # at least one item
    CallablePath = str  # ``package.module:function``: a Python callable imported when the blueprint is compiled
    ContextPath = str  # a dotted path into the run context, e.g. ``scratchpad.goal``
    UsesRef = str  # what a ``step`` calls: ``agents.<name>`` or ``imports.<alias>``
    ImportRef = str  # a blueprint declared under ``imports:`` (a ``workflow:`` tool)
    AgentRef = str  # an agent defined under ``agents:`` (``answered_by: agents.<name>``)

JsonSchema = dict[str, Any]

SchemaHook = Callable[[type["StrictModel"], Any, Any], Any]


class StrictModel:
    """Base of every blueprint model (each a ``@dataclass(frozen=True, kw_only=True)``): strict types, unknown
    keys rejected, immutable.

    ``fields_given`` is the keys the mapping it was validated from wrote (what pydantic called
    ``model_fields_set``). A model made in code, not validated, has no such record: its ``fields_given`` is then
    the fields whose value differs from their default (a required field always counts), which is what a
    mapping that wrote only those keys would give."""

    label: ClassVar[str] = "mapping"
    # pydantic reads its config of a stdlib dataclass here (a ConfigDict is a TypedDict: a plain dict will do).
    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid", "strict": True}
    # How pydantic makes a model's schema: set by ``blueprints.schema.validating`` when it is imported (it relaxes
    # strictness for the mapping itself, and records the keys given). Here so that this room imports no pydantic.
    schema_hook: ClassVar[SchemaHook | None] = None

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        hook = StrictModel.schema_hook
        if hook is None:
            raise RuntimeError("validate blueprint models through blueprints.schema.validating")
        return hook(cls, source, handler)

    @property
    def fields_given(self) -> frozenset[str]:
        """The keys written in the mapping this model was validated from (see the class docstring)."""
        given = self.__dict__.get("_given")
        if isinstance(given, frozenset):
            return given
        return frozenset(field.name for field in dataclasses.fields(self) if _differs(self, field))  # type: ignore[arg-type]


def _differs(model: StrictModel, field: dataclasses.Field[Any]) -> bool:
    value = getattr(model, field.name)
    if field.default is not dataclasses.MISSING:
        return bool(value != field.default)
    if field.default_factory is not dataclasses.MISSING:
        return bool(value != field.default_factory())
    return True
