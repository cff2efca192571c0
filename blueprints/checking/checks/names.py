"""Step names are unique within a blueprint (``steps.<name>`` and run paths depend on it), with one exception:
a step may share its name with a loop, map or parallel step that encloses it (``- kind: loop, name: clarify``
whose body is ``- kind: step, name: clarify``). Inside that body ``steps.clarify`` and the name-keyed loop
fields mean the body step; outside it, the enclosing step; a run path (``clarify/1/clarify``) and a step path
(``clarify/clarify``) tell them apart (docs/blueprints.md, "Step names")."""

from __future__ import annotations

from collections.abc import Sequence

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.schema import LoopStepModel, MapStepModel, ParallelStepModel

# The kinds of step whose name a step inside them may take again.
SHADOWABLE = (LoopStepModel, MapStepModel, ParallelStepModel)


def encloses(outer: StepSite, inner: StepSite) -> bool:
    """Whether ``inner`` is a step inside ``outer``, which is a loop, map or parallel step."""
    path = outer.path
    return isinstance(outer.step, SHADOWABLE) and len(inner.path) > len(path) and inner.path[: len(path)] == path


def check_unique_names(checker: Checker, sites: Sequence[StepSite]) -> None:
    seen: dict[str, list[StepSite]] = {}
    for site in sites:  # in document order: a step's enclosing steps come before it
        name = site.step.name
        earlier = seen.setdefault(name, [])
        clash = next((other for other in earlier if not encloses(other, site)), None)
        earlier.append(site)
        if clash is None:
            continue
        first = checker.at((*clash.path, "name"))
        checker.error(
            "duplicate-name",
            f"step name {name!r} is already used (first at {first})",
            checker.at((*site.path, "name")),
            "step names must be unique within a blueprint (a step may share only the name of a loop, map or "
            "parallel step it is inside); rename one of them",
        )
