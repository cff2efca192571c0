"""Run paths and step paths: two ways to name a step of a pipeline.

A *run path* names one execution of a step: the step names from the top, with the key of each iteration,
item, branch or round between a composite step and its steps (``chat/3/clarify``: step ``clarify`` of
iteration 3 of loop ``chat``); a sub-workflow's steps follow the path of the step that started it. A *step
path* names a step of the pipeline, whichever execution: the names alone (``chat/clarify``). Each segment is
a step's name with ``/`` and ``%`` escaped (``path_segment``), so a name never reads as two segments.

Names are unique in a blueprint except that a step may take the name of a loop, map or parallel step it is
inside; a name alone may then name two steps (``clarify`` and ``clarify/clarify``), and a step path tells them
apart. ``StepPaths`` answers both questions for a pipeline: which step path a run path executes, and which
step paths a name names (for ``--answers`` keys: docs/cli.md). Names are unique per blueprint: a
sub-workflow's step may have the name of one of its parent's, and a name then answers both, as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import assert_never

from core.steps.kinds import (
    AgentStep,
    ConditionalStep,
    EnsembleStep,
    HitlStep,
    LoopStep,
    MapStep,
    ParallelStep,
    Pipeline,
    Step,
    WorkflowStep,
)


def path_segment(name: str) -> str:
    """``name`` as one segment of a path: ``/`` (the separator) and ``%`` (the escape) are escaped, so a
    step named ``chat/1/ask`` (``chat%2F1%2Fask``) can never have the path of the ``ask`` step of the
    ``chat`` loop's first iteration (``chat/1/ask``): each path names one step, and the journal that
    resume replays cannot give one step's result to another."""
    return name.replace("%", "%25").replace("/", "%2F") if "/" in name or "%" in name else name


class StepPaths:
    """The step paths of a pipeline's steps (an ensemble's participants included, and the steps of its
    sub-workflows below the step that runs them)."""

    def __init__(self, pipeline: Pipeline) -> None:
        self._pipeline = pipeline
        # name -> the step paths of the steps of that name, per blueprint (the pipeline's, each sub-workflow's)
        self._by_name: dict[str, dict[str, list[str]]] = {}
        for path, name, blueprint in _all(pipeline.steps, "", ""):
            known = self._by_name.setdefault(name, {}).setdefault(blueprint, [])
            if path not in known:
                known.append(path)

    def named(self, name: str) -> list[str]:
        """The step paths of the steps called ``name``, in document order."""
        return [path for paths in self._by_name.get(name, {}).values() for path in paths]

    def ambiguous(self, name: str) -> list[str]:
        """The step paths of the steps called ``name`` in one blueprint, when there are several (a step inside
        a loop, map or parallel step of the same name); empty otherwise. Steps of one name in different
        blueprints (a sub-workflow's and its parent's) are not ambiguous: a name answers all of them."""
        return next((list(paths) for paths in self._by_name.get(name, {}).values() if len(paths) > 1), [])

    def of(self, run_path: str) -> str | None:
        """The step path of the step the run path ``run_path`` executes; None when it names no step of the
        pipeline (a path below an agent step, such as a tool call's)."""
        steps: Sequence[Step] = self._pipeline.steps
        segments = run_path.split("/") if run_path else []
        names: list[str] = []
        index = 0
        while index < len(segments):
            step = next((s for s in steps if path_segment(s.name) == segments[index]), None)
            if step is None:
                return None
            names.append(segments[index])
            index += 1
            if index == len(segments):
                return "/".join(names)
            if isinstance(step, WorkflowStep):
                steps = step.pipeline.steps
            elif isinstance(step, LoopStep | MapStep):
                steps, index = step.body, index + 1  # past the iteration or item
            elif isinstance(step, ParallelStep | ConditionalStep):
                key = segments[index]
                branches = dict(step.branches)
                if isinstance(step, ConditionalStep) and step.default_branch is not None:
                    branches.setdefault("default", step.default_branch)
                found = next((b for k, b in branches.items() if path_segment(k) == key), None)
                if found is None:
                    return None
                steps, index = found, index + 1
            elif isinstance(step, EnsembleStep):  # past the round, the participant that spoke (or asked)
                rest = segments[index + 1 :]
                if len(rest) == 1 and any(path_segment(p.name) == rest[0] for p in step.participants):
                    return "/".join([*names, rest[0]])
                return None
            else:
                return None  # below an agent step or a question: not a step of the pipeline
        return None


def _all(steps: Sequence[Step], prefix: str, blueprint: str) -> Iterator[tuple[str, str, str]]:
    """(step path, name, the step path of the sub-workflow step whose blueprint it is in: "" for the
    pipeline's own) of every step under ``steps``, in document order."""
    for step in steps:
        here = f"{prefix}/{path_segment(step.name)}" if prefix else path_segment(step.name)
        yield here, step.name, blueprint
        if isinstance(step, AgentStep | HitlStep):
            continue
        if isinstance(step, LoopStep | MapStep):
            yield from _all(step.body, here, blueprint)
        elif isinstance(step, ParallelStep | ConditionalStep):
            for _, branch in step.branches:
                yield from _all(branch, here, blueprint)
            if isinstance(step, ConditionalStep) and step.default_branch is not None:
                yield from _all(step.default_branch, here, blueprint)
        elif isinstance(step, WorkflowStep):
            yield from _all(step.pipeline.steps, here, here)
        elif isinstance(step, EnsembleStep):
            for participant in step.participants:
                yield f"{here}/{path_segment(participant.name)}", participant.name, blueprint
        else:
            assert_never(step)
