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
    from core.conversation import Dependency, EnsembleStep, Participant
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
    from core.model.records import PruneResult, RunRecord, StepRecord, ThreadSummary, ThreadTurn, TraceEvent
    from core.model.usage import Usage
    from core.ports import Agent, HumanInput, NullReporter, Reporter, RunStore
    from core.steps.kinds import (
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
    from core.text.templates import Expression, Template, TemplateSyntax
    from core.text.turns import ConversationTurn, HitlEntry

_WHERE = {
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
    "Dependency": "core.conversation",
    "Engine": "core.engine",
    "EnsembleStep": "core.conversation",
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
    "Participant": "core.conversation",
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

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())
