"""Models of the six step kinds, a tagged union on ``kind`` (``step`` when ``kind`` is left out).

Steps nest (a loop's body, a parallel's branches, a conditional's branches, a map's body), so the
models refer to ``StepModel`` before it is defined and are rebuilt at the end of the module.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag

from blueprints.schema.base import (
    AgentRef,
    CallablePath,
    ContextPath,
    JsonSchema,
    Name,
    PositiveInt,
    StrictModel,
    UsesRef,
)
from blueprints.schema.ensemble import EnsembleSettingsModel
from blueprints.schema.import_config import ImportConfigModel
from blueprints.schema.loop_blocks import (
    FinalizeModel,
    HistoryManagementModel,
    InitOpModel,
    InitSpec,
    OutputSpec,
    PropagationSpec,
)
from core import AiTurnSource, BranchFailure, MergeStrategy, ReduceMode

BUILTIN_AGENTS = ("flujo.builtins.passthrough", "flujo.builtins.stringify", "flujo.builtins.ask_user")
BuiltinId = Literal["flujo.builtins.passthrough", "flujo.builtins.stringify", "flujo.builtins.ask_user"]


class AgentRefModel(StrictModel):
    """``agent: {id: flujo.builtins.<name>, params: {...}}``."""

    label: ClassVar[str] = "agent reference"

    id: BuiltinId
    params: dict[str, Any] = Field(default_factory=dict)


def _agent_shape(value: Any) -> str | None:
    if isinstance(value, str):
        return "path"
    if isinstance(value, dict | AgentRefModel):
        return "ref"
    return None


AgentChoice = Annotated[
    Annotated[CallablePath, Tag("path")] | Annotated[AgentRefModel, Tag("ref")],
    Discriminator(
        _agent_shape,
        custom_error_type="bad_shape",
        custom_error_message="expected 'module:function' or a mapping {id: flujo.builtins.<name>}",
    ),
]


class StepModelBase(StrictModel):
    label: ClassVar[str] = "step"

    name: Name


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


class HitlStepModel(StepModelBase):
    """``kind: hitl``: ask the human."""

    kind: Literal["hitl"]
    message: str | None = None  # None: the conversation's newest assistant turn, or "Your answer for '<name>'?"
    input_schema: JsonSchema | None = None
    sink_to: ContextPath | None = None
    answered_by: AgentRef | None = None  # a simulated person answers (core.answering.simulated_person)


class LoopSettingsModel(StrictModel):
    """The ``loop:`` block of a loop step."""

    label: ClassVar[str] = "loop settings"

    body: Annotated[list[StepModel], Field(min_length=1)]
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


class LoopStepModel(StepModelBase):
    """``kind: loop``: run a body repeatedly."""

    kind: Literal["loop"]
    loop: LoopSettingsModel


class ParallelSettingsModel(StrictModel):
    """The ``parallel:`` block of a parallel step (as ``loop:`` and ``map:`` hold theirs)."""

    label: ClassVar[str] = "parallel settings"

    branches: Annotated[dict[str, Annotated[list[StepModel], Field(min_length=1)]], Field(min_length=1)]
    merge_strategy: MergeStrategy = "merge_scratchpad"
    on_branch_failure: BranchFailure = "propagate"
    reduce: ReduceMode | None = None


PARALLEL_KEYS = ("branches", "merge_strategy", "on_branch_failure", "reduce")


class ParallelStepModel(StepModelBase):
    """``kind: parallel``: run named branches concurrently. Its settings are written in a ``parallel:`` block
    or, as before that block existed, beside ``kind`` (``branches:``, ``reduce:`` ...); one form per step, which
    ``blueprints.checking.checks`` enforces. Read them through ``settings`` and ``settings_path``."""

    kind: Literal["parallel"]
    parallel: ParallelSettingsModel | None = None
    branches: Annotated[dict[str, Annotated[list[StepModel], Field(min_length=1)]], Field(min_length=1)] | None = None
    merge_strategy: MergeStrategy = "merge_scratchpad"
    on_branch_failure: BranchFailure = "propagate"
    reduce: ReduceMode | None = None

    @property
    def settings(self) -> ParallelSettingsModel:
        """The step's settings, whichever form wrote them (no branches when neither did: an error found by
        the checks)."""
        if self.parallel is not None:
            return self.parallel
        return ParallelSettingsModel.model_construct(
            branches=self.branches or {},
            merge_strategy=self.merge_strategy,
            on_branch_failure=self.on_branch_failure,
            reduce=self.reduce,
        )

    @property
    def settings_path(self) -> tuple[str, ...]:
        """Where the settings are, relative to the step's mapping: ``("parallel",)`` or ``()``."""
        return ("parallel",) if self.parallel is not None else ()


class ConditionalStepModel(StepModelBase):
    """``kind: conditional``: pick a branch by a condition's value."""

    kind: Literal["conditional"]
    condition_expression: str | None = None
    condition: CallablePath | None = None
    branches: Annotated[dict[str, Annotated[list[StepModel], Field(min_length=1)]], Field(min_length=1)]
    default_branch: Annotated[list[StepModel], Field(min_length=1)] | None = None


class MapSettingsModel(StrictModel):
    """The ``map:`` block of a map step."""

    label: ClassVar[str] = "map settings"

    over: str
    body: Annotated[list[StepModel], Field(min_length=1)]
    init: list[InitOpModel] | None = None
    finalize: FinalizeModel | None = None


class MapStepModel(StepModelBase):
    """``kind: map``: run a body once per item of a list."""

    kind: Literal["map"]
    map: MapSettingsModel


class EnsembleStepModel(StepModelBase):
    """``kind: ensemble``: a conversation among participants, in rounds."""

    kind: Literal["ensemble"]
    ensemble: EnsembleSettingsModel


STEP_KINDS = ("step", "hitl", "loop", "parallel", "conditional", "map", "ensemble")


def _step_kind(value: Any) -> str | None:
    if isinstance(value, AgentStepModel | HitlStepModel | LoopStepModel | ParallelStepModel):
        return value.kind
    if isinstance(value, ConditionalStepModel | MapStepModel | EnsembleStepModel):
        return value.kind
    if isinstance(value, dict):
        kind = value.get("kind", "step")
        return kind if isinstance(kind, str) else repr(kind)
    return None


StepModel = Annotated[
    Annotated[AgentStepModel, Tag("step")]
    | Annotated[HitlStepModel, Tag("hitl")]
    | Annotated[LoopStepModel, Tag("loop")]
    | Annotated[ParallelStepModel, Tag("parallel")]
    | Annotated[ConditionalStepModel, Tag("conditional")]
    | Annotated[MapStepModel, Tag("map")]
    | Annotated[EnsembleStepModel, Tag("ensemble")],
    Discriminator(
        _step_kind,
        custom_error_type="bad_shape",
        custom_error_message="a step is a mapping with kind and name",
    ),
]

AnyStepModel = (
    AgentStepModel
    | HitlStepModel
    | LoopStepModel
    | ParallelStepModel
    | ConditionalStepModel
    | MapStepModel
    | EnsembleStepModel
)


def complete_models() -> None:
    """Resolve the fields that name a step (``StepModel`` is defined after the models that contain steps), and
    build those models' validators. Every model is made with ``defer_build``: a run whose blueprint was
    validated before (``blueprints.checking.validated``) builds none, and a first validation builds only
    ``BlueprintModel``'s, which holds the others. Call this before reading these models' ``model_fields``
    (to explain a validation error, or to write the JSON Schema)."""
    for model in (LoopSettingsModel, ParallelSettingsModel, ParallelStepModel, ConditionalStepModel, MapSettingsModel):
        model.model_rebuild()
