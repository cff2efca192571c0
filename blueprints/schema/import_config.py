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

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from blueprints.schema.base import StrictModel
from core import InputTarget

if TYPE_CHECKING:
    from blueprints.schema.base import ContextPath, Name


@dataclass(frozen=True, kw_only=True)
class OutputMapModel(StrictModel):
    """One ``outputs`` entry: a path into the child's final context and the parent's scratchpad path."""

    label: ClassVar[str] = "outputs entry"

    child: Name
    parent: ContextPath


if TYPE_CHECKING:
    OutputsSpec = list[OutputMapModel] | dict[str, ContextPath]  # told apart by shape


@dataclass(frozen=True, kw_only=True)
class ImportConfigModel(StrictModel):
    """How a sub-workflow receives its input and what it gives back (see ``core.steps.kinds.WorkflowStep``)."""

    label: ClassVar[str] = "import config"

    input_to: InputTarget = "initial_prompt"
    input_scratchpad_key: Name = "initial_input"
    inherit_context: bool = False
    outputs: OutputsSpec | None = None
    # Only true is supported (a pause inside always pauses the parent); checks reject false at its line.
    propagate_hitl: bool = True
