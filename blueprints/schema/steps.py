"""Models of the six step kinds, a tagged union on ``kind`` (``step`` when ``kind`` is left out).

Steps nest (a loop's body, a parallel's branches, a conditional's branches, a map's body): the models refer
to ``StepModel``, the union, which ``blueprints.schema.validating`` defines (with the models' other constrained
names) for pydantic; mypy sees the plain union ``AnyStepModel``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from blueprints.schema.base import JsonSchema, StrictModel
from blueprints.schema.ensemble import EnsembleSettingsModel
from blueprints.schema.import_config import ImportConfigModel
from blueprints.schema.loop_blocks import FinalizeModel, HistoryManagementModel, InitOpModel
from core import AiTurnSource, BranchFailure, MergeStrategy, ReduceMode

if TYPE_CHECKING:
    from blueprints.schema.base import AgentRef, CallablePath, ContextPath, Name, PositiveInt, UsesRef
    from blueprints.schema.loop_blocks import InitSpec, OutputSpec, PropagationSpec

BUILTIN_AGENTS = ("flujo.builtins.passthrough", "flujo.builtins.stringify", "flujo.builtins.ask_user")
BuiltinId = Literal["flujo.builtins.passthrough", "flujo.builtins.stringify", "flujo.builtins.ask_user"]


@dataclass(frozen=True, kw_only=True)
class AgentRefModel(StrictModel):
    """``agent: {id: flujo.builtins.<name>, params: {...}}``."""

    label: ClassVar[str] = "agent reference"

    id: BuiltinId
    params: dict[str, Any] = field(default_factory=dict)


if TYPE_CHECKING:
    AgentChoice = CallablePath | AgentRefModel  # told apart by shape


@dataclass(frozen=True, kw_only=True)
class StepModelBase(StrictModel):
    label: ClassVar[str] = "step"

    name: Name


@dataclass(frozen=True, kw_only=True)
class AgentStepModel(StepModelBase):
    """``kind: step``: call an agent (``uses`` or ``agent``) or a sub-workflow (``uses: imports.<alias>``,
    set up by ``config``), or pass the input through."""

    kind: Literal["step"] = "step"
    uses: UsesRef | None = None
    agent: AgentChoice | None = None
    input: str | None = None
    updates_context: bool = False
    sink_to: ContextPath | None = None
    use_history: bool | None = None
    turn_text: str | None = None  # what a person reads of the turn its result makes (a template over ``output``)
    output_schema: JsonSchema | None = None
    config: ImportConfigModel | None = None


@dataclass(frozen=True, kw_only=True)
class HitlStepModel(StepModelBase):
    """``kind: hitl``: ask the human."""

    kind: Literal["hitl"]
    message: str | None = None  # None: the conversation's newest assistant turn, or "Your answer for '<name>'?"
    input_schema: JsonSchema | None = None
    sink_to: ContextPath | None = None
    answered_by: AgentRef | None = None  # a simulated person answers (core.answering.simulated_person)


@dataclass(frozen=True, kw_only=True)
class LoopSettingsModel(StrictModel):
    """The ``loop:`` block of a loop step."""

    label: ClassVar[str] = "loop settings"

    body: Steps
    max_loops: PositiveInt | None = None
    exit_expression: str | None = None
    exit_condition: CallablePath | None = None
    stop_when: Literal["agent_finished"] | None = None
    conversation: bool = False
    history_management: HistoryManagementModel | None = None
    history_template: str | None = None
    ai_turn_source: AiTurnSource | None = None
    named_steps: list[Name] | None = None
    user_turn_sources: list[Name] | None = None
    init: InitSpec | None = None
    propagation: PropagationSpec | None = None
    output_template: str | None = None
    output: OutputSpec | None = None


@dataclass(frozen=True, kw_only=True)
class LoopStepModel(StepModelBase):
    """``kind: loop``: run a body repeatedly."""

    kind: Literal["loop"]
    loop: LoopSettingsModel


@dataclass(frozen=True, kw_only=True)
class ParallelSettingsModel(StrictModel):
    """The ``parallel:`` block of a parallel step (as ``loop:`` and ``map:`` hold theirs)."""

    label: ClassVar[str] = "parallel settings"

    branches: Branches
    merge_strategy: MergeStrategy = "merge_scratchpad"
    on_branch_failure: BranchFailure = "propagate"
    reduce: ReduceMode | None = None


PARALLEL_KEYS = ("branches", "merge_strategy", "on_branch_failure", "reduce")


@dataclass(frozen=True, kw_only=True)
class ParallelStepModel(StepModelBase):
    """``kind: parallel``: run named branches concurrently. Its settings are written in a ``parallel:`` block
    or, as before that block existed, beside ``kind`` (``branches:``, ``reduce:`` ...); one form per step, which
    ``blueprints.checking.checks`` enforces. Read them through ``settings`` and ``settings_path``."""

    kind: Literal["parallel"]
    parallel: ParallelSettingsModel | None = None
    branches: Branches | None = None
    merge_strategy: MergeStrategy = "merge_scratchpad"
    on_branch_failure: BranchFailure = "propagate"
    reduce: ReduceMode | None = None

    @property
    def settings(self) -> ParallelSettingsModel:
        """The step's settings, whichever form wrote them (no branches when neither did: an error found by
        the checks)."""
        if self.parallel is not None:
            return self.parallel
        return ParallelSettingsModel(
            branches=self.branches or {},
            merge_strategy=self.merge_strategy,
            on_branch_failure=self.on_branch_failure,
            reduce=self.reduce,
        )

    @property
    def settings_path(self) -> tuple[str, ...]:
        """Where the settings are, relative to the step's mapping: ``("parallel",)`` or ``()``."""
        return ("parallel",) if self.parallel is not None else ()


@dataclass(frozen=True, kw_only=True)
class ConditionalStepModel(StepModelBase):
    """``kind: conditional``: pick a branch by a condition's value."""

    kind: Literal["conditional"]
    condition_expression: str | None = None
    condition: CallablePath | None = None
    branches: Branches
    default_branch: Steps | None = None


@dataclass(frozen=True, kw_only=True)
class MapSettingsModel(StrictModel):
    """The ``map:`` block of a map step."""

    label: ClassVar[str] = "map settings"

    over: str
    body: Steps
    init: list[InitOpModel] | None = None
    finalize: FinalizeModel | None = None


@dataclass(frozen=True, kw_only=True)
class MapStepModel(StepModelBase):
    """``kind: map``: run a body once per item of a list."""

    kind: Literal["map"]
    map: MapSettingsModel


@dataclass(frozen=True, kw_only=True)
class EnsembleStepModel(StepModelBase):
    """``kind: ensemble``: a conversation among participants, in rounds."""

    kind: Literal["ensemble"]
    ensemble: EnsembleSettingsModel


STEP_KINDS = ("step", "hitl", "loop", "parallel", "conditional", "map", "ensemble")

AnyStepModel = (
    AgentStepModel
    | HitlStepModel
    | LoopStepModel
    | ParallelStepModel
    | ConditionalStepModel
    | MapStepModel
    | EnsembleStepModel
)

if TYPE_CHECKING:
    StepModel = AnyStepModel  # told apart by ``kind`` (``step`` when left out)
    Steps = list[StepModel]  # at least one
    Branches = dict[str, Steps]  # at least one
