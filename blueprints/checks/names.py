"""Step names are unique within a blueprint (``steps.<name>`` and run paths depend on it)."""

from __future__ import annotations

from collections.abc import Sequence

from blueprints.checks.checker import Checker
from blueprints.checks.sites import StepSite


def check_unique_names(checker: Checker, sites: Sequence[StepSite]) -> None:
    first_at: dict[str, StepSite] = {}
    for site in sites:
        name = site.step.name
        earlier = first_at.get(name)
        if earlier is None:
            first_at[name] = site
            continue
        first = checker.at((*earlier.path, "name"))
        checker.error(
            "duplicate-name",
            f"step name {name!r} is already used (first at {first})",
            checker.at((*site.path, "name")),
            "step names must be unique within a blueprint; rename one of them",
        )
