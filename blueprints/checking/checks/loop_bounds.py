"""How many times a loop may run: a ``max_loops`` above the settings' ceiling is refused, and a loop that
nothing can end early and that may run more than ``ENDLESS`` iterations is warned about.

A loop ends early on its ``exit_expression`` or ``exit_condition``, or on ``stop_when: agent_finished``
(which ``conversation: true`` implies) when a step of its body can say ``{"action": "finish"}``: an agent
(a model, ``python:`` or ``command:`` agent, ``module:function``), a sub-workflow, a person (``hitl``) or an
ensemble. A body of builtins (``flujo.builtins.passthrough``, ``stringify``) and steps without an agent
says nothing: such a loop runs all its ``max_loops`` (176,000 iterations a minute, each one stored).
"""

from __future__ import annotations

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import walk
from blueprints.reading.positions import Path
from blueprints.schema import AgentRefModel, AgentStepModel, EnsembleStepModel, HitlStepModel, LoopSettingsModel

ENDLESS = 10_000
"""More iterations than this, with nothing to end the loop sooner, is surely not meant."""


def check_loop_iterations(checker: Checker, loop: LoopSettingsModel, path: Path) -> None:
    """The ceiling (``bounds.loop_max_iterations``) and the endless-loop warning, at ``max_loops``."""
    if loop.max_loops is None:
        return  # the default, 10
    at = checker.at((*path, "max_loops"))
    ceiling = checker.bounds.loop_max_iterations
    if loop.max_loops > ceiling:
        checker.error(
            "over-limit",
            f"max_loops is {_count(loop.max_loops)}, more than the {ceiling:,} iterations a loop may run",
            at,
            "end the loop with exit_expression (or stop_when: agent_finished) and a smaller max_loops; "
            "the limit is the setting bounds.loop_max_iterations",
        )
        return
    if loop.max_loops > ENDLESS and not _can_end_early(loop):
        checker.warning(
            "endless-loop",
            f"this loop runs all {loop.max_loops:,} iterations: it has no exit_expression or exit_condition, "
            "and no step of its body can end it",
            at,
            "add exit_expression (e.g. \"previous_step == 'done'\"), or an agent with stop_when: agent_finished, "
            "or lower max_loops",
        )


def _can_end_early(loop: LoopSettingsModel) -> bool:
    if loop.exit_expression is not None or loop.exit_condition is not None:
        return True
    if loop.stop_when != "agent_finished" and not loop.conversation:
        return False
    return any(_can_say_finish(site.step) for site in walk(loop.body, ()))


def _can_say_finish(step: object) -> bool:
    if isinstance(step, HitlStepModel | EnsembleStepModel):
        return True
    if isinstance(step, AgentStepModel):
        return step.uses is not None or (step.agent is not None and not isinstance(step.agent, AgentRefModel))
    return False


def _count(number: int) -> str:
    """``number`` with thousands separators, or its length when it is too long to read."""
    text = f"{number:,}"
    return text if len(text) <= 27 else f"a number of {len(str(number))} digits"
