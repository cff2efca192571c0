"""The run context: the state a run carries from step to step.

Invariants:
- A loop iteration, a parallel branch and a map item each run on ``isolate()``d copies; the copy is
  ``adopt()``ed back only when that unit of work succeeds, so a failed iteration leaves no trace in the
  parent state.
- Step outputs are treated as immutable values once produced: copies share them (copying is shallow for
  outputs and turns, deep only for the mutable scratchpad).
- ``conversation_history`` is the one conversation store; views such as ``scratchpad.history`` are derived.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class ConversationTurn:
    """One turn of a conversation; ``tokens`` is counted once, when the turn is added."""

    role: Role
    content: str
    tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tokens is not None:
            data["tokens"] = self.tokens
        return data


@dataclass(frozen=True)
class HitlEntry:
    """A question asked of the human and the answer given."""

    step: str
    message: str
    answer: Any

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "message": self.message, "answer": self.answer}


@dataclass
class RunContext:
    """Mutable state of one run (or of one isolated iteration/branch of it)."""

    initial_prompt: Any = None
    scratchpad: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, Any] = field(default_factory=dict)
    hitl_history: list[HitlEntry] = field(default_factory=list)
    conversation_history: list[ConversationTurn] = field(default_factory=list)

    def isolate(self) -> RunContext:
        """A copy to work on; changes reach this context only through ``adopt``."""
        return RunContext(
            initial_prompt=self.initial_prompt,
            scratchpad=copy.deepcopy(self.scratchpad),
            steps=dict(self.steps),
            hitl_history=list(self.hitl_history),
            conversation_history=list(self.conversation_history),
        )

    def adopt(self, other: RunContext) -> None:
        """Take over the state of an isolated copy that finished successfully."""
        self.initial_prompt = other.initial_prompt
        self.scratchpad = other.scratchpad
        self.steps = other.steps
        self.hitl_history = other.hitl_history
        self.conversation_history = other.conversation_history

    def view(self) -> dict[str, Any]:
        """Plain data for templates, expressions, hooks and agents (no methods of ours reachable from them).

        A deep copy: what reads the view can neither change the run's state behind the journal's back (an
        agent mutating ``context``) nor capture live state (``{{ steps }}`` as a step's output would
        otherwise contain itself once recorded).
        """
        return copy.deepcopy(
            {
                "initial_prompt": self.initial_prompt,
                "scratchpad": self.scratchpad,
                "steps": self.steps,
                "hitl_history": [entry.to_dict() for entry in self.hitl_history],
                "conversation_history": [turn.to_dict() for turn in self.conversation_history],
            }
        )

    def to_dict(self) -> dict[str, Any]:
        return self.view()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunContext:
        return cls(
            initial_prompt=data.get("initial_prompt"),
            scratchpad=dict(data.get("scratchpad") or {}),
            steps=dict(data.get("steps") or {}),
            hitl_history=[HitlEntry(**entry) for entry in data.get("hitl_history") or []],
            conversation_history=[ConversationTurn(**turn) for turn in data.get("conversation_history") or []],
        )
