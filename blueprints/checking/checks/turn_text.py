"""Checks of a step's ``turn_text`` (docs/conversation.md, "What a person reads of a turn").

``turn_text`` is a template over the step's usual variables and ``output`` (its result). It is compiled
here as the run compiles it, so a mistake is reported at its file:line:col. It only acts on a step whose
result makes a turn, so outside a ``conversation: true`` loop it warns (``ignored-key``), as ``use_history``
does.
"""

from __future__ import annotations

from collections.abc import Sequence

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.checking.checks.texts import check_text
from blueprints.schema import AgentStepModel


def check_turn_text(checker: Checker, sites: Sequence[StepSite], step_names: list[str]) -> None:
    """Compile each ``turn_text`` and check its names; warn where no conversation can use it."""
    for site in sites:
        step = site.step
        if not isinstance(step, AgentStepModel) or step.turn_text is None:
            continue
        here = (*site.path, "turn_text")
        check_text(checker, here, step.turn_text, extra_names=("output",), step_names=step_names)
        if site.loop is None or not site.loop.conversation:
            checker.warning(
                "ignored-key",
                "turn_text has no effect outside a loop with conversation: true",
                checker.key_at(here),
                "a step's turn_text says what a person reads of the turn its result makes in a conversation",
            )
