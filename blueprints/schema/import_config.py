"""The ``config:`` block of a sub-workflow step (``uses: imports.<alias>``), in Flujo's dialect.

    - kind: step
      name: review
      uses: imports.review
      config:
        input_to: initial_prompt          # initial_prompt | scratchpad | both
        input_scratchpad_key: initial_input
        inherit_context: false
        outputs:                          # child → parent; also {child_path: parent_path}
          - {child: scratchpad.verdict, parent: scratchpad.review_verdict}

``outputs`` accepts a list of ``{child, parent}`` entries or a mapping ``{child: parent}``; the shape picks
the member (a callable discriminator), so a wrong value gets one error about the chosen shape.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Discriminator, Field, Tag

from blueprints.schema.base import ContextPath, Name, StrictModel
from core import InputTarget


class OutputMapModel(StrictModel):
    """One ``outputs`` entry: a path into the child's final context and the parent's scratchpad path."""

    label: ClassVar[str] = "outputs entry"

    child: Annotated[str, Field(min_length=1)]
    parent: ContextPath


def _list_or_mapping(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return None


OutputsSpec = Annotated[
    Annotated[list[OutputMapModel], Tag("list")] | Annotated[dict[str, ContextPath], Tag("mapping")],
    Discriminator(
        _list_or_mapping,
        custom_error_type="bad_shape",
        custom_error_message="expected a list of {child: ..., parent: ...} entries, or a mapping child: parent",
    ),
]


class ImportConfigModel(StrictModel):
    """How a sub-workflow receives its input and what it gives back (see ``core.steps.kinds.WorkflowStep``)."""

    label: ClassVar[str] = "import config"

    input_to: InputTarget = "initial_prompt"
    input_scratchpad_key: Name = "initial_input"
    inherit_context: bool = False
    outputs: OutputsSpec | None = None
    # Only true is supported (a pause inside always pauses the parent); checks reject false at its line.
    propagate_hitl: bool = True
