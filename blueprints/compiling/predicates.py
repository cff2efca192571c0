"""Exit and branch functions compiled from a blueprint: ScopeFunctions over the run's scope mapping.

The scope mapping is what the engine passes (``previous_step``, ``context``, ``steps``, ``iteration``,
``initial_prompt``). Expressions are evaluated by ``core.text.templates.Expression`` (sandboxed, never
``eval``); ``module:function`` callables are called as ``fn(previous_step, context)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from core import Expression, LazyView

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


@dataclass(frozen=True)
class AgentFinishedTest(ExpressionTest):
    """``stop_when: agent_finished`` (``AGENT_FINISHED``), evaluated on every iteration: read directly when
    the values it reads are run data (dicts, views, texts, numbers, lists), as the sandbox reads them (a key
    of a dict or a view, nothing of anything else: false), and by the expression itself otherwise."""

    def __call__(self, scope: Mapping[str, Any]) -> bool:
        found = _finished(scope) if type(scope) is dict else None
        return super().__call__(scope) if found is None else found


_DATA = (dict, LazyView)
_NOTHING_TO_READ = frozenset({str, int, float, bool, type(None), list})  # "x.action" is undefined on them


def _finished(scope: dict[str, Any]) -> bool | None:
    """``AGENT_FINISHED`` on ``scope``, or None when a value it reads is not plain run data."""
    context: Any = scope.get("context")
    if type(context) not in _DATA or "previous_step" not in scope:
        return None
    pad = context.get("scratchpad")  # a missing key reads as None does: nothing is read of it
    if type(pad) in _DATA:
        said = _says_finish(pad.get("last_agent_command"))
    else:
        said = False if type(pad) in _NOTHING_TO_READ else None
    if said is not False:
        return said
    previous = scope["previous_step"]
    kind = type(previous)
    if kind in _DATA:  # "previous_step is mapping"
        return _says_finish(previous)
    return False if kind in _NOTHING_TO_READ else None


def _says_finish(value: Any) -> bool | None:
    """``value.action == 'finish'`` as the expression reads it; None when ``value`` is not plain run data."""
    kind = type(value)
    if kind in _NOTHING_TO_READ:
        return False
    if kind not in _DATA:
        return None
    action = value.get("action")
    if type(action) in _NOTHING_TO_READ or type(action) in _DATA:
        return bool(action == "finish")
    return None


@functools.cache  # one test for every loop, compiled (a Jinja expression) the first time a loop asks for it
def agent_finished() -> ExpressionTest:
    """``stop_when: agent_finished``: the iteration's last agent command is ``{"action": "finish"}``."""
    return AgentFinishedTest(Expression(AGENT_FINISHED))
