"""Warnings at every key that is accepted but has no effect yet (the list is ``blueprints.pending``)."""

from __future__ import annotations

from collections.abc import Sequence

from blueprints.checks.checker import Checker
from blueprints.checks.sites import StepSite
from blueprints.pending import pending_message
from blueprints.schema import AgentStepModel, InitPresetsModel, LoopStepModel

_LOOP_KEYS = (
    "conversation",
    "history_management",
    "history_template",
    "ai_turn_source",
    "named_steps",
    "user_turn_sources",
)


def _warn(checker: Checker, feature: str, key: str, path: tuple[str | int, ...]) -> None:
    message = pending_message(feature, key)
    position = checker.key_at(path)
    # A key already flagged as having no effect here needs no second warning saying the same.
    if message is not None and not checker.has_warning_at(position):
        checker.warning("not-yet-supported", message, position)


def check_pending_keys(checker: Checker, sites: Sequence[StepSite]) -> None:
    for site in sites:
        step = site.step
        if isinstance(step, LoopStepModel) and step.loop.conversation:
            path = (*site.path, "loop")
            for key in _LOOP_KEYS:
                if key in step.loop.model_fields_set:
                    _warn(checker, f"loop.{key}", key, (*path, key))
            if isinstance(step.loop.init, InitPresetsModel) and step.loop.init.history is not None:
                _warn(checker, "loop.init.history", "init.history", (*path, "init", "history"))
        if isinstance(step, AgentStepModel) and step.use_history is not None:
            path = (*site.path, "use_history")
            if site.loop is not None and site.loop.conversation:
                _warn(checker, "step.use_history", "use_history", path)
            else:
                checker.warning(
                    "ignored-key",
                    "use_history has no effect outside a loop with conversation: true",
                    checker.key_at(path),
                )
