"""Walking the step tree: every step with its data path and the loop that encloses it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import assert_never

from blueprints.reading.positions import Path
from blueprints.schema import (
    AgentStepModel,
    AnyStepModel,
    ConditionalStepModel,
    EnsembleStepModel,
    HitlStepModel,
    LoopSettingsModel,
    LoopStepModel,
    MapStepModel,
    ParallelStepModel,
)


@dataclass(frozen=True)
class StepSite:
    """A step, the path of its mapping in the file, its innermost enclosing loop (if any) and the innermost
    enclosing ``conversation: true`` loop (if any: the conversation the step runs in)."""

    step: AnyStepModel
    path: Path
    loop: LoopSettingsModel | None = None
    conversation: LoopSettingsModel | None = None


def child_lists(step: AnyStepModel, path: Path) -> Iterator[tuple[Sequence[AnyStepModel], Path]]:
    """The step lists nested directly in ``step``, with their paths."""
    if isinstance(step, AgentStepModel | HitlStepModel | EnsembleStepModel):
        return
    elif isinstance(step, LoopStepModel):
        yield step.loop.body, (*path, "loop", "body")
    elif isinstance(step, ParallelStepModel):
        for name, branch in step.settings.branches.items():
            yield branch, (*path, *step.settings_path, "branches", name)
    elif isinstance(step, ConditionalStepModel):
        for key, branch in step.branches.items():
            yield branch, (*path, "branches", key)
        if step.default_branch is not None:
            yield step.default_branch, (*path, "default_branch")
    elif isinstance(step, MapStepModel):
        yield step.map.body, (*path, "map", "body")
    else:
        assert_never(step)


def walk(
    steps: Sequence[AnyStepModel],
    path: Path,
    loop: LoopSettingsModel | None = None,
    conversation: LoopSettingsModel | None = None,
) -> Iterator[StepSite]:
    """Every step under ``steps`` in document order (a parent before its children)."""
    for number, step in enumerate(steps):
        here = (*path, number)
        yield StepSite(step, here, loop, conversation)
        inner, talk = loop, conversation
        if isinstance(step, LoopStepModel):
            inner = step.loop
            talk = step.loop if step.loop.conversation else conversation
        for children, children_path in child_lists(step, here):
            yield from walk(children, children_path, inner, talk)


def names_under(steps: Sequence[AnyStepModel]) -> list[str]:
    """Names of all steps in ``steps`` and nested inside them."""
    return [site.step.name for site in walk(steps, ())]


def step_kinds(steps: Sequence[AnyStepModel], prefix: str = "") -> dict[str, str]:
    """The kind of each step under ``steps`` by its step path: the names of the steps it is in and its own,
    without the iterations, items, branches or rounds between them (``chat/clarify``)."""
    kinds: dict[str, str] = {}
    for step in steps:
        here = f"{prefix}/{step.name}" if prefix else step.name
        kinds[here] = step.kind
        for children, _ in child_lists(step, ()):
            kinds.update(step_kinds(children, here))
    return kinds
