"""What ``flujo explain`` says about a blueprint, as data: the CLI renders it as text or as JSON.

An ``Explanation`` holds the blueprint's steps in document order, each a ``StepExplanation`` whose
``parts`` are, in the order they are read, labelled notes ("Stops: ...") and groups of nested steps
("Each iteration", "Branch style", "Inside review.yaml"). Everything here is derived from the blueprint
alone (and the configured defaults), never from a model, so the same file always gives the same words.
The JSON form (``to_json``) is a stable machine format: its keys do not change between releases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Note:
    """A labelled sentence under a step: ``Stops``, ``History``, ``Returns``, ..."""

    label: str
    text: str


@dataclass(frozen=True)
class StepGroup:
    """Steps nested in a step (a loop's body, a branch, a map's body, a sub-workflow), with a label."""

    label: str
    steps: tuple[StepExplanation, ...]


Part = Note | StepGroup


@dataclass(frozen=True)
class StepExplanation:
    """One step: its number in reading order (``2.1`` is the first step inside step 2), what it does,
    and its notes and nested steps."""

    number: str
    name: str
    kind: str
    line: int | None
    does: str
    parts: tuple[Part, ...] = ()


@dataclass(frozen=True)
class AgentTools:
    """The tools an agent's model may call: the names it lists, those that ask the person before each call,
    the most calls in one step, how its model is told of them (``native`` or ``json``), and all that in words."""

    names: tuple[str, ...]
    ask: tuple[str, ...]
    max_tool_calls: int
    mode: str
    words: str
    # MCP servers whose tools ask only when the server marks them destructive (approve left unset): which do
    # is known once the server runs, so explain names the server.
    may_ask: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "ask": list(self.ask),
            "max_tool_calls": self.max_tool_calls,
            "mode": self.mode,
            "words": self.words,
        }


@dataclass(frozen=True)
class AgentSummary:
    """An agent defined under ``agents:``: what it is, which steps use it, and the tools it may call."""

    name: str
    what: str
    offline: bool
    used_by: tuple[str, ...]
    tools: AgentTools | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"name", "what", "offline", "used_by"}``, and ``"tools"`` for an agent that has tools."""
        data: dict[str, Any] = {
            "name": self.name,
            "what": self.what,
            "offline": self.offline,
            "used_by": list(self.used_by),
        }
        if self.tools is not None:
            data["tools"] = self.tools.to_json()
        return data


@dataclass(frozen=True)
class Explanation:
    """The whole blueprint in plain words."""

    file: str
    name: str
    overview: str
    agents: tuple[AgentSummary, ...]
    steps: tuple[StepExplanation, ...]
    human: tuple[str, ...]
    returns: str
    cost: tuple[str, ...]
    warnings: int = 0

    def to_json(self) -> dict[str, Any]:
        """``{"file", "name", "overview", "agents", "steps", "human", "returns", "cost", "warnings"}``."""
        return {
            "file": self.file,
            "name": self.name,
            "overview": self.overview,
            "agents": [agent.to_json() for agent in self.agents],
            "steps": [_step_json(step) for step in self.steps],
            "human": list(self.human),
            "returns": self.returns,
            "cost": list(self.cost),
            "warnings": self.warnings,
        }


def _step_json(step: StepExplanation) -> dict[str, Any]:
    return {
        "number": step.number,
        "name": step.name,
        "kind": step.kind,
        "line": step.line,
        "does": step.does,
        "parts": [_part_json(part) for part in step.parts],
    }


def _part_json(part: Part) -> dict[str, Any]:
    if isinstance(part, Note):
        return {"label": part.label, "text": part.text}
    return {"label": part.label, "steps": [_step_json(step) for step in part.steps]}
