"""Checks of a parallel step's two forms: its settings in a ``parallel:`` block (as ``loop:`` and ``map:`` hold
theirs), or beside ``kind`` as they were written before the block existed; one form per step, with branches."""

from __future__ import annotations

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.schema import PARALLEL_KEYS, ParallelStepModel


def check_parallel(checker: Checker, site: StepSite) -> None:
    step = site.step
    assert isinstance(step, ParallelStepModel)
    beside = [key for key in PARALLEL_KEYS if key in step.fields_given]
    if step.parallel is not None:
        for key in beside:
            checker.error(
                "unknown-key",
                f"unknown key {key!r} in step {step.name!r}: it has a parallel: block, which holds {key}",
                checker.key_at((*site.path, key)),
                f"move {key} into the parallel: block (or write every setting beside kind, without the block)",
            )
        return
    if step.branches is None:
        checker.error(
            "missing-field",
            f"missing 'branches' in step {step.name!r}",
            checker.at(site.path),
            "add a parallel: block holding branches: {<name>: [steps]} (or branches: beside kind)",
        )
