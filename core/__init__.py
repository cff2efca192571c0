"""flujo's engine, usable from Python without YAML: build a Pipeline of steps and run it.

    from core import Engine, Pipeline, AgentStep
    from core.agents import build_agent
    from core.store import MemoryStore

Nothing in ``core`` imports ``blueprints``, ``lens`` or ``flujo_cli``.

The names are imported on first use (PEP 562): ``import core.config`` or ``core.store`` does not load the
engine, its policies and agents (about 0.1 s), which the commands that only read the store never need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.front_door import lazy_exports

if TYPE_CHECKING:
    from core.context import ConversationTurn, HitlEntry, RunContext
    from core.conversation import Dependency, EnsembleStep, Participant
    from core.engine import Engine, NoHuman, RunOutcome, new_run_id
    from core.errors import (
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
    from core.ports import (
        Agent,
        AgentCall,
        AgentReply,
        ChatMessage,
        HumanInput,
        HumanQuestion,
        NullReporter,
        OutputRepair,
        Reporter,
        RunStore,
    )
    from core.records import PruneResult, RunRecord, StepRecord, ThreadSummary, ThreadTurn, TraceEvent
    from core.steps import (
        AgentStep,
        ConditionalStep,
        Conversation,
        HistoryPolicy,
        HitlStep,
        Limits,
        LoopStep,
        MapStep,
        OutputMapping,
        ParallelStep,
        Pipeline,
        Step,
        WorkflowStep,
    )
    from core.templates import Expression, Template, TemplateSyntax
    from core.usage import Usage

if TYPE_CHECKING:  # what blueprints needs besides the names above (it imports core only through front doors)
    from core.agents.gguf import read_gguf
    from core.config import BoundsSettings, HistorySettings, LimitSettings, ModelInfo, Settings
    from core.context import VIEW_KEYS
    from core.conversation import is_context, turn_text
    from core.policies.context_writes import scratchpad_slot
    from core.policies.frame import scope as template_scope
    from core.providers import OFFLINE_MODELS, PROVIDER_NAMES, PROVIDERS, find_provider, provider_of
    from core.simulated_person import SimulatedPerson
    from core.steps import (
        CHILD_PATH_ROOTS,
        AiTurnSource,
        BranchFailure,
        HistoryStrategy,
        InputTarget,
        MergeStrategy,
        ReduceMode,
        ScopeFunction,
    )
    from core.templates import (
        builds_structure,
        referenced_names,
        step_references,
        translate_handlebars,
        whole_references,
    )
    from core.views import LazyView

_WHERE = {
    "Abort": "core.errors",
    "Agent": "core.ports",
    "AgentCall": "core.ports",
    "AgentOutputError": "core.errors",
    "AgentReply": "core.ports",
    "AgentStep": "core.steps",
    "BlueprintError": "core.errors",
    "ChatMessage": "core.ports",
    "ConditionalStep": "core.steps",
    "ConfigError": "core.errors",
    "ControlSignal": "core.errors",
    "Conversation": "core.steps",
    "ConversationTurn": "core.context",
    "Dependency": "core.conversation",
    "Engine": "core.engine",
    "EnsembleStep": "core.conversation",
    "Expression": "core.templates",
    "FlujoError": "core.errors",
    "HistoryPolicy": "core.steps",
    "HitlEntry": "core.context",
    "HitlStep": "core.steps",
    "HumanInput": "core.ports",
    "HumanQuestion": "core.ports",
    "LimitReached": "core.errors",
    "Limits": "core.steps",
    "LoopStep": "core.steps",
    "MapStep": "core.steps",
    "NoHuman": "core.engine",
    "NullReporter": "core.ports",
    "OutputMapping": "core.steps",
    "OutputRepair": "core.ports",
    "ParallelStep": "core.steps",
    "Participant": "core.conversation",
    "Pause": "core.errors",
    "Pipeline": "core.steps",
    "ProviderError": "core.errors",
    "ProviderUnreachable": "core.errors",
    "PruneResult": "core.records",
    "ReplyCutOff": "core.errors",
    "Reporter": "core.ports",
    "ResumeRefused": "core.errors",
    "RunContext": "core.context",
    "RunError": "core.errors",
    "RunOutcome": "core.engine",
    "RunRecord": "core.records",
    "RunStore": "core.ports",
    "SourcePosition": "core.errors",
    "Step": "core.steps",
    "StepFailed": "core.errors",
    "StepRecord": "core.records",
    "StoreError": "core.errors",
    "StoreUnavailable": "core.errors",
    "Template": "core.templates",
    "TemplateError": "core.errors",
    "TemplateSyntax": "core.templates",
    "ThreadSummary": "core.records",
    "ThreadTurn": "core.records",
    "TraceEvent": "core.records",
    "Usage": "core.usage",
    "WorkflowStep": "core.steps",
    "new_run_id": "core.engine",
    # What blueprints needs besides the names above (blueprints imports core only through its front doors).
    # The settings blueprints validates and compiles against:
    "BoundsSettings": "core.config",
    "HistorySettings": "core.config",
    "LimitSettings": "core.config",
    "ModelInfo": "core.config",
    "Settings": "core.config",
    # The providers a blueprint's models name, and a model file's header (``flujo validate`` reads it):
    "OFFLINE_MODELS": "core.providers",
    "PROVIDERS": "core.providers",
    "PROVIDER_NAMES": "core.providers",
    "find_provider": "core.providers",
    "provider_of": "core.providers",
    "read_gguf": "core.agents.gguf",
    # The step kinds' settings and the values steps hold:
    "AiTurnSource": "core.steps",
    "BranchFailure": "core.steps",
    "CHILD_PATH_ROOTS": "core.steps",
    "HistoryStrategy": "core.steps",
    "InputTarget": "core.steps",
    "MergeStrategy": "core.steps",
    "ReduceMode": "core.steps",
    "ScopeFunction": "core.steps",
    "SimulatedPerson": "core.simulated_person",
    "LazyView": "core.views",
    "VIEW_KEYS": "core.context",
    # What the checks read in templates and expressions:
    "builds_structure": "core.templates",
    "referenced_names": "core.templates",
    "step_references": "core.templates",
    "translate_handlebars": "core.templates",
    "whole_references": "core.templates",
    # The loop hooks' run-time needs: the engine's template variables, its scratchpad paths, turn text:
    "template_scope": "core.policies.frame:scope",
    "scratchpad_slot": "core.policies.context_writes",
    "is_context": "core.conversation",
    "turn_text": "core.conversation",
}

__all__ = [
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
