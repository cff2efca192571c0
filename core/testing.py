"""Offline doubles shipped with core: a scripted human and a recording reporter.

Together with ``model: scripted`` agents (core.agents) and ``core.store.MemoryStore`` they let a test or
a Python user run any pipeline with no terminal, no network and no files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from core.model.calls import Activity, HumanQuestion
from core.model.errors import RunError
from core.model.records import StepRecord


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
