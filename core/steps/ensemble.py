"""The ensemble step: a conversation among participants, run in rounds (plain, immutable objects).

A participant is exactly one of: an agent (a model, or a script agent: ``python:``/``command:``/``script:``),
a sub-workflow (``uses: imports.X``, run as a step of its own) or the person (``ask``; or ``answered_by``
alone: a participant a simulated person plays, asked the conversation's newest turn). The blueprint
compiler builds these; a Python user can build them directly. See ``core.conversation.ensemble.state`` for
the rules that decide who speaks in a round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from core.model.errors import SourcePosition
from core.ports import Agent
from core.text.templates import Expression, Template

if TYPE_CHECKING:
    from core.answering.simulated_person import SimulatedPerson
    from core.context import RunContext
    from core.steps.kinds import HistoryPolicy, WorkflowStep

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

    def participant(self, name: str) -> Participant:
        for participant in self.participants:
            if participant.name == name:
                return participant
        raise KeyError(name)
