"""The state of one ensemble conversation, and the rules of a round (pure: no I/O, no clock).

Invariants:
- Who speaks in a round depends only on the state, so a resumed run that replays the committed turns
  rebuilds the same rounds. A participant is ready when it is under its limits (``max_turns``, the
  conversation's ``max_agent_executions``) and its dependencies are satisfied: a dependency is satisfied
  when that participant has spoken, its ``condition`` holds and its ``max_executions`` is not spent; all
  of them (``requires_all``) or any one. A participant with no dependencies is always satisfied, and one
  that opens the conversation (``triggers_conversation``) is satisfied in round 1.
- After a round: ``turn_count`` goes up by one; each speaker's execution count and the trigger count of
  each dependency it spoke on; the accumulated context holds each speaker's latest output under its name
  (and ``state_key``) and, for a mapping output (a JSON object reply is parsed, also inside a ```json
  fence), its keys at the top level, later speakers winning. Speakers are applied in declaration order.
- Each turn is stored once (``turns``); what a participant is sent is cut from it (``core.conversation.ensemble.view``)
  without copying it, so a round costs the same at round 1,000 as at round 1. ``said`` only grows at its end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.conversation.replies import parse_reply
from core.model.calls import ChatMessage
from core.model.provenance import SEED_INPUT, answer_origin, participant_origin
from core.steps.kinds import Dependency, EnsembleStep, Participant
from core.text.turns import ConversationTurn, Turns, turn_text


@dataclass(frozen=True)
class Turn:
    """One participant's turn: the round it spoke in, its output, how long it took, when it ended, and
    the path of its committed record (what it was sent is in that record's trace, not copied here)."""

    round: int
    participant: str
    output: Any
    duration_s: float
    timestamp: float
    path: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.round,
            "participant": self.participant,
            "output": self.output,
            "duration_s": round(self.duration_s, 6),
            "timestamp": self.timestamp,
            "path": self.path,
        }


@dataclass
class EnsembleState:
    """What the conversation has accumulated so far."""

    step: EnsembleStep
    opening: Any = None  # the ensemble's input (``previous_step`` in conditions)
    seed: ConversationTurn | None = None
    earlier: tuple[ConversationTurn, ...] = ()  # a thread's turns from earlier runs (``--thread``)
    turn_count: int = 0
    executions: dict[str, int] = field(default_factory=dict)
    triggers: dict[tuple[str, str], int] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # steps.<participant>.output
    turns: list[Turn] = field(default_factory=list)
    # The same turns as conversation turns ("name: text", tokens counted once), for what participants are sent.
    said: list[ConversationTurn] = field(default_factory=Turns)
    history: list[dict[str, Any]] = field(default_factory=list)  # turns as conditions see them
    # What each participant is sent of ``said``, as chat messages from its own point of view: made once per
    # turn (``core.conversation.ensemble.view``), the same objects in every round's prompt. Derived, not state.
    views: dict[str, list[ChatMessage]] = field(default_factory=dict, compare=False, repr=False)
    # How many turns (the thread's earlier ones, the input, the ensemble's) the trace has given the origins of:
    # ``told``, from ``told_from`` in round ``told_in`` (``core.conversation.ensemble.view.ensemble_why``).
    told: int = field(default=0, compare=False, repr=False)
    told_from: int = field(default=0, compare=False, repr=False)
    told_in: int = field(default=0, compare=False, repr=False)

    @classmethod
    def start(cls, step: EnsembleStep, opening: Any, *, earlier: tuple[ConversationTurn, ...] = ()) -> EnsembleState:
        """The state before round 1; the ensemble's input, when it has one, opens the conversation (after
        ``earlier``, the turns of the thread the run continues)."""
        seed = None
        if opening is not None and turn_text(opening).strip():
            text = turn_text(opening)
            seed = ConversationTurn("user", text, origin=SEED_INPUT)  # tokens counted when a bound needs them
        return cls(step=step, opening=opening, seed=seed, earlier=earlier)

    def limit(self, participant: Participant) -> int:
        """How many times ``participant`` may speak in this conversation."""
        cap = self.step.max_agent_executions.get(participant.name)
        return participant.max_turns if cap is None else min(participant.max_turns, cap)

    def scope(self) -> dict[str, Any]:
        """What conditions see. Live objects, not copies: the expression sandbox cannot change them."""
        return {
            "context": self.context,
            "turn_count": self.turn_count,
            "round": self.turn_count + 1,
            "history": self.history,
            "steps": self.outputs,
            "previous_step": self.opening,
        }

    def satisfied(self, participant: Participant, scope: Mapping[str, Any]) -> list[Dependency] | None:
        """The dependencies that let ``participant`` speak now, or None when it may not."""
        if self.executions.get(participant.name, 0) >= self.limit(participant):
            return None
        if not participant.depends_on or (participant.opens and self.turn_count == 0):
            return []
        met = [dep for dep in participant.depends_on if self._met(participant, dep, scope)]
        enough = len(met) == len(participant.depends_on) if participant.requires_all else bool(met)
        return met if enough else None

    def _met(self, participant: Participant, dep: Dependency, scope: Mapping[str, Any]) -> bool:
        if dep.on not in self.outputs:
            return False
        spent = self.triggers.get((participant.name, dep.on), 0)
        if dep.max_executions is not None and spent >= dep.max_executions:
            return False
        return dep.condition is None or bool(dep.condition.evaluate(scope))

    def ready(self) -> list[tuple[Participant, list[Dependency]]]:
        """The participants that speak in the next round, in declaration order, with what triggered them."""
        scope = self.scope()
        chosen = []
        for participant in self.step.participants:
            met = self.satisfied(participant, scope)
            if met is not None:
                chosen.append((participant, met))
        return chosen

    def apply(self, spoken: Sequence[tuple[Participant, Sequence[Dependency], Turn]]) -> None:
        """Record a finished round: ``spoken`` in declaration order."""
        self.turn_count += 1
        for participant, met, turn in spoken:
            name = participant.name
            self.executions[name] = self.executions.get(name, 0) + 1
            for dep in met:
                self.triggers[(name, dep.on)] = self.triggers.get((name, dep.on), 0) + 1
            value = parse_reply(turn.output)
            self.outputs[name] = {"output": value}
            self.context[name] = value
            if participant.state_key:
                self.context[participant.state_key] = value
            if isinstance(value, dict):
                self.context.update(value)
            self.turns.append(turn)
            self.history.append({"turn": turn.round, "participant": name, "output": value})
            text = f"{name}: {turn_text(turn.output)}"
            origin = answer_origin(turn.path) if participant.is_person else participant_origin(turn.path)
            self.said.append(ConversationTurn("user", text, origin=origin))  # tokens counted when a bound needs them

    def result(self, reason: str) -> dict[str, Any]:
        """The conversation's result: {final_state, history, turn_count, completion_reason}."""
        return {
            "final_state": dict(self.context),
            "history": [turn.to_dict() for turn in self.turns],
            "turn_count": self.turn_count,
            "completion_reason": reason,
        }
