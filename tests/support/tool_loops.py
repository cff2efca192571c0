"""In-test tools for the tests and the benchmark of agent steps that use tools (``core.policies.tool_loop``),
built with the Python API.

``FunctionTool`` is a tool whose result is a function of its arguments and which keeps its calls (a side
effect the test can count); ``with_tools`` gives tools to an agent step of a pipeline compiled from a
blueprint (the step found by name, also inside loops), for tests that need a blueprint's other keys
(``conversation: true``, ``output: {text: conversation_history}``) around a tool-using step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from core import AgentStep, LoopStep, Pipeline, Step
from core.model.tools import Approve, ToolCallContext, ToolDef, ToolOutcome
from core.policies.tool_loop import result_text
from core.ports import ToolSessions
from core.steps.kinds import ToolUse

ANY_OBJECT: Mapping[str, Any] = {"type": "object"}


class FunctionTool:
    """The tool ``name``: its result is ``result(arguments)``; ``calls`` keeps the arguments of each call,
    with the attempt it was (``ToolCallContext.attempt``)."""

    def __init__(
        self,
        name: str,
        result: Callable[[Mapping[str, Any]], Any],
        *,
        schema: Mapping[str, Any] = ANY_OBJECT,
        approve: Approve = "never",
    ) -> None:
        self._name = name
        self._result = result
        self._schema = schema
        self._approve: Approve = approve
        self.calls: list[tuple[dict[str, Any], int]] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def approve(self) -> Approve:
        return self._approve

    async def definition(self, sessions: ToolSessions) -> ToolDef:
        return ToolDef(self._name, f"The {self._name} tool of a test", self._schema)

    async def call(self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions) -> ToolOutcome:
        self.calls.append((dict(arguments), where.attempt))
        value = self._result(arguments)
        return ToolOutcome(result_text(value), value)


def with_tools(pipeline: Pipeline, step: str, use: ToolUse) -> Pipeline:
    """``pipeline`` with the agent step named ``step`` (at the top or in a loop's body) given ``use``."""

    def given(steps: tuple[Step, ...]) -> tuple[Step, ...]:
        changed: list[Step] = []
        for each in steps:
            if isinstance(each, AgentStep) and each.name == step:
                each = dataclasses.replace(each, tools=use)
            elif isinstance(each, LoopStep):
                each = dataclasses.replace(each, body=given(each.body))
            changed.append(each)
        return tuple(changed)

    found = given(pipeline.steps)
    assert found != pipeline.steps, f"no agent step named {step!r}"
    return dataclasses.replace(pipeline, steps=found)
