"""flujo's engine, usable from Python without YAML: build a Pipeline of steps and run it.

    from core import Engine, Pipeline, AgentStep
    from core.agents import build_agent
    from core.store import MemoryStore

Nothing in ``core`` imports ``blueprints``, ``lens`` or ``flujo_cli``.

The names are imported on first use (PEP 562): ``import core.settings.config`` or ``core.store`` does not load the
engine, its policies and agents (about 0.1 s), which the commands that only read the store never need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.front_door import lazy_exports

if TYPE_CHECKING:
    from core.context import RunContext
    from core.engine import Engine, NoHuman, RunOutcome, new_run_id
    from core.model.calls import AgentCall, AgentReply, ChatMessage, HumanQuestion, OutputRepair
    from core.model.errors import (
        Abort,
        AgentOutputError,
        BlueprintError,
        ConfigError,
        ControlSignal,
        FlujoError,
        LimitReached,
        Pause,
        ProviderError,
        ProviderUnreachable,
        ReplyCutOff,
        ResumeRefused,
        RunError,
        SourcePosition,
        StepFailed,
        StoreError,
        StoreUnavailable,
        TemplateError,
    )
    from core.model.records import PruneResult, RunRecord, RunUpdate, StepRecord, ThreadSummary, ThreadTurn, TraceEvent
    from core.model.usage import Usage
    from core.ports import Agent, HumanInput, NullReporter, Reporter, RunStore
    from core.steps.kinds import (
        CONTAINER_STEP_KINDS,
        KEYED_STEP_KINDS,
        AgentStep,
        ConditionalStep,
        Conversation,
        Dependency,
        EnsembleStep,
        HistoryPolicy,
        HitlStep,
        Limits,
        LoopStep,
        MapStep,
        OutputMapping,
        ParallelStep,
        Participant,
        Pipeline,
        Step,
        WorkflowStep,
    )
    from core.text.templates import Expression, Template, TemplateSyntax
    from core.text.turns import ConversationTurn, HitlEntry

if TYPE_CHECKING:  # what blueprints needs besides the names above (it imports core only through front doors)
    from core.agents.gguf import read_gguf
    from core.answering.simulated_person import SimulatedPerson
    from core.context import VIEW_KEYS
    from core.conversation import is_context, turn_text
    from core.model.providers import OFFLINE_MODELS, PROVIDER_NAMES, PROVIDERS, find_provider, provider_of
    from core.model.views import LazyView
    from core.policies.context_writes import scratchpad_slot
    from core.policies.frame import scope as template_scope
    from core.settings.config import HistorySettings, LimitSettings, ModelInfo, Settings
    from core.steps.kinds import (
        CHILD_PATH_ROOTS,
        AiTurnSource,
        BranchFailure,
        HistoryStrategy,
        InputTarget,
        MergeStrategy,
        ReduceMode,
        ScopeFunction,
    )
    from core.text.bounds import BoundsSettings
    from core.text.templates import (
        builds_structure,
        referenced_names,
        step_references,
        translate_handlebars,
        whole_references,
    )

_WHERE = {
    "CONTAINER_STEP_KINDS": "core.steps.kinds",
    "KEYED_STEP_KINDS": "core.steps.kinds",
    "Abort": "core.model.errors",
    "Agent": "core.ports",
    "AgentCall": "core.model.calls",
    "AgentOutputError": "core.model.errors",
    "AgentReply": "core.model.calls",
    "AgentStep": "core.steps.kinds",
    "BlueprintError": "core.model.errors",
    "ChatMessage": "core.model.calls",
    "ConditionalStep": "core.steps.kinds",
    "ConfigError": "core.model.errors",
    "ControlSignal": "core.model.errors",
    "Conversation": "core.steps.kinds",
    "ConversationTurn": "core.text.turns",
    "Dependency": "core.steps.kinds",
    "Engine": "core.engine",
    "EnsembleStep": "core.steps.kinds",
    "Expression": "core.text.templates",
    "FlujoError": "core.model.errors",
    "HistoryPolicy": "core.steps.kinds",
    "HitlEntry": "core.text.turns",
    "HitlStep": "core.steps.kinds",
    "HumanInput": "core.ports",
    "HumanQuestion": "core.model.calls",
    "LimitReached": "core.model.errors",
    "Limits": "core.steps.kinds",
    "LoopStep": "core.steps.kinds",
    "MapStep": "core.steps.kinds",
    "NoHuman": "core.engine",
    "NullReporter": "core.ports",
    "OutputMapping": "core.steps.kinds",
    "OutputRepair": "core.model.calls",
    "ParallelStep": "core.steps.kinds",
    "Participant": "core.steps.kinds",
    "Pause": "core.model.errors",
    "Pipeline": "core.steps.kinds",
    "ProviderError": "core.model.errors",
    "ProviderUnreachable": "core.model.errors",
    "PruneResult": "core.model.records",
    "ReplyCutOff": "core.model.errors",
    "Reporter": "core.ports",
    "ResumeRefused": "core.model.errors",
    "RunContext": "core.context",
    "RunError": "core.model.errors",
    "RunOutcome": "core.engine",
    "RunRecord": "core.model.records",
    "RunUpdate": "core.model.records",
    "RunStore": "core.ports",
    "SourcePosition": "core.model.errors",
    "Step": "core.steps.kinds",
    "StepFailed": "core.model.errors",
    "StepRecord": "core.model.records",
    "StoreError": "core.model.errors",
    "StoreUnavailable": "core.model.errors",
    "Template": "core.text.templates",
    "TemplateError": "core.model.errors",
    "TemplateSyntax": "core.text.templates",
    "ThreadSummary": "core.model.records",
    "ThreadTurn": "core.model.records",
    "TraceEvent": "core.model.records",
    "Usage": "core.model.usage",
    "WorkflowStep": "core.steps.kinds",
    "new_run_id": "core.engine",
    # What blueprints needs besides the names above (blueprints imports core only through its front doors).
    # The settings blueprints validates and compiles against:
    "BoundsSettings": "core.settings.config",
    "HistorySettings": "core.settings.config",
    "LimitSettings": "core.settings.config",
    "ModelInfo": "core.settings.config",
    "Settings": "core.settings.config",
    # The providers a blueprint's models name, and a model file's header (``flujo validate`` reads it):
    "OFFLINE_MODELS": "core.model.providers",
    "PROVIDERS": "core.model.providers",
    "PROVIDER_NAMES": "core.model.providers",
    "find_provider": "core.model.providers",
    "provider_of": "core.model.providers",
    "read_gguf": "core.agents.gguf",
    # The step kinds' settings and the values steps hold:
    "AiTurnSource": "core.steps.kinds",
    "BranchFailure": "core.steps.kinds",
    "CHILD_PATH_ROOTS": "core.steps.kinds",
    "HistoryStrategy": "core.steps.kinds",
    "InputTarget": "core.steps.kinds",
    "MergeStrategy": "core.steps.kinds",
    "ReduceMode": "core.steps.kinds",
    "ScopeFunction": "core.steps.kinds",
    "SimulatedPerson": "core.answering.simulated_person",
    "LazyView": "core.model.views",
    "VIEW_KEYS": "core.context",
    # What the checks read in templates and expressions:
    "builds_structure": "core.text.templates",
    "referenced_names": "core.text.templates",
    "step_references": "core.text.templates",
    "translate_handlebars": "core.text.templates",
    "whole_references": "core.text.templates",
    # The loop hooks' run-time needs: the engine's template variables, its scratchpad paths, turn text:
    "template_scope": "core.policies.frame:scope",
    "scratchpad_slot": "core.policies.context_writes",
    "is_context": "core.conversation",
    "turn_text": "core.conversation",
}

__all__ = [
    "CONTAINER_STEP_KINDS",
    "KEYED_STEP_KINDS",
    "Abort",
    "Agent",
    "AgentCall",
    "AgentOutputError",
    "AgentReply",
    "AgentStep",
    "BlueprintError",
    "ChatMessage",
    "ConditionalStep",
    "ConfigError",
    "ControlSignal",
    "Conversation",
    "ConversationTurn",
    "Dependency",
    "Engine",
    "EnsembleStep",
    "Expression",
    "FlujoError",
    "HistoryPolicy",
    "HitlEntry",
    "HitlStep",
    "HumanInput",
    "HumanQuestion",
    "LimitReached",
    "Limits",
    "LoopStep",
    "MapStep",
    "NoHuman",
    "NullReporter",
    "OutputMapping",
    "OutputRepair",
    "ParallelStep",
    "Participant",
    "Pause",
    "Pipeline",
    "ProviderError",
    "ProviderUnreachable",
    "PruneResult",
    "ReplyCutOff",
    "Reporter",
    "ResumeRefused",
    "RunContext",
    "RunError",
    "RunOutcome",
    "RunRecord",
    "RunStore",
    "RunUpdate",
    "SourcePosition",
    "Step",
    "StepFailed",
    "StepRecord",
    "StoreError",
    "StoreUnavailable",
    "Template",
    "TemplateError",
    "TemplateSyntax",
    "ThreadSummary",
    "ThreadTurn",
    "TraceEvent",
    "Usage",
    "WorkflowStep",
    "new_run_id",
]
# What blueprints needs besides the names above (it imports core only through front doors; see _WHERE).
__all__ += [
    "CHILD_PATH_ROOTS",
    "OFFLINE_MODELS",
    "PROVIDERS",
    "PROVIDER_NAMES",
    "VIEW_KEYS",
    "AiTurnSource",
    "BoundsSettings",
    "BranchFailure",
    "HistorySettings",
    "HistoryStrategy",
    "InputTarget",
    "LazyView",
    "LimitSettings",
    "MergeStrategy",
    "ModelInfo",
    "ReduceMode",
    "ScopeFunction",
    "Settings",
    "SimulatedPerson",
    "builds_structure",
    "find_provider",
    "is_context",
    "provider_of",
    "read_gguf",
    "referenced_names",
    "scratchpad_slot",
    "step_references",
    "template_scope",
    "translate_handlebars",
    "turn_text",
    "whole_references",
]

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())
