"""The tools one agent step offers its model: its tools, with each ``ToolSource`` (an MCP server) replaced by
the tools it lists, each name once.

A source's listing comes from the journal when the step recorded one (a resumed step is told the same tools
as before, even if the server has changed since), else from the source itself; the tool loop records what it
used with the step's first model turn (``core.policies.tool_loop``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.model.errors import ConfigError
from core.model.tools import ToolDef
from core.ports import Tool, ToolSessions, ToolSource


@dataclass(frozen=True)
class Offered:
    """What a step's model is told of (``definitions``, in order), the tool behind each name, and the entries
    of each source's listing those tools came from, by ``ToolSource.source`` (empty when the step has no
    source): what the journal keeps."""

    definitions: list[ToolDef]
    tools: dict[str, Tool]
    listed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


async def offered_tools(
    items: Sequence[Tool | ToolSource],
    sessions: ToolSessions,
    run_id: str,
    recorded: Mapping[str, Any] | None,
    *,
    who: str,
) -> Offered:
    """The tools ``items`` stand for; ``recorded`` is the listings the step's journal holds (None: none).
    ConfigError when two tools have one name (``who`` is the agent, for the message)."""
    listed: dict[str, list[dict[str, Any]]] = {}
    tools: list[Tool] = []
    for item in items:
        if isinstance(item, ToolSource):
            kept = recorded.get(item.source) if recorded is not None else None
            listing = list(kept) if isinstance(kept, list) else await item.listing(sessions, run_id)
            made = item.tools(listing)
            tools.extend(made)
            # What the journal keeps: the entries of the tools the step offers (a server's others are not needed
            # to make them again), once each when two entries of the blueprint name one server.
            names = {tool.name for tool in made}
            entries = listed.setdefault(item.source, [])
            for entry in listing:
                if entry.get("name") in names and entry not in entries:
                    entries.append(entry)
        else:
            tools.append(item)
    definitions = [await tool.definition(sessions) for tool in tools]
    named: dict[str, Tool] = {}
    for definition, tool in zip(definitions, tools, strict=True):
        if definition.name in named:
            raise ConfigError(
                f"agent {who!r} is given two tools named {definition.name!r}",
                hint="leave one out (an MCP server's include: lists the tools it gives)",
            )
        named[definition.name] = tool
    return Offered(definitions, named, listed)
