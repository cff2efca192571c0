"""The agents a blueprint file defines, read quickly for shell completion (``--simulate-user agents.NAME``).

A best-effort read with PyYAML alone, not the blueprint loader (which validates everything and costs a good
part of a second): the keys of the top-level ``agents:`` mapping, or, in the ensemble file format (whose
``agents:`` is a list of participants), the keys of ``personas:``, which ``blueprints.reading.ensemble_file``
makes the blueprint's agents. A file that is missing, unreadable or not such YAML has no agents here; ``flujo
run`` says what is wrong with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser when PyYAML was built with it


def agent_names(path: Path) -> list[tuple[str, str]]:
    """``(name, model)`` of each agent ``--simulate-user`` may name in the blueprint at ``path``, in file order
    (``model`` is the agent's model, or ``python`` / ``command`` for a script agent)."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    if not isinstance(data, dict):
        return []
    agents = data.get("agents")
    if isinstance(agents, list):  # the ensemble file format: its personas are the blueprint's agents
        agents = data.get("personas")
    if not isinstance(agents, dict):
        return []
    return [(str(name), _model(spec)) for name, spec in agents.items()]


def _model(spec: object) -> str:
    """What runs the agent: its model, else ``python`` or ``command`` (a script agent), else nothing."""
    if not isinstance(spec, dict):
        return ""
    model = spec.get("model")
    if isinstance(model, str):
        return model
    return next((kind for kind in ("python", "command") if kind in spec), "")
