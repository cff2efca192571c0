"""The ensemble file format (a list of agents), read as a blueprint with one ``kind: ensemble`` step.

A file whose top level has ``agents`` as a list (and no ``version``/``steps``) is in that format::

    name: iterative-analysis
    agents:
      - name: data_extractor
        script: primitives/extract.py          # or model_profile: NAME (a [profiles.NAME] in flujo.toml)
        prompt: "..."                          # the system prompt of a model agent
        config: {temperature: 0.2}
        dependencies:
          - agent_name: llm_analyzer
            condition: "context.get('needs_clarification', False)"
            max_executions: 3
            requires_all: true
        conversation: {max_turns: 2, state_key: extracted, triggers_conversation: false}
    conversation_limits: {max_total_turns: 15, max_agent_executions: {x: 3}, timeout_seconds: 600}
    personas:                                  # agents that play a person: answered_by: agents.NAME
      ada: {model: scripted, system_prompt: "You are Ada ...", replies: ["..."]}

It is translated key by key into our dialect (``dependencies`` → ``depends_on`` with ``participant``,
``conversation.*`` onto the participant, ``conversation_limits.*`` onto the ``ensemble:`` block,
``personas`` to the blueprint's ``agents:`` mapping, so ``answered_by: agents.NAME`` on an agent replaces it
with that simulated person, and ``--simulate-user agents.NAME`` finds it) and the position index is
translated with it, so every finding still points at the line and column of the file as written.
``requires_all: false`` on any dependency makes the participant wait for any one of them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from blueprints.reading.findings import Finding
from blueprints.reading.positions import Path, PositionIndex
from blueprints.reading.suggestions import did_you_mean

# The keys of the file as written (our dialect's own participant keys are accepted too).
AGENT_KEYS = (
    "name", "type", "script", "model_profile", "prompt", "config", "dependencies", "conversation", "answered_by",
)  # fmt: skip
CONVERSATION_KEYS = ("max_turns", "state_key", "triggers_conversation")
DEPENDENCY_KEYS = ("agent_name", "condition", "max_executions", "requires_all")
TOP_KEYS = ("name", "agents", "conversation_limits", "personas", "limits")
_UNKNOWN = re.compile(
    r"unknown key '(?P<key>[^']*)' (?P<where>in participant \S+|in a participant|in dependency|at the top level)"
)

_STEP: Path = ("steps", 0)
_ENSEMBLE: Path = (*_STEP, "ensemble")
_PARTICIPANTS: Path = (*_ENSEMBLE, "participants")


def is_ensemble_file(data: Any) -> bool:
    """Whether ``data`` (a parsed YAML file) is in the ensemble file format."""
    return (
        isinstance(data, dict)
        and "version" not in data
        and "steps" not in data
        and isinstance(data.get("agents"), list)
    )


def _participant(agent: Any) -> Any:
    if not isinstance(agent, dict):
        return agent
    result: dict[str, Any] = {}
    for key, value in agent.items():
        if key == "dependencies" and isinstance(value, list):
            result["depends_on"] = [_dependency(dep, result) for dep in value]
        elif key == "conversation" and isinstance(value, dict):
            result.update(value)
        else:
            result[key] = value
    return result


def _dependency(dep: Any, participant: dict[str, Any]) -> Any:
    if not isinstance(dep, dict):
        return dep
    result: dict[str, Any] = {}
    for key, value in dep.items():
        if key == "agent_name":
            result["participant"] = value
        elif key == "requires_all":
            if value is False or "requires_all" not in participant:
                participant["requires_all"] = value
        else:
            result[key] = value
    return result


def translate(data: dict[str, Any]) -> dict[str, Any]:
    """The blueprint (our dialect) that an ensemble file means."""
    block: dict[str, Any] = {"participants": [_participant(agent) for agent in data["agents"]]}
    limits = data.get("conversation_limits")
    if isinstance(limits, dict):
        block.update(limits)
    elif "conversation_limits" in data:
        block["conversation_limits"] = limits  # not a mapping: reported as an unknown key, at its place
    name = data.get("name")
    step = {"kind": "ensemble", "name": name if isinstance(name, str) and name else "ensemble", "ensemble": block}
    translated: dict[str, Any] = {"version": "0.1", "steps": [step]}
    if "name" in data:
        translated["name"] = name
    if "personas" in data:
        translated["agents"] = data["personas"]
    for key, value in data.items():  # anything else stays at the top level, where it is reported
        if key not in ("name", "agents", "conversation_limits", "personas"):
            translated[key] = value
    return translated


def _path(path: Path) -> Path:
    """Where the value at ``path`` of the file as written is in the translated blueprint."""
    if not path or path[0] not in ("agents", "conversation_limits", "personas"):
        return path
    if path[0] == "personas":
        return ("agents", *path[1:])
    if path[0] == "conversation_limits":
        return (*_ENSEMBLE, *path[1:])
    if len(path) < 3:
        return (*_PARTICIPANTS, *path[1:])
    number, key, rest = path[1], path[2], path[3:]
    if key == "conversation":
        return (*_PARTICIPANTS, number, *rest)
    if key == "dependencies":
        if len(rest) >= 2 and rest[1] == "agent_name":
            return (*_PARTICIPANTS, number, "depends_on", rest[0], "participant", *rest[2:])
        if len(rest) >= 2 and rest[1] == "requires_all":
            return (*_PARTICIPANTS, number, "requires_all", *rest[2:])
        return (*_PARTICIPANTS, number, "depends_on", *rest)
    return (*_PARTICIPANTS, number, key, *rest)


def translate_index(index: PositionIndex) -> PositionIndex:
    """``index`` with every path moved to where ``translate`` puts its value; the translated blueprint's
    own containers (its step, the ``ensemble:`` block) are placed where the file's ``agents`` are."""
    moved = PositionIndex(index.file, index.lines)
    for path, place in index.items():
        moved.add(_path(path), place)
        if path == ("name",):
            moved.add((*_STEP, "name"), place)
    agents = index.place(("agents",))
    if agents is not None:
        for path in (("steps",), _STEP, (*_STEP, "kind"), _ENSEMBLE):
            moved.add(path, agents)
    return moved


def reword(findings: list[Finding]) -> list[Finding]:
    """``findings`` of an ensemble file with its own key names: an unknown key of an agent or at the top
    level is matched against the keys of the file format (did-you-mean, allowed keys)."""
    reworded = []
    for finding in findings:
        match = _UNKNOWN.match(finding.message) if finding.code == "unknown-key" else None
        if finding.code == "missing-field" and finding.message.startswith("missing 'participant' in dependency"):
            message = finding.message.replace("'participant'", "'agent_name'", 1).replace(" of step ", " of agent ")
            finding = dataclasses.replace(finding, message=message, hint="add agent_name: <the agent it waits for>")
        if match is not None:
            keys: tuple[str, ...]
            where, key = match.group("where").replace("participant", "agent"), match.group("key")
            if where == "at the top level":
                keys, hint = TOP_KEYS, ", ".join(TOP_KEYS)
            elif where == "in dependency":
                keys, hint = DEPENDENCY_KEYS, ", ".join(DEPENDENCY_KEYS)
            else:  # a key of the agent or of its conversation block (both end up on the participant)
                keys = (*AGENT_KEYS, *CONVERSATION_KEYS)
                hint = f"{', '.join(AGENT_KEYS)}; in conversation: {', '.join(CONVERSATION_KEYS)}"
            finding = dataclasses.replace(
                finding, message=f"unknown key {key!r} {where}{did_you_mean(key, keys)}", hint=f"allowed here: {hint}"
            )
        reworded.append(finding)
    return reworded
