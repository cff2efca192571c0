"""Salvaging the parts of a blueprint that validate, so that one ``validate`` pass shows every finding.

When the schema stage refuses a blueprint, the later checks (names, references, templates, ...) still run,
on a mended copy of the data in which each place pydantic refused is changed in the smallest way that
keeps everything else as written:

- an unknown key is dropped (it means nothing, so the rest means what it says);
- a refused value of an optional key is dropped (the key takes its default), the deepest such key
  between the error and the step or agent that holds it;
- a required value that is missing or refused is filled with a neutral one where there is one (a step's
  ``name``, a hitl step's ``message``, the blueprint's ``version``);
- otherwise the innermost step holding the error becomes a plain step of the same name, so the steps
  that refer to it by name still find it, and an agent or a tool becomes an empty one (same reason).

The mended copy is validated again until it validates; each round mends at least one place. Errors in
the sections that define what the rest refers to (``imports``, an ``agents`` or ``tools`` that is not a
mapping, the ``steps`` list itself, a document that is not a mapping) are not mended: nothing is salvaged
and only the schema findings are reported.

A step, agent or tool that was mended is *broken*. The later findings located in it are left out (its schema
error comes first; they may only be echoes of the mending). So are the warnings of the steps nested in
it, which can depend on the mended value (a loop whose ``conversation`` was refused is checked as no
conversation); their errors do not, and are kept.
"""

from __future__ import annotations

import copy
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from blueprints.checking.checks.sites import walk
from blueprints.checking.validation import UNKNOWN_KEY, Resolved, resolve
from blueprints.reading.findings import Finding
from blueprints.reading.positions import Path, Place, PositionIndex
from blueprints.schema import BlueprintModel, HitlStepModel, StepModelBase
from blueprints.schema.base import StrictModel
from blueprints.schema.validating import fields_of, validate_blueprint

# Each round mends at least one place, and a blueprint has a bounded number of them (the YAML bounds);
# this only guards against a mending that would not converge.
_MAX_ROUNDS = 100
# Top-level sections whose names the rest refers to: dropping them would turn every reference into an
# error of its own.
_DEFINING = ("imports", "agents", "tools")
# The sections of named entries: an entry refused whole becomes an empty one of that name.
_NAMED = ("agents", "tools")


_GONE = object()  # what ``_Mender.node`` returns for a place no longer in the data


class _Unsalvageable(Exception):
    """An error in a part the rest depends on: nothing is salvaged."""


@dataclass(frozen=True)
class Salvage:
    """The model of the mended blueprint and the steps, agents and tools (by data path) that were mended."""

    model: BlueprintModel
    broken: frozenset[Path]

    def later_findings(self, findings: Sequence[Finding], index: PositionIndex) -> list[Finding]:
        """``findings`` of the later checks on ``model``, without those the mending may have caused."""
        if not self.broken:
            return list(findings)
        units = _Units(self.model, index)
        kept = []
        for finding in findings:
            unit = units.innermost(finding)
            if unit in self.broken:
                continue
            if finding.severity != "error" and unit is not None and any(unit[: len(b)] == b for b in self.broken):
                continue
            kept.append(finding)
        return kept


def salvage(data: Any, error: ValidationError, index: PositionIndex) -> Salvage | None:
    """The parts of ``data`` that validate, mended as the module says; None when nothing can be salvaged."""
    mender = _Mender(copy.deepcopy(data), index)
    for _ in range(_MAX_ROUNDS):
        mender.replaced.clear()
        changed = False
        try:
            for details in error.errors(include_url=False):
                changed |= mender.mend(resolve(tuple(details["loc"]), mender.data), details["type"])
        except _Unsalvageable:
            return None
        if not changed:
            return None
        try:
            model = validate_blueprint(mender.data)
        except ValidationError as exc:
            error = exc
            continue
        return Salvage(model, frozenset(mender.broken))
    return None


class _Mender:
    def __init__(self, data: Any, index: PositionIndex) -> None:
        self.data = data
        self.index = index
        self.broken: set[Path] = set()
        self.replaced: set[Path] = set()  # units replaced whole this round: their other errors are gone

    def mend(self, resolved: Resolved, kind: str) -> bool:
        """Mend the place of one error; whether anything changed."""
        path = resolved.path
        if not isinstance(self.data, dict) or not path:
            raise _Unsalvageable
        if any(path[: len(r)] == r for r in self.replaced) or self._node(path[:-1]) is _GONE:
            return False  # mended already this round, with the place that held it
        unit = _unit(resolved)
        if unit is None and path[0] in _DEFINING and (path[0] == "imports" or len(path) == 1):
            raise _Unsalvageable
        if unit is not None:
            self.broken.add(unit)
        if kind == UNKNOWN_KEY:
            return self._delete(path)
        inner = len(unit) if unit is not None else 0
        for end in range(len(path), inner, -1):
            prefix, owner = path[:end], resolved.owners[end - 1]
            if _optional(owner, prefix[-1]) and self._delete(prefix):
                return True
            filler = self._filler(owner, prefix[-1], unit)
            if filler is not None and self._set(prefix, filler):
                return True
        if unit is None:
            raise _Unsalvageable
        self.replaced.add(unit)
        if unit[0] in _NAMED:
            return self._set(unit, {})
        node = self._node(unit)
        name = node.get("name") if isinstance(node, dict) else None
        return self._set(unit, {"name": name if isinstance(name, str) and name else self._placeholder(unit)})

    def _filler(self, owner: type[StrictModel] | None, key: str | int, unit: Path | None) -> Any:
        if owner is BlueprintModel and key == "version":
            return "0.1"
        if owner is HitlStepModel and key == "message":
            return ""
        if owner is not None and issubclass(owner, StepModelBase) and key == "name" and unit is not None:
            return self._placeholder(unit)
        return None

    def _placeholder(self, unit: Path) -> str:
        return f"<unnamed step at line {self.index.nearest(unit)[1].line}>"

    def _node(self, path: Path) -> Any:
        node = self.data
        for elem in path:
            in_list = isinstance(node, list) and isinstance(elem, int) and 0 <= elem < len(node)
            if not (in_list or (isinstance(node, dict) and elem in node)):
                return _GONE
            node = node[elem]
        return node

    def _delete(self, path: Path) -> bool:
        parent = self._node(path[:-1])
        if isinstance(parent, dict) and path[-1] in parent:
            del parent[path[-1]]
            return True
        return False

    def _set(self, path: Path, value: Any) -> bool:
        parent = self._node(path[:-1])
        last = path[-1]
        if isinstance(parent, dict) and isinstance(last, str):
            parent[last] = value
            return True
        if isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
            parent[last] = value
            return True
        return False


def _unit(resolved: Resolved) -> Path | None:
    """The innermost step, else the agent or tool, that holds the error's place; None at the top level."""
    if resolved.steps:
        return resolved.steps[-1]
    path = resolved.path
    if len(path) >= 2 and path[0] in _NAMED:
        return path[:2]
    return None


def _optional(owner: type[StrictModel] | None, key: str | int) -> bool:
    """Whether the key ``key`` of a mapping owned by ``owner`` can be left out (a list item cannot: the
    positions of the items after it would change)."""
    if not isinstance(key, str):
        return False
    if owner is None:
        return True  # a key of a free mapping (a parallel's branches, max_agent_executions)
    field = fields_of(owner).get(key)
    return field is None or not field.required


def _start(place: Place) -> tuple[int, int]:
    if place.key_line is not None and place.key_column is not None:
        return (place.key_line, place.key_column)
    return (place.line, place.column)


class _Units:
    """The span in the file of every step, agent and tool: from its start to the start of the next thing in
    the file that is not inside it."""

    def __init__(self, model: BlueprintModel, index: PositionIndex) -> None:
        self.file = index.file
        entries = sorted(((_start(place), path) for path, place in index.items()), key=lambda e: e[0])
        starts = [at for at, _ in entries]
        units: list[Path] = [site.path for site in walk(model.steps, ("steps",))]
        units += [("agents", name) for name in model.agents]
        units += [("tools", name) for name in model.tools]
        self.spans: list[tuple[Path, tuple[int, int], tuple[int, int] | None]] = []
        for unit in units:
            place = index.place(unit)
            if place is None:
                continue
            begin = _start(place)
            end = next((at for at, path in entries[bisect_right(starts, begin) :] if path[: len(unit)] != unit), None)
            self.spans.append((unit, begin, end))

    def innermost(self, finding: Finding) -> Path | None:
        position = finding.position
        if position is None or position.file != self.file:
            return None
        at = (position.line, position.column)
        holding = [unit for unit, begin, end in self.spans if begin <= at and (end is None or at < end)]
        return max(holding, key=len, default=None)
