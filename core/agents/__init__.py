"""Agents: the model providers, the offline doubles, script agents and builtins, and ``build_agent``.

    from core.agents import build_agent
    agent = build_agent(AgentSpec(name="clarifier", model="openai:gpt-4o-mini"), settings)
    reply = await agent.run(AgentCall(input="hello", step="clarify"))

Every agent implements ``core.ports.Agent``; ``core.agents.base.BaseAgent`` holds the protocol's defaults, so each
class states only what differs. The HTTP provider classes (and ``Backoff``) are loaded on
first access, so ``import core.agents`` does not import httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.agents.base import shareable_between_runs
from core.agents.factory import build_agent
from core.agents.offline import EchoAgent, ScriptedAgent
from core.agents.script import CommandAgent, PassthroughAgent, PythonAgent, StringifyAgent, program_problem
from core.agents.spec import AgentSpec
from core.front_door import lazy_exports

if TYPE_CHECKING:
    from core.agents.anthropic_chat import AnthropicChatAgent
    from core.agents.http import Backoff
    from core.agents.openai_chat import OpenAIChatAgent

__all__ = [
    "AgentSpec",
    "AnthropicChatAgent",
    "Backoff",
    "CommandAgent",
    "EchoAgent",
    "OpenAIChatAgent",
    "PassthroughAgent",
    "PythonAgent",
    "ScriptedAgent",
    "StringifyAgent",
    "build_agent",
    "program_problem",
    "shareable_between_runs",
]

_LAZY = {
    "AnthropicChatAgent": "core.agents.anthropic_chat",
    "Backoff": "core.agents.http",
    "OpenAIChatAgent": "core.agents.openai_chat",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
