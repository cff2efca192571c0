"""Answers an earlier run recorded, to replay in a new run (``--replay-answers RUN_ID``).

Each question is matched by its path (``clarify_loop/2/answer``): the same question of an unchanged
blueprint gets the answer the person — or the simulated person — gave last time, so a conversation re-runs
as a regression test, with no new calls for the person's side. Questions inside a sub-workflow are
matched by the path of the step that started it followed by their own path (``review/ask``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.model.errors import RunError
from core.model.events import ChildRunStarted, QuestionAnswered
from core.ports import RunStore


@dataclass(frozen=True)
class RecordedAnswer:
    """An answer a run recorded: the question's path, its step, the answer's value and who gave it
    (``person``, ``simulated`` ...; ``by`` names the simulated person); ``question`` is the question's text
    as asked, when known (a replay of the whole run compares it: ``core.replay``)."""

    path: str
    step: str
    value: Any
    source: str = "person"
    by: str | None = None
    question: str | None = None


@dataclass(frozen=True)
class RecordedAnswers:
    """The answers run ``run_id`` recorded, by question path."""

    run_id: str
    answers: Mapping[str, RecordedAnswer]

    def get(self, path: str) -> RecordedAnswer | None:
        return self.answers.get(path)


async def recorded_answers(store: RunStore, run_id: str) -> RecordedAnswers:
    """The answers of run ``run_id`` (a unique prefix is enough) and of its sub-workflows' child runs.
    RunError when no run matches."""
    record = await store.get_run(run_id)
    if record is None:
        raise RunError(f"no run matches {run_id!r} (given to --replay-answers)", hint="list runs with: flujo lens list")
    answers: dict[str, RecordedAnswer] = {}
    await _collect(store, record.run_id, "", answers)
    return RecordedAnswers(record.run_id, answers)


async def _collect(store: RunStore, run_id: str, prefix: str, into: dict[str, RecordedAnswer]) -> None:
    sources: dict[str, tuple[str, str | None]] = {}
    children: dict[str, str] = {}
    for event in await store.events(run_id):
        match event.data:
            case QuestionAnswered(source=source, by=by):
                sources[event.path] = (source or "person", by)
            case ChildRunStarted(child_run_id=child):
                children[event.path] = child
    for step in await store.steps(run_id):
        if step.kind == "hitl" and step.status == "completed":
            full = f"{prefix}{step.path}"
            source, by = sources.get(step.path, ("person", None))
            into[full] = RecordedAnswer(full, step.name, step.output, source, by)
    for path, child in children.items():
        await _collect(store, child, f"{prefix}{path}/", into)
