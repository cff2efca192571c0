"""Offline doubles shipped with core: a scripted human, a recording reporter and an agent that is a Python
function.

Together with ``model: scripted`` agents (core.agents) and ``core.store.MemoryStore`` they let a test or
a Python user run any pipeline with no terminal, no network and no files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.agents.base import BaseAgent
from core.model.calls import Activity, AgentCall, AgentReply, ChatMessage, HumanQuestion
from core.model.errors import RunError
from core.model.records import StepRecord, TraceEvent
from core.model.usage import Usage


class ScriptedHuman:
    """Answers HITL questions from a list, in order; None (pause) when the list is used up.

    A rejected answer cannot be re-typed by a script, so it raises RunError naming the step and why.
    """

    def __init__(self, answers: Iterable[str] = ()) -> None:
        self.answers = list(answers)
        self.asked: list[HumanQuestion] = []

    async def ask(self, question: HumanQuestion) -> str | None:
        if question.error is not None:
            raise RunError(
                f"the answer to {question.step!r} was rejected: {question.error}",
                hint="fix the scripted answer so it matches the step's input_schema",
            )
        self.asked.append(question)
        if not self.answers:
            return None
        return self.answers.pop(0)


@dataclass
class RecordingReporter:
    """Keeps what a run reported, for assertions."""

    started: list[str] = field(default_factory=list)
    finished: list[StepRecord] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    replies: list[tuple[str, Any]] = field(default_factory=list)
    activities: list[tuple[str, Activity]] = field(default_factory=list)
    events: list[TraceEvent] = field(default_factory=list)  # as committed

    def step_started(self, path: str, name: str, kind: str) -> None:
        self.started.append(path)

    def step_finished(self, record: StepRecord) -> None:
        self.finished.append(record)

    def text_delta(self, path: str, text: str) -> None:
        self.text.append(text)

    def agent_replied(self, path: str, name: str, output: Any) -> None:
        self.replies.append((name, output))

    def note(self, message: str) -> None:
        self.notes.append(message)

    def activity(self, path: str, activity: Activity) -> None:
        self.activities.append((path, activity))

    def events_committed(self, events: Sequence[TraceEvent]) -> None:
        self.events.extend(events)


class FuncAgent(BaseAgent):
    """An agent whose output is ``fn(input)``: it counts its calls (``calls``, the inputs it was given) and
    the replays of its journaled replies (``replayed``), and charges ``tokens`` input tokens per call. The
    rest of the Agent protocol is ``BaseAgent``'s defaults."""

    def __init__(self, fn: Callable[[Any], Any], *, tokens: int = 0) -> None:
        self.fn = fn
        self.calls: list[Any] = []
        self.tokens = tokens
        self.replays = 0

    @property
    def label(self) -> str:
        return "func"

    def prompt(self, call: AgentCall) -> list[ChatMessage]:
        return [ChatMessage("user", str(call.input))]

    def replayed(self) -> None:
        self.replays += 1

    async def run(self, call: AgentCall) -> AgentReply:
        self.calls.append(call.input)
        return AgentReply(output=self.fn(call.input), usage=Usage(input_tokens=self.tokens, requests=1))
