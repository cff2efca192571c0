"""The settings' ``default_model`` for the agents that name no model: an agent under ``agents:`` (in a blueprint,
or a persona of an ensemble file) that sets none of ``model:``, ``python:`` and ``command:`` runs it.

``with_default_model`` puts it into a file's data after it is read and before ``--model`` applies
(``blueprints.checking.analysis``), so the checks, the compiler and ``flujo explain`` see the agent as it will
run, and ``--model agents.NAME=...`` or ``'*=...'`` still beat it. The names of the agents that took it are
kept (``FileAnalysis.defaulted``, ``Blueprint.defaulted``) so that ``flujo explain`` can say where their
model came from. Without a ``default_model``, the data is unchanged and such an agent is an error at its line
(``blueprints.checking.checks.agents``).
"""

from __future__ import annotations

from typing import Any

_KINDS = ("model", "python", "command")


def with_default_model(data: Any, model: str | None) -> tuple[Any, frozenset[str]]:
    """``data`` (a blueprint file as read) with ``model`` given to each agent that names none of model, python
    and command, and the names of those agents; ``data`` itself is left as it is. Unchanged (and no names)
    when ``model`` is None or ``data`` has no mapping of agents (the schema reports that)."""
    if model is None or not isinstance(data, dict) or not isinstance(data.get("agents"), dict):
        return data, frozenset()
    agents: dict[Any, Any] = data["agents"]
    taken = {
        name: {**agent, "model": model}
        for name, agent in agents.items()
        if isinstance(agent, dict) and all(agent.get(kind) is None for kind in _KINDS)
    }
    if not taken:
        return data, frozenset()
    return {**data, "agents": {**agents, **taken}}, frozenset(str(name) for name in taken)
