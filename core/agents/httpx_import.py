"""httpx, imported without its command line.

``import httpx`` imports ``httpx._main`` (the ``httpx`` command: click, rich's progress bars and syntax
highlighting, pygments) whenever those are installed, as they are wherever Typer is. That doubled the cost of
importing httpx in every run that calls a model (measured: 112–124 ms against 55–68 ms, and 5 MB of
memory). flujo never runs httpx's command line, so it registers a stand-in for that module before httpx is
first imported; the ``httpx`` command itself, a process of its own, is untouched. When httpx was imported
already (by a Python agent, or the MCP SDK), it is left as it is.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import NoReturn


def _no_command_line() -> NoReturn:
    raise RuntimeError("httpx's command line is not loaded in a flujo process: run the httpx command instead")


if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
    _stand_in = ModuleType("httpx._main", "httpx's command line, not loaded by flujo (core/agents/httpx_import.py)")
    _stand_in.main = _no_command_line  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = _stand_in

import httpx as httpx  # noqa: E402 - after the stand-in; re-exported for core.agents.http
