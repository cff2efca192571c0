"""The blueprint schema: models of the whole v0.1 language (structure only), as frozen dataclasses.

This package's modules import nothing of pydantic: ``blueprints.schema.validating`` validates data against the
models (and gives pydantic the constraints of the names their annotations use), ``blueprints.schema.json_schema``
writes their JSON Schema.

Rules that span several values (references between steps, exactly-one-of, template syntax) are checked
by ``blueprints.checking.checks`` after the structure validates, where each finding can point at its own value.
"""

from blueprints.schema.agents import AgentModel, LimitsModel
from blueprints.schema.document import BlueprintModel
from blueprints.schema.ensemble import DependencyModel, EnsembleSettingsModel, ParticipantModel
from blueprints.schema.import_config import ImportConfigModel, OutputMapModel
from blueprints.schema.loop_blocks import (
    OUTPUT_SHORTHANDS,
    PROPAGATION_PRESETS,
    FieldsOutputModel,
    FinalizeModel,
    HistoryManagementModel,
    InitOpModel,
    InitPresetsModel,
    InitTargetModel,
    PropagationModel,
    StartWithModel,
    TextOutputModel,
)
from blueprints.schema.steps import (
    BUILTIN_AGENTS,
    PARALLEL_KEYS,
    STEP_KINDS,
    AgentRefModel,
    AgentStepModel,
    AnyStepModel,
    ConditionalStepModel,
    EnsembleStepModel,
    HitlStepModel,
    LoopSettingsModel,
    LoopStepModel,
    MapSettingsModel,
    MapStepModel,
    ParallelSettingsModel,
    ParallelStepModel,
    StepModelBase,
)
from blueprints.schema.tools import McpModel, ToolModel

__all__ = [
    "BUILTIN_AGENTS",
    "OUTPUT_SHORTHANDS",
    "PARALLEL_KEYS",
    "PROPAGATION_PRESETS",
    "STEP_KINDS",
    "AgentModel",
    "AgentRefModel",
    "AgentStepModel",
    "AnyStepModel",
    "BlueprintModel",
    "ConditionalStepModel",
    "DependencyModel",
    "EnsembleSettingsModel",
    "EnsembleStepModel",
    "FieldsOutputModel",
    "FinalizeModel",
    "HistoryManagementModel",
    "HitlStepModel",
    "ImportConfigModel",
    "InitOpModel",
    "InitPresetsModel",
    "InitTargetModel",
    "LimitsModel",
    "LoopSettingsModel",
    "LoopStepModel",
    "MapSettingsModel",
    "MapStepModel",
    "McpModel",
    "OutputMapModel",
    "ParallelSettingsModel",
    "ParallelStepModel",
    "ParticipantModel",
    "PropagationModel",
    "StartWithModel",
    "StepModelBase",
    "TextOutputModel",
    "ToolModel",
]
