"""Checks of where a write lands: a ``sink_to``, a loop's or map's ``init`` target, a sub-workflow's
``outputs`` parent path. Each names a key in the scratchpad (``goal``, ``scratchpad.goal`` and
``context.scratchpad.goal`` are the same place, see ``core.policies.context_writes``); one that names the
scratchpad or the context itself (``sink_to: scratchpad``) would fail the run with "cannot write to ...".
"""

from __future__ import annotations

from collections.abc import Iterable

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.reading.positions import Path
from blueprints.schema import AgentStepModel, HitlStepModel


def scratchpad_key(target: str) -> str | None:
    """The scratchpad key a write target names first (``context.scratchpad.goal`` → ``goal``); None when it
    names none (``scratchpad``, ``context.scratchpad``, ``context``)."""
    parts = target.split(".")
    if parts[0] == "context":
        parts = parts[1:]
    if parts and parts[0] == "scratchpad":
        parts = parts[1:]
    return parts[0] if parts and parts[0] else None


def check_write_target(checker: Checker, path: Path, target: str, what: str, example: str) -> bool:
    """An error at ``path`` when ``target`` names no scratchpad key; whether it names one."""
    if scratchpad_key(target) is not None:
        return True
    whose = "the parent's scratchpad" if what == "outputs:" else "the scratchpad"
    checker.error("bad-value", f"{what} {target!r} names no key in {whose}", checker.at(path), f"e.g. {example}")
    return False


def check_sinks(checker: Checker, sites: Iterable[StepSite]) -> None:
    """Every ``sink_to`` names a scratchpad key."""
    for site in sites:
        step = site.step
        if isinstance(step, AgentStepModel | HitlStepModel) and step.sink_to is not None:
            example = f"sink_to: scratchpad.{step.name}"
            check_write_target(checker, (*site.path, "sink_to"), step.sink_to, "sink_to:", example)
