"""The pipeline model core executes: plain, immutable step objects (a tagged union on ``kind``), every kind
of step in one place, the ensemble's with them; and the lists of kinds derived from them.

The blueprint compiler builds these from YAML; a Python user can build them directly. Every callable a
step holds is already compiled (templates, expressions, hooks), so executing a step never parses text.
A step that runs steps says what a key of its steps' paths names (``key_name``, ``KEYED_STEP_KINDS``) and
that its own record holds no usage (``holds_steps``, ``CONTAINER_STEP_KINDS``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from core.model.errors import SourcePosition
from core.model.records import RunRecord
from core.ports import Agent, Tool, ToolSource
from core.text.templates import Expression, Template

if TYPE_CHECKING:
    from core.answering.simulated_person import SimulatedPerson
    from core.context import RunContext
    from core.model.tools import ToolMode

# A condition/exit hook compiled from an expression or a ``module:function``; it receives the scope
# mapping {previous_step, context, steps, iteration, initial_prompt} and returns a value.
ScopeFunction = Callable[[Mapping[str, Any]], Any]

MergeStrategy = Literal["no_merge", "merge_scratchpad", "overwrite", "error_on_conflict", "keep_first"]
ReduceMode = Literal["keys", "values", "union", "concat", "dedupe", "first", "last"]
BranchFailure = Literal["propagate", "ignore"]
HistoryStrategy = Literal["truncate_tokens", "truncate_turns", "summarize"]
AiTurnSource = Literal["last", "all_agents", "named_steps"]
InputTarget = Literal["initial_prompt", "scratchpad", "both"]
# The roots an ``OutputMapping.child`` path may start with (after an optional ``context.``).
CHILD_PATH_ROOTS = ("output", "scratchpad", "steps", "initial_prompt", "hitl_history", "conversation_history")


@dataclass(frozen=True)
class AgentStep:
    """Calls an agent (or passes its input through when ``agent`` is None)."""

    name: str
    agent: Agent | None = None
    input: Template | None = None
    updates_context: bool = False
    sink_to: str | None = None
    use_history: bool | None = None
    # ``turn_text``: what a person reads of the turn this step's result makes (``output`` is the result);
    # the history sent to agents keeps the result as it was said.
    turn_text: Template | None = None
    position: SourcePosition | None = None
    # The tools the agent's model may call in this step (``core.policies.tool_loop``); None: it only talks.
    tools: ToolUse | None = None
    kind: Literal["step"] = "step"
    key_name: ClassVar[str | None] = None
    holds_steps: ClassVar[bool] = False


DEFAULT_MAX_TOOL_CALLS = 8
# The most characters of a tool's result a model is sent (the rest is cut, with a note saying so).
DEFAULT_RESULT_CHARS = 8_000


@dataclass(frozen=True)
class ToolUse:
    """The tools an agent step's model may call, at most ``max_tool_calls`` calls per step, each result cut
    to ``result_chars`` characters before the model sees it; ``mode`` is how the model is told of them (None:
    the agent's ``tool_mode``). ``agent`` is the agent's name in the blueprint, for messages. A ``ToolSource``
    among ``tools`` (an MCP server) stands for the tools it lists when the step runs."""

    tools: tuple[Tool | ToolSource, ...]
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    mode: ToolMode | None = None
    result_chars: int = DEFAULT_RESULT_CHARS
    agent: str = ""


@dataclass(frozen=True)
class HitlStep:
    """Asks the human; the answer (validated against ``input_schema``) is the step's output. Without a
    ``message`` it asks what the conversation's assistant said last, or ``Your answer for '<name>'?``
    (``core.conversation.default_question``)."""

    name: str
    message: Template | None
    input_schema: Mapping[str, Any] | None = None
    sink_to: str | None = None
    position: SourcePosition | None = None
    answered_by: SimulatedPerson | None = None  # ``answered_by: agents.NAME``: a simulated person answers
    kind: Literal["hitl"] = "hitl"
    key_name: ClassVar[str | None] = None
    holds_steps: ClassVar[bool] = False


@dataclass(frozen=True)
class HistoryPolicy:
    """How a conversational loop bounds the history it injects. None means no bound of that kind (the
    blueprint compiler fills both from the configured defaults); the agent's prompt budget always applies."""

    strategy: HistoryStrategy = "truncate_tokens"
    max_tokens: int | None = None
    max_turns: int | None = None
    summarizer: Agent | None = None
    summarize_ratio: float = 0.5


@dataclass(frozen=True)
class Conversation:
    """Conversation settings of a ``conversation: true`` loop."""

    history: HistoryPolicy = field(default_factory=HistoryPolicy)
    history_template: Template | None = None
    ai_turn_source: AiTurnSource = "last"
    named_steps: tuple[str, ...] = ()
    user_turn_sources: tuple[str, ...] = ("hitl",)
    seed_from_input: bool = True
    seed_prefix: str = ""
    # ``init.history.start_with.from_step``: seed the first user turn from this step's output instead.
    seed_from_step: str | None = None


# Hooks the blueprint compiler produces for the loop blocks (init, propagation, output: docs/loops.md).
InitHook = Callable[["RunContext", Any], None]
NextInputHook = Callable[[Any, "RunContext", int], Any]
# The last output, the run context and the step's own input (what its first iteration received; None for a
# map, whose ``initial_prompt`` is the run's input).
OutputHook = Callable[[Any, "RunContext", Any], Any]


@dataclass(frozen=True)
class LoopStep:
    """Runs ``body`` repeatedly, each iteration on an isolated context merged back on success."""

    name: str
    body: tuple[Step, ...]
    max_loops: int = 10
    exit_when: ScopeFunction | None = None
    exit_description: str | None = None
    init: InitHook | None = None
    next_input: NextInputHook | None = None
    output: OutputHook | None = None
    conversation: Conversation | None = None
    # stop_when: agent_finished — the iteration ends right after the body step whose agent replied
    # {"action": "finish"} (later body steps, such as the next question to the human, do not run).
    finish_early: bool = False
    position: SourcePosition | None = None
    kind: Literal["loop"] = "loop"
    key_name: ClassVar[str | None] = "iteration"
    holds_steps: ClassVar[bool] = True


@dataclass(frozen=True)
class ParallelStep:
    """Runs its branches concurrently; output is {branch: output}, or the ``reduce``d value."""

    name: str
    branches: tuple[tuple[str, tuple[Step, ...]], ...]
    merge_strategy: MergeStrategy = "merge_scratchpad"
    on_branch_failure: BranchFailure = "propagate"
    reduce: ReduceMode | None = None
    position: SourcePosition | None = None
    kind: Literal["parallel"] = "parallel"
    key_name: ClassVar[str | None] = "branch"
    holds_steps: ClassVar[bool] = True


@dataclass(frozen=True)
class ConditionalStep:
    """Picks a branch by the value of ``condition`` (bools match branch keys 'true'/'false')."""

    name: str
    condition: ScopeFunction
    branches: tuple[tuple[str, tuple[Step, ...]], ...]
    default_branch: tuple[Step, ...] | None = None
    condition_description: str | None = None
    position: SourcePosition | None = None
    kind: Literal["conditional"] = "conditional"
    key_name: ClassVar[str | None] = "branch"
    holds_steps: ClassVar[bool] = True


@dataclass(frozen=True)
class MapStep:
    """Runs ``body`` once per item of the list ``over`` evaluates to; output is the list of results."""

    name: str
    over: Expression
    body: tuple[Step, ...]
    init: InitHook | None = None
    finalize: OutputHook | None = None
    position: SourcePosition | None = None
    kind: Literal["map"] = "map"
    key_name: ClassVar[str | None] = "item"
    holds_steps: ClassVar[bool] = True


@dataclass(frozen=True)
class OutputMapping:
    """One ``outputs`` entry of a sub-workflow: the value at ``child`` (a path into the child's final
    context, such as ``scratchpad.verdict`` or ``steps.review.output``, or ``output`` for its result) is
    written to the parent's scratchpad at ``parent``."""

    child: str
    parent: str


@dataclass(frozen=True)
class WorkflowStep:
    """Runs ``pipeline`` as a child run with a context of its own (a sub-workflow: ``uses: imports.X``).

    The child receives only the step's input (``input`` rendered, else the previous output), placed by
    ``input_to``: as its initial prompt, into its scratchpad (a mapping is merged, anything else is stored
    under ``input_key``), or both; ``inherit_context`` also starts it with a copy of the parent's
    scratchpad. The step's output is the child's output. Back in the parent, ``outputs`` copy values of the
    child's final context into the parent's scratchpad; without ``outputs``, ``updates_context`` merges the
    child's whole scratchpad. See ``core.policies.workflow`` for the run semantics.
    """

    name: str
    pipeline: Pipeline
    input: Template | None = None
    input_to: InputTarget = "initial_prompt"
    input_key: str = "initial_input"
    inherit_context: bool = False
    outputs: tuple[OutputMapping, ...] | None = None
    updates_context: bool = False
    sink_to: str | None = None
    turn_text: Template | None = None  # as an agent step's: what a person reads of its turn
    position: SourcePosition | None = None
    kind: Literal["workflow"] = "workflow"
    key_name: ClassVar[str | None] = None
    holds_steps: ClassVar[bool] = True


# The ensemble step: a conversation among participants, run in rounds. A participant is exactly one of: an agent
# (a model, or a script agent: ``python:``/``command:``/``script:``), a sub-workflow (``uses: imports.X``, run as
# a step of its own) or the person (``ask``; or ``answered_by`` alone: a participant a simulated person plays,
# asked the conversation's newest turn). ``core.conversation.ensemble.state`` has the rules that decide who
# speaks in a round.

CompletionReason = Literal["completed", "turn_limit", "timeout"]
COMPLETION_REASONS: tuple[CompletionReason, ...] = ("completed", "turn_limit", "timeout")


@dataclass(frozen=True)
class Dependency:
    """``on`` must have spoken (and ``condition``, when set, hold) for the participant to be ready.

    ``max_executions``: the participant may be triggered at most that many times while this dependency is
    among its satisfied ones (None: no bound of its own)."""

    on: str
    condition: Expression | None = None
    max_executions: int | None = None


@dataclass(frozen=True)
class Participant:
    """One voice of the conversation: exactly one of ``agent``, ``workflow`` or the person (``ask``,
    ``answered_by`` or both) is set. ``answered_by`` is the simulated person who answers for the person."""

    name: str
    agent: Agent | None = None
    workflow: WorkflowStep | None = None
    ask: Template | None = None
    answered_by: SimulatedPerson | None = None
    input_schema: Mapping[str, Any] | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    max_turns: int = 1
    depends_on: tuple[Dependency, ...] = ()
    requires_all: bool = True
    state_key: str | None = None
    # ``triggers_conversation``: it opens the conversation, speaking in round 1 before its dependencies
    # have spoken; from round 2 on its dependencies decide, as for everyone.
    opens: bool = False
    position: SourcePosition | None = None

    @property
    def is_person(self) -> bool:
        """Whether the person speaks for this participant (asked through ``core.policies.person``)."""
        return self.ask is not None or self.answered_by is not None


# The ``output:`` hook of an ensemble (as for loops): the conversation result, the run context and the
# ensemble's input in, the step's output out.
EnsembleOutputHook = Callable[[Any, "RunContext", Any], Any]


@dataclass(frozen=True)
class EnsembleStep:
    """A conversation among ``participants`` in rounds; its output is {final_state, history, turn_count,
    completion_reason} unless ``output`` maps it to something else."""

    name: str
    participants: tuple[Participant, ...]
    max_total_turns: int = 20
    max_agent_executions: Mapping[str, int] = field(default_factory=dict)
    timeout_seconds: float | None = 300.0
    history: HistoryPolicy | None = None
    output: EnsembleOutputHook | None = None
    position: SourcePosition | None = None
    kind: Literal["ensemble"] = "ensemble"
    key_name: ClassVar[str | None] = "round"
    holds_steps: ClassVar[bool] = True

    def participant(self, name: str) -> Participant:
        for participant in self.participants:
            if participant.name == name:
                return participant
        raise KeyError(name)


Step = AgentStep | HitlStep | LoopStep | ParallelStep | ConditionalStep | MapStep | WorkflowStep | EnsembleStep


# What a key below a step of each kind that has them is called: a step path alternates step names and these
# keys (``chat/3/clarify``: step ``clarify`` of iteration ``3`` of loop ``chat``).
KEYED_STEP_KINDS: Mapping[str, str] = {kind.kind: kind.key_name for kind in get_args(Step) if kind.key_name is not None}
# The step kinds whose own record holds no usage: what ran in them (their steps, a child run) does.
CONTAINER_STEP_KINDS = frozenset(kind.kind for kind in get_args(Step) if kind.holds_steps)


@dataclass(frozen=True)
class Limits:
    """Run-wide usage limits (the blueprint's ``limits:``); None means no limit. Not the bounds of hostile
    input (``BoundsSettings``) nor the history's bound: the words are in ``core.text.bounds``."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class Pipeline:
    """A compiled blueprint: its steps, limits and where it came from."""

    steps: tuple[Step, ...]
    name: str = "pipeline"
    limits: Limits = field(default_factory=Limits)
    source: str | None = None
    source_hash: str | None = None

    def new_run(
        self,
        run_id: str,
        input: Any,
        *,
        thread: str | None = None,
        parent_run_id: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> RunRecord:
        """The record of a new run of this pipeline, ``running`` from now."""
        return RunRecord(
            run_id=run_id,
            pipeline_name=self.name,
            status="running",
            source=self.source,
            source_hash=self.source_hash,
            input=input,
            created_at=time.time(),
            thread=thread,
            parent_run_id=parent_run_id,
            options=options,
        )
