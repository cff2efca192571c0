"""The blueprint models are plain frozen dataclasses (``blueprints.schema``): a blueprint read from its kept entry
(``blueprints.checking.validated``) loads none of pydantic's model machinery, only
``blueprints.schema.validating`` imports pydantic, the models stay strict, and each validated model knows the
keys its mapping wrote (``fields_given``)."""

from __future__ import annotations

import ast
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from blueprints import InvalidBlueprint, load_blueprint
from blueprints.schema import (
    AgentStepModel,
    HistoryManagementModel,
    LoopSettingsModel,
    LoopStepModel,
    ParallelSettingsModel,
    ParallelStepModel,
)
from blueprints.schema.validating import validate_blueprint
from tests.support.cli_helpers import ROOT, flujo

# What defining or validating a pydantic model loads (most of pydantic's import time).
MACHINERY = ("pydantic.main", "pydantic.fields", "pydantic.type_adapter", "pydantic._internal._model_construction")

LOOP = """\
version: "0.1"
agents:
  helper: {model: echo}
steps:
  - name: first
    uses: agents.helper
  - kind: loop
    name: again
    loop:
      body:
        - {kind: step, name: inner, uses: agents.helper}
      max_loops: 3
      history_management: {max_turns: 4}
"""

_LOAD = """
import json, sys
from pathlib import Path

importers = {{}}  # each of the machinery's modules: the first module outside pydantic that imported it


class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in {machinery!r}:
            frame = sys._getframe(1)
            while frame.f_globals.get("__name__", "").startswith(("importlib", "pydantic", "_frozen")):
                frame = frame.f_back
            importers[name] = frame.f_globals.get("__name__")
        return None


sys.meta_path.insert(0, Watch())
from blueprints import ValidatedFiles, load_blueprint
blueprint = load_blueprint(Path({path!r}), kept=ValidatedFiles(Path({kept!r})))
print(json.dumps({{
    "loaded": sorted(name for name in {machinery!r} if name in sys.modules),
    "importers": importers,
    "validating": "blueprints.schema.validating" in sys.modules,
    "given": sorted(blueprint.model.steps[1].loop.fields_given),
}}))
"""


def _load_in_a_new_process(path: Path, kept: Path) -> dict[str, object]:
    script = _LOAD.format(machinery=MACHINERY, path=str(path), kept=str(kept))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_a_kept_blueprint_loads_without_pydantic_s_model_machinery(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP, encoding="utf-8")
    first = _load_in_a_new_process(path, tmp_path / "kept")
    assert first["validating"] is True  # validated, then kept
    assert list((tmp_path / "kept").glob("*.validated"))
    again = _load_in_a_new_process(path, tmp_path / "kept")
    assert again["validating"] is False  # taken from the entry: nothing of the schema's validation is imported
    assert again["given"] == first["given"] == ["body", "history_management", "max_loops"]
    assert again["importers"] == {} and again["loaded"] == []  # nothing of pydantic's models, from any module


def test_only_the_validating_and_json_schema_modules_of_the_schema_import_pydantic() -> None:
    """At module level, in functions or under TYPE_CHECKING."""
    importing = set()
    for module in sorted((ROOT / "blueprints" / "schema").glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name.split(".")[0] in ("pydantic", "pydantic_core") for name in names):
                importing.add(module.name)
    assert importing == {"validating.py", "json_schema.py"}


def test_fields_given_are_the_keys_the_mapping_wrote() -> None:
    model = validate_blueprint(
        {
            "version": "0.1",
            "steps": [
                {"name": "a", "uses": "agents.x"},
                {"kind": "loop", "name": "l", "loop": {"body": [{"name": "b"}], "conversation": False}},
            ],
            "agents": {"x": {"model": "echo"}},
        }
    )
    step, loop = model.steps
    assert isinstance(step, AgentStepModel) and isinstance(loop, LoopStepModel)
    assert step.fields_given == {"name", "uses"}  # kind left out: a plain step
    assert loop.fields_given == {"kind", "name", "loop"}
    assert loop.loop.fields_given == {"body", "conversation"}  # written with its default value: still given
    assert model.fields_given == {"version", "steps", "agents"}
    assert model.agents["x"].fields_given == {"model"}


def test_a_model_made_in_code_gives_the_fields_that_differ_from_their_defaults() -> None:
    assert HistoryManagementModel().fields_given == frozenset()
    assert HistoryManagementModel(strategy="truncate_turns", max_turns=3).fields_given == {"strategy", "max_turns"}
    body = [AgentStepModel(name="b")]
    assert LoopSettingsModel(body=body, conversation=False).fields_given == {"body"}  # required: always
    step = validate_blueprint(
        {"version": "0.1", "steps": [{"kind": "parallel", "name": "p", "branches": {"x": [{"name": "b"}]}}]}
    ).steps[0]
    assert isinstance(step, ParallelStepModel)
    assert step.settings == ParallelSettingsModel(branches=step.branches or {})
    assert step.settings.fields_given == {"branches"}


def test_a_model_pickles_with_its_given_fields_and_compares_by_its_values() -> None:
    data = {"version": "0.1", "steps": [{"kind": "loop", "name": "l", "loop": {"body": [{"name": "b"}]}}]}
    model = validate_blueprint(data)
    again = pickle.loads(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == model and again.steps[0].fields_given == model.steps[0].fields_given == {"kind", "name", "loop"}
    written = validate_blueprint({**data, "name": None})
    assert written == model and written.fields_given != model.fields_given  # the record is no value
    with pytest.raises(AttributeError):
        model.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("loop", "message"),
    [
        ({"body": [{"name": "b"}], "max_loops": "3"}, "max_loops: expected a whole number, got '3'"),
        ({"body": [{"name": "b"}], "max_loops": 3.0}, "max_loops: expected a whole number, got 3.0"),
        ({"body": [{"name": "b"}], "conversation": "yes"}, "conversation: expected true or false, got 'yes'"),
        ({"body": [{"name": "b"}], "maxloops": 3}, "unknown key 'maxloops' in loop settings of step 'l'"),
        ({"max_loops": 3}, "missing 'body' in loop settings of step 'l'"),
        ("three times", "loop: expected a mapping, got 'three times'"),
    ],
)
def test_the_models_stay_strict(tmp_path: Path, loop: object, message: str) -> None:
    path = tmp_path / "strict.yaml"
    data = {"version": "0.1", "steps": [{"kind": "loop", "name": "l", "loop": loop}]}
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML: "3" stays text
    code, out, _ = flujo(["validate", str(path), "--json"])
    assert code == 1
    messages = [finding["message"] for finding in json.loads(out)["findings"]]
    assert any(found.startswith(message) for found in messages), messages
    with pytest.raises(InvalidBlueprint, match=re.escape(message)):
        load_blueprint(path)
