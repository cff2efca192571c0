"""Broken variants of the example blueprints: the later checks run on what the schema left and never crash.

Each example (blueprints/examples, docs/examples) is read as data, broken in a few places (a value
replaced by another of any type, a key dropped, an unknown key added, a list emptied, a step's kind
changed) and written back as YAML; ``flujo validate --json`` then exits 0 or 1 without a traceback, every
error is located, and a blueprint the schema refuses is reported invalid. Adding only unknown keys never
adds a later finding the example did not already have: the salvaged blueprint is the example itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from blueprints.checking.validation import UNKNOWN_KEY, resolve
from blueprints.reading.ensemble_file import is_ensemble_file
from blueprints.schema.validating import validate_blueprint
from tests.support.cli_helpers import flujo

ROOT = Path(__file__).resolve().parents[2]
SEEDS = {
    path.relative_to(ROOT).as_posix(): yaml.safe_load(path.read_text(encoding="utf-8"))
    for path in sorted((ROOT / "blueprints" / "examples").glob("*.yaml"))
    + sorted((ROOT / "docs" / "examples").glob("*.yaml"))
}
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same examples on every machine: a failure reproduces
    database=None,
    suppress_health_check=list(HealthCheck),
)

DataPath = tuple[str | int, ...]

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x", "loop", "agents.nope", "{{ x }", "0.1"]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["name", "kind", "x"]), children, max_size=3)
    ),
    max_leaves=6,
)


def _places(node: Any, path: DataPath = ()) -> list[DataPath]:
    """Every path in ``node``, the root excluded."""
    found: list[DataPath] = []
    items: list[tuple[str | int, Any]] = (
        list(node.items()) if isinstance(node, dict) else list(enumerate(node)) if isinstance(node, list) else []
    )
    for key, child in items:
        found.append((*path, key))
        found.extend(_places(child, (*path, key)))
    return found


def _node(data: Any, path: DataPath) -> Any:
    for elem in path:
        data = data[elem]
    return data


def _parent(data: Any, path: DataPath) -> Any:
    return _node(data, path[:-1])


@st.composite
def broken(draw: st.DrawFn, *, only_unknown_keys: bool = False) -> tuple[str, Any, Any]:
    """(seed name, seed data, the seed broken in one to four places). With ``only_unknown_keys``, every
    change adds a key the schema refuses as unknown (not one of a free mapping such as model_settings)."""
    name = draw(st.sampled_from(sorted(SEEDS)))
    data = json.loads(json.dumps(SEEDS[name]))  # a copy (the seeds hold plain JSON values)
    added: list[DataPath] = []
    for _ in range(draw(st.integers(1, 4))):
        mappings = [p for p in [(), *_places(data)] if isinstance(_node(data, p), dict)]
        action = "add" if only_unknown_keys else draw(st.sampled_from(["replace", "drop", "add", "empty", "kind"]))
        if action == "add":
            where = draw(st.sampled_from(mappings))
            key = f"zz_{draw(st.integers(0, 9))}"
            _node(data, where)[key] = draw(VALUES)
            added.append((*where, key))
            continue
        path = draw(st.sampled_from(_places(data)))
        parent, key = _parent(data, path), path[-1]
        if action == "replace":
            parent[key] = draw(VALUES)
        elif action == "drop" and isinstance(parent, dict):
            del parent[key]
        elif action == "empty":
            parent[key] = [] if isinstance(parent[key], list) else {}
        elif action == "kind" and isinstance(parent, dict):
            parent["kind"] = draw(
                st.sampled_from(["step", "hitl", "loop", "map", "parallel", "conditional", "ensemble", "lop"])
            )
    if only_unknown_keys:
        assume(_refused_keys(data) == set(added))
    return name, SEEDS[name], data


def _refused_keys(data: Any) -> set[DataPath]:
    """The data paths of the keys the schema refuses as unknown; every path when it refuses anything else."""
    try:
        validate_blueprint(data)
    except ValidationError as exc:
        resolved = [(d["type"], resolve(tuple(d["loc"]), data).path) for d in exc.errors()]
        if all(kind == UNKNOWN_KEY for kind, _ in resolved):
            return {path for _, path in resolved}
        return set(_places(data))
    return set()


def _validate(tmp_path: Path, data: Any, name: str) -> tuple[int, dict[str, Any]]:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    code, out, err = flujo(["validate", str(path), "--json"])  # raises on a traceback
    assert "Traceback" not in err
    return code, json.loads(out)


def _schema_refuses(data: Any) -> bool:
    try:
        validate_blueprint(data)
    except ValidationError:
        return True
    return False


@pytest.mark.slow
@SETTINGS
@given(case=broken())
def test_broken_examples_never_crash_and_every_error_is_located(
    tmp_path_factory: Any, case: tuple[str, Any, Any]
) -> None:
    name, _, data = case
    code, report = _validate(tmp_path_factory.mktemp("fuzz"), data, "broken.yaml")
    assert code in (0, 1), code
    assert report["valid"] == (code == 0)
    for finding in report["findings"]:
        if finding["severity"] == "error":
            assert finding["line"] is not None and finding["column"] is not None, (name, finding)
    if _schema_refuses(data) and not is_ensemble_file(data):  # that format is translated before the schema
        assert code == 1, (name, report)


def _later(report: dict[str, Any]) -> set[tuple[str, str]]:
    """The findings as (code, message), without the positions some messages quote."""
    return {
        (f["code"], re.sub(r" \(first at [^)]*\)", "", f["message"]))
        for f in report["findings"]
        if f["code"] != "unknown-key"
    }


@pytest.mark.slow
@SETTINGS
@given(case=broken(only_unknown_keys=True))
def test_unknown_keys_add_no_later_finding(tmp_path_factory: Any, case: tuple[str, Any, Any]) -> None:
    name, seed, data = case
    folder = tmp_path_factory.mktemp("fuzz")
    _, before = _validate(folder, seed, "seed.yaml")
    code, after = _validate(folder, data, "broken.yaml")
    assert code == 1
    assert _later(after) <= _later(before), name
