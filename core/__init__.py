"""flujo's engine, usable from Python without YAML: build a Pipeline of steps and run it.

    from core import Engine, Pipeline, AgentStep
    from core.agents import build_agent
    from core.store import MemoryStore

Nothing in ``core`` imports ``blueprints``, ``lens`` or ``flujo_cli``.
"""

from core.context import ConversationTurn, HitlEntry, RunContext
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
    ResumeRefused,
    RunError,
    SourcePosition,
    StepFailed,
    StoreError,
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
    RunRecord,
    RunStore,
    StepRecord,
    TraceEvent,
)
from core.steps import (
    AgentStep,
    ConditionalStep,
    Conversation,
    HistoryPolicy,
    HitlStep,
    Limits,
    LoopStep,
    MapStep,
    ParallelStep,
    Pipeline,
    Step,
)
from core.templates import Expression, Template, TemplateSyntax
from core.usage import Usage

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
    "Engine",
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
    "OutputRepair",
    "ParallelStep",
    "Pause",
    "Pipeline",
    "ProviderError",
    "ProviderUnreachable",
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
    "Template",
    "TemplateError",
    "TemplateSyntax",
    "TraceEvent",
    "Usage",
    "new_run_id",
]
