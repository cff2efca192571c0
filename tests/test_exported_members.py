"""Each package's __init__ is its public API; this pins the export lists (others import only that)."""

from __future__ import annotations

import core
import core.conversation
import lens

# What lens and flujo_cli take from core: they import it only through its front doors (issue 31).
CORE_FOR_LENS_AND_CLI = {
    "Activity", "AgentStarted", "AnswerRejected", "Answering", "BoundsSettings", "BranchTaken", "CONTAINER_STEP_KINDS",
    "CallSent", "ChildRunStarted", "EnsembleDone", "Event", "HistoryNotInjected", "HistorySummarized",
    "INTERRUPTED_CALL", "KEYED_STEP_KINDS", "LoopExited", "OutputRepaired", "ParallelDone", "ProcessStarted",
    "PromptSent", "PromptTooLarge", "QuestionAnswered", "Redactor", "ReplyCut", "ReplyReceived", "RunStatus",
    "Settings", "SimulatedPerson", "StepErrored", "StepPaths", "SummaryFailed", "ToolCalled", "UnknownEvent",
    "ZERO_USAGE", "MODEL_TURN_KIND", "TOOL_CALL_KIND", "TOOL_LOOP_KINDS",
    # A recorded run served back (flujo run --replay, flujo test) and two runs' prompts compared (lens diff).
    "Divergence", "RecordedCall", "Recording", "Replay", "ReplayDiverged", "load_recording", "messages_diff", "unified",
    "canonical", "message_lines", "value_lines",  # a case's final output compared and diffed (flujo test)
    "busy_refusal", "call_interrupted", "check_thread", "check_thread_name", "load_settings", "masked_under_key",
    "FORK_OPTION", "fork_thread",  # flujo threads fork, and how flujo threads show names a fork's run
    "overrides_from_assignments", "parse_answer", "recorded_answers", "schema_errors", "secret_values",
    "sensitive_key", "use_bounds",
    "source_window",  # the part of a long source line a blueprint finding shows
    "not_a_file",  # what is at a path given as a file, in words (a folder, a FIFO, a symlink loop)
    # flujo config show: the settings' layers and where each setting came from.
    "SettingSource", "SettingsLayer", "setting_sources", "settings_from_layers", "settings_layers", "user_config_path",
    "settings_json_schema",  # flujo schema config: the settings are dataclasses, their schema is made in core
    "KeptSettings",  # the settings checked before, kept in the command line's cache folder
    # How a value is kept on disk between commands: blueprints' validated files share it.
    "KeptEntries", "code_stamp", "loaded_files",
    "project_file_candidates",  # flujo worker: the settings files whose change makes it read its settings again
    "Journal",  # what a run taken again had recorded (flujo worker; flujo resume reads one from the store)
    "yes_or_no",  # a [y/N] answer typed at the terminal: a yes, a no, or a typo asked again
}  # fmt: skip


def test_core_exports() -> None:
    assert set(core.__all__) == CORE_FOR_LENS_AND_CLI | {
        "Abort", "Agent", "AgentCall", "AgentOutputError", "AgentReply", "AgentStep", "BlueprintError",
        "ChatMessage", "ConditionalStep", "ConfigError", "ControlSignal", "Conversation", "ConversationTurn",
        "Engine", "Expression", "FlujoError", "HistoryPolicy", "HitlEntry", "HitlStep", "HumanInput",
        "HumanQuestion", "LimitReached", "Limits", "LoopStep", "MapStep", "NoHuman", "NullReporter",
        "OutputMapping", "OutputRepair", "ParallelStep", "Pause", "Pipeline", "ProviderError", "ProviderUnreachable",
        "PruneResult", "Dependency", "EnsembleStep", "Participant", "ReplyCutOff",
        "CONTAINER_STEP_KINDS", "KEYED_STEP_KINDS",
        "Reporter", "ResumeRefused", "RunContext", "RunError", "RunOutcome", "RunRecord", "RunStore", "RunUpdate",
        "SourcePosition",
        "Step", "StepFailed", "StepRecord", "StoreError", "StoreGone", "StoreUnavailable", "Template", "TemplateError",
        "TemplateSyntax", "ThreadSummary", "ThreadTurn", "TraceEvent", "Usage", "WorkflowStep", "new_run_id",
        # What blueprints needs besides (it imports core only through its front doors):
        "BoundsSettings", "HistorySettings", "LimitSettings", "ModelInfo", "Settings",
        "OFFLINE_MODELS", "PROVIDERS", "PROVIDER_NAMES", "find_provider", "provider_of", "read_gguf",
        "AiTurnSource", "BranchFailure", "CHILD_PATH_ROOTS", "HistoryStrategy", "InputTarget", "MergeStrategy",
        "ReduceMode", "ScopeFunction", "SimulatedPerson", "LazyView", "VIEW_KEYS",
        "builds_structure", "referenced_names", "step_references", "translate_handlebars", "whole_references",
        "template_scope", "scratchpad_slot", "is_context", "turn_text", "read_why", "step_key", "told_turns",
        "terminal_safe",  # a text as a terminal may show it: lens and a run's lines
        # The blueprint's tools: their definitions, the Python tool (flujo validate reads its signature), the factory.
        "McpServerSpec", "PythonTool", "Tool", "ToolSource", "ToolSpec", "ToolUse", "build_tools",
        "ToolCallContext",  # what a tool's call is told (run, path, attempt): a python: tool's function asks for it
    }  # fmt: skip
    for name in core.__all__:
        assert hasattr(core, name), name


def test_conversation_exports() -> None:
    """The interface the step policies call (docs/architecture.md); each name resolves on first use."""
    assert set(core.conversation.__all__) == {
        "ActiveConversation", "BranchRecords", "Injection", "LoopConversation", "RunFrame", "ThreadBinding",
        "bind_thread", "bound", "branch_records", "capture", "check_thread", "check_thread_name", "default_question",
        "enter_loop", "is_context", "makes_turn", "message_for", "newest_message", "prepare", "replay_summary",
        "replayed_call", "shown_text", "turn_text", "active_in",
        "EnsembleState", "Speaker", "Turn", "chat", "cue", "envelope", "parse_reply",
        "fork_thread",
    }  # fmt: skip
    for name in core.conversation.__all__:
        assert hasattr(core.conversation, name), name


def test_control_signals_are_not_flujo_errors() -> None:
    for signal in (core.Pause, core.Abort, core.LimitReached):
        assert not issubclass(signal, core.FlujoError)
        assert issubclass(signal, core.ControlSignal)


# Runs sent to an OpenTelemetry collector (lens.otel; OpenTelemetry imported when one of the first two is read).
LENS_OTEL = {"LiveExport", "export_run", "OTEL_EXTRA", "OtlpTarget", "otel_installed"}


def test_lens_exports() -> None:
    assert set(lens.__all__) == {
        "CallNode", "EventNode", "Expansion", "GroupNode", "MessageNode", "Node", "RunNode", "RunRow", "RunSnapshot",
        "StepNode", "as_shown", "build_tree", "final_output_document", "focus", "list_document", "load_run",
        "load_tree", "masked_document",
        "nested", "open_viewer", "parse_age", "parse_moment", "prune_document", "prune_summary", "recent_runs",
        "runs_table", "show_document", "show_view", "step_paths_named", "trace_document", "trace_view", "walk",
        "RunDiff", "compare_runs", "compared_runs", "diff_document", "diff_lines", "in_step_order",
        "run_lines", "trace_lines", "write_trace", "Provenance", "calls_below", "why_document", "why_lines",
    } | LENS_OTEL  # fmt: skip
    for name in lens.__all__:
        assert hasattr(lens, name), name
