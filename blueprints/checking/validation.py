"""Turning pydantic's ValidationError into findings located at the most precise file:line:col.

pydantic reports each error with a ``loc`` that mixes data keys with union tags (``('steps', 1, 'loop',
'loop', 'max_loops')``: the first ``'loop'`` is the step kind's tag). ``resolve`` walks the schema types and
the data together to drop the tags, giving the data path and the model that owns the last key, so that:
an unknown key is reported at the key (with did-you-mean against that model's keys), a bad value at the
value, a missing key at the mapping that lacks it. Messages are rephrased plainly; pydantic's "Input
should be" and documentation links never reach the user.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import Tag, ValidationError
from pydantic_core import ErrorDetails

from blueprints.checking.value_words import expectation, show
from blueprints.reading.findings import Finding, FindingCode
from blueprints.reading.positions import Path, PositionIndex
from blueprints.reading.suggestions import did_you_mean, one_of
from blueprints.schema import (
    STEP_KINDS,
    AgentModel,
    AgentStepModel,
    BlueprintModel,
    McpModel,
    ParticipantModel,
    StepModelBase,
    ToolModel,
)
from blueprints.schema.base import StrictModel
from blueprints.schema.validating import StepModel, fields_of
from core import SourcePosition

# Keys that only make sense on another kind of step: a plain step holding one probably lacks ``kind``.
_KIND_OF_KEY = {
    "loop": "loop",
    "map": "map",
    "branches": "parallel or conditional",
    "parallel": "parallel",
    "message": "hitl",
    "condition_expression": "conditional",
    "condition": "conditional",
}


@dataclass(frozen=True)
class Resolved:
    """Where a pydantic error's ``loc`` points in the data: the data ``path`` (union tags dropped), the
    model owning each of its keys (``owners``, None for a list index or a free mapping's key), the one
    owning the last key (``owner``), the value there when it is ``present``, and the paths of the steps
    the path passes through (``steps``, outermost first)."""

    path: Path
    owner: type[StrictModel] | None
    present: bool
    node: Any
    owners: tuple[type[StrictModel] | None, ...] = ()
    steps: tuple[Path, ...] = ()


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional layers (a union with None and one other type)."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
            continue
        if get_origin(tp) in (Union, types.UnionType):
            members = [m for m in get_args(tp) if m is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
        return tp


def _select_member(tp: Any, elem: str | int) -> Any | None:
    """The member of union ``tp`` that ``elem`` (a union tag in a loc) names, if any."""
    if get_origin(tp) not in (Union, types.UnionType):
        return None
    for member in get_args(tp):
        # typing objects, not ours: an Annotated member carries __metadata__, a class its __name__
        tags = [m.tag for m in getattr(member, "__metadata__", ()) if isinstance(m, Tag)]
        inner = _unwrap(member)
        if elem in tags or getattr(inner, "__name__", None) == elem:
            return inner
    return None


def _child_type(tp: Any, elem: str | int) -> Any | None:
    if isinstance(tp, type) and issubclass(tp, StrictModel):
        field = fields_of(tp).get(str(elem))
        return None if field is None else field.annotation
    origin = get_origin(tp)
    if origin in (list, tuple) and get_args(tp):
        return get_args(tp)[0]
    if origin is dict and get_args(tp):
        return get_args(tp)[1]
    return None


_ABSENT = object()

# pydantic's error type for a key a model's mapping should not have: a model is a dataclass, so it is an
# argument its constructor does not take (a pydantic model's was "extra_forbidden"). A key it lacks is "missing".
UNKNOWN_KEY = "unexpected_keyword_argument"


def _child(node: Any, elem: str | int) -> Any:
    """``node[elem]`` for a mapping key or a list index; ``_ABSENT`` when there is no such child."""
    if isinstance(node, dict):
        return node.get(elem, _ABSENT)
    if isinstance(node, list) and isinstance(elem, int) and 0 <= elem < len(node):
        return node[elem]
    return _ABSENT


def resolve(loc: tuple[str | int, ...], data: Any) -> Resolved:
    """The data path, and the models along it, of a pydantic error's ``loc`` against ``data``."""
    tp: Any = BlueprintModel
    node = data
    present = True
    path: list[str | int] = []
    owners: list[type[StrictModel] | None] = []
    steps: list[Path] = []
    owner: type[StrictModel] | None = None
    for elem in loc:
        tp = _unwrap(tp)
        member = _select_member(tp, elem)
        if member is not None:  # a union tag: selects the type, addresses no data
            tp = member
            continue
        owner = tp if isinstance(tp, type) and issubclass(tp, StrictModel) else None
        tp = _child_type(tp, elem)
        path.append(elem)
        owners.append(owner)
        if tp is StepModel:
            steps.append(tuple(path))
        if present:
            node = _child(node, elem)
            present = node is not _ABSENT
    return Resolved(tuple(path), owner, present, node if present else None, tuple(owners), tuple(steps))


def _node_at(data: Any, path: Path) -> Any:
    node = data
    for elem in path:
        node = _child(node, elem)
        if node is _ABSENT:
            return None
    return node


def enclosing_step(data: Any, path: Path) -> str | None:
    """The name of the innermost step whose mapping contains ``path`` (or is at ``path``)."""
    for end in range(len(path), 0, -1):
        if isinstance(path[end - 1], int):
            node = _node_at(data, path[:end])
            if isinstance(node, dict) and isinstance(node.get("name"), str):
                return str(node["name"])
    return None


def _where(owner: type[StrictModel] | None, path: Path, data: Any) -> str:
    step = enclosing_step(data, path[:-1])
    if owner is None:
        return ""
    if issubclass(owner, StepModelBase):
        return f" in step {step!r}" if step else " in a step"
    if owner is AgentModel and len(path) >= 2:
        return f" in agent {path[1]!r}"
    if owner is ToolModel and len(path) >= 2:
        return f" in tool {path[1]!r}"
    if owner is McpModel and len(path) >= 2:
        return f" in the mcp server of tool {path[1]!r}"
    if owner is BlueprintModel:
        return " at the top level"
    if owner is ParticipantModel:
        node = _node_at(data, path[:-1])
        name = node.get("name") if isinstance(node, dict) else None
        return f" in participant {name!r}" if isinstance(name, str) else " in a participant"
    return f" in {owner.label}" + (f" of step {step!r}" if step else "")


def _field_label(path: Path) -> str:
    if not path:
        return "the blueprint"
    last = path[-1]
    if isinstance(last, int):
        return f"{path[-2]}[{last}]" if len(path) >= 2 else f"item {last}"
    return str(last)


class _Translator:
    def __init__(self, data: Any, index: PositionIndex) -> None:
        self.data = data
        self.index = index

    def finding(
        self, code: FindingCode, message: str, position: SourcePosition | None, hint: str | None = None
    ) -> Finding:
        return Finding("error", message, position, hint, code, self.index.excerpt(position), self.index.file)

    def value_position(self, path: Path) -> SourcePosition:
        return self.index.value(path) or self.index.nearest(path)[1]

    def translate(self, error: ErrorDetails) -> Finding:
        resolved = resolve(tuple(error["loc"]), self.data)
        path, kind = resolved.path, error["type"]
        ctx: dict[str, Any] = dict(error.get("ctx") or {})
        if kind == UNKNOWN_KEY:
            return self.unknown_key(resolved)
        if kind == "missing":
            return self.missing(resolved)
        if kind == "bad_shape" and self.is_step_path(path):
            return self.bad_step(path, error["input"])
        label = _field_label(path)
        value = error["input"]
        if kind == "literal_error":
            options = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
            suggestion = did_you_mean(value, options) if isinstance(value, str) else ""
            return self.finding(
                "bad-value",
                f"{label}: unknown value {show(value)}{suggestion}",
                self.value_position(path),
                f"use {one_of(options)}",
            )
        if kind in ("bad_value", "bad_shape"):
            text = error["msg"]
            if "got " not in text:
                text = f"{text}, got {show(value)}"
            return self.finding("bad-value", f"{label}: {text}", self.value_position(path))
        expected = expectation(kind, ctx, error["msg"])
        return self.finding("bad-value", f"{label}: expected {expected}, got {show(value)}", self.value_position(path))

    def is_step_path(self, path: Path) -> bool:
        return (
            len(path) >= 2
            and isinstance(path[-1], int)
            and (path[-2] in ("steps", "body", "default_branch") or (len(path) >= 3 and path[-3] == "branches"))
        )

    def bad_step(self, path: Path, value: Any) -> Finding:
        if isinstance(value, dict) and "kind" in value:
            kind = value["kind"]
            suggestion = did_you_mean(kind, STEP_KINDS) if isinstance(kind, str) else ""
            return self.finding(
                "unknown-kind",
                f"unknown step kind {show(kind)}{suggestion}",
                self.value_position((*path, "kind")),
                f"kind is {one_of(STEP_KINDS)}",
            )
        return self.finding(
            "bad-value",
            f"a step is a mapping with kind and name, got {show(value)}",
            self.value_position(path),
            "write a step as '- kind: step' followed by 'name: ...' on the next line",
        )

    def unknown_key(self, resolved: Resolved) -> Finding:
        path, owner = resolved.path, resolved.owner
        key = str(path[-1])
        fields = list(fields_of(owner)) if owner is not None else []
        hint = f"allowed here: {', '.join(fields)}" if fields else None
        parent = _node_at(self.data, path[:-1])
        if owner is AgentStepModel and key in _KIND_OF_KEY and isinstance(parent, dict) and "kind" not in parent:
            hint = f"a step without kind is a plain step; add kind: {_KIND_OF_KEY[key]}"
        return self.finding(
            "unknown-key",
            f"unknown key {key!r}{_where(owner, path, self.data)}{did_you_mean(key, fields)}",
            self.index.key(path) or self.index.nearest(path)[1],
            hint,
        )

    def missing(self, resolved: Resolved) -> Finding:
        path, owner = resolved.path, resolved.owner
        field = str(path[-1])
        where = _where(owner, path, self.data).strip() or "here"
        return self.finding(
            "missing-field",
            f"missing {field!r} {where}",
            self.value_position(path[:-1]),
            f"add {field}: ...",
        )


def validation_findings(error: ValidationError, data: Any, index: PositionIndex) -> list[Finding]:
    """One finding per pydantic error (duplicates merged), each at its own file:line:col."""
    translator = _Translator(data, index)
    findings: list[Finding] = []
    seen: set[tuple[str, str, SourcePosition | None]] = set()
    for details in error.errors(include_url=False):
        finding = translator.translate(details)
        key = (finding.code, finding.message, finding.position)
        if key not in seen:
            seen.add(key)
            findings.append(finding)
    return findings
