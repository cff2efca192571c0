"""Exit and branch functions compiled from a blueprint: ScopeFunctions over the run's scope mapping.

The scope mapping is what the engine passes (``previous_step``, ``context``, ``steps``, ``iteration``,
``initial_prompt``). Expressions are evaluated by ``core.templates.Expression`` (sandboxed, never
``eval``); ``module:function`` callables are called as ``fn(previous_step, context)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from core.templates import Expression

AGENT_FINISHED = (
    "context.scratchpad.last_agent_command.action == 'finish'"
    " or (previous_step is mapping and previous_step.action == 'finish')"
)


@dataclass(frozen=True)
class ExpressionValue:
    """The value of an expression (a conditional's branch key)."""

    expression: Expression

    def __call__(self, scope: Mapping[str, Any]) -> Any:
        return self.expression.evaluate(scope)


@dataclass(frozen=True)
class ExpressionTest:
    """Whether an expression holds (a loop's exit)."""

    expression: Expression

    def __call__(self, scope: Mapping[str, Any]) -> bool:
        return bool(self.expression.evaluate(scope))


@dataclass(frozen=True)
class CallableValue:
    """``fn(previous_step, context)`` for a ``module:function`` condition."""

    function: Callable[[Any, Any], Any]
    source: str

    def __call__(self, scope: Mapping[str, Any]) -> Any:
        return self.function(scope.get("previous_step"), scope.get("context"))


@dataclass(frozen=True)
class CallableTest:
    """``bool(fn(previous_step, context))`` for a ``module:function`` exit condition."""

    function: Callable[[Any, Any], Any]
    source: str

    def __call__(self, scope: Mapping[str, Any]) -> bool:
        return bool(self.function(scope.get("previous_step"), scope.get("context")))


def agent_finished() -> ExpressionTest:
    """``stop_when: agent_finished``: the iteration's last agent command is ``{"action": "finish"}``."""
    return ExpressionTest(Expression(AGENT_FINISHED))
