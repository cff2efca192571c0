"""flujo's engine, usable from Python without YAML: build a Pipeline of steps and run it.

    from core import Engine, Pipeline, AgentStep
    from core.agents import build_agent
    from core.store import MemoryStore

Nothing in ``core`` imports ``blueprints``, ``lens`` or ``flujo_cli``.

The names are imported on first use (PEP 562): ``import core.config`` or ``core.store`` does not load the
engine, its policies and agents (about 0.1 s), which the commands that only read the store never need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: the next use does not come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
