"""``BaseAgent``: the defaults of the ``core.ports.Agent`` protocol, so that each agent states only what differs.

The defaults are those of an agent that is not a model and costs nothing: no provider serves it, it takes the
conversation's history, its prompt is unbounded and is the input as one user message, it caps no reply, and a
replayed call changes nothing. A subclass states its ``label`` and ``run`` (both abstract) and overrides the
rest where it differs: a constant as a class attribute (``is_model = True``), a value per agent as an
attribute set in ``__init__`` (declared on the class with its default, so it shadows the property), a value
worked out when read as a property.

The protocol stays the contract: an agent need not subclass this (``core.ports.Agent`` is structural), and
code that takes an agent types it as ``Agent``, never as ``BaseAgent``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from core.model.calls import AgentCall, AgentReply, ChatMessage
from core.ports import Agent

# ``json.dumps(value, ensure_ascii=False, default=str)``'s encoder, made once (json.dumps with arguments makes
# one per call: every agent call with a structured input).
_INPUT_JSON = json.JSONEncoder(ensure_ascii=False, default=str).encode


def input_text(value: Any) -> str:
    """An input as message text: a string as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return _INPUT_JSON(value)


class BaseAgent(ABC):
    """The defaults of ``core.ports.Agent`` (see the module's docstring); ``label`` and ``run`` are the
    subclass's."""

    keeps_run_state: ClassVar[bool] = False
    """Whether the agent keeps, from call to call, state that belongs to one run (a scripted model takes its
    replies in turn, each run from the first): such an agent is built for each run, never shared between runs
    (``flujo worker`` shares a compiled pipeline between the runs of a blueprint only when none of its agents
    keeps run state: ``flujo_cli.blueprint_cache``)."""

    @property
    @abstractmethod
    def label(self) -> str: ...

    @property
    def is_model(self) -> bool:
        return False

    @property
    def provider_served(self) -> bool:
        return False

    @property
    def takes_history(self) -> bool:
        return True

    @property
    def prompt_budget(self) -> int | None:
        return None

    @property
    def model_name(self) -> str | None:
        return None

    @property
    def reply_cap(self) -> int | None:
        return None

    def estimate_cost_usd(self, prompt_tokens: int) -> float | None:
        return 0.0

    def prompt(self, call: AgentCall) -> list[ChatMessage]:
        return [ChatMessage("user", input_text(call.input))]

    @abstractmethod
    async def run(self, call: AgentCall) -> AgentReply: ...

    def replayed(self) -> None:
        return None


def shareable_between_runs(agent: Agent) -> bool:
    """Whether ``agent`` may serve the calls of several runs: one of flujo's (a ``BaseAgent``) that keeps no run
    state (``keeps_run_state``). Any other agent is not known to keep none."""
    return isinstance(agent, BaseAgent) and not agent.keeps_run_state
