"""Validating imports: missing files and cycles are errors at the ``imports:`` entry (file:line:col); an
imported file is validated too, its findings at its own lines; ``config`` of a sub-workflow step is checked.
"""

# ruff: noqa: E501

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from blueprints import InvalidBlueprint, load_blueprint, load_pipeline, validate_file
from core import RunRecord, Settings, SourcePosition
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

CHILD = 'version: "0.1"\nsteps:\n  - {name: echo}\n'


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def errors(path: Path) -> list[tuple[str, str, str]]:
    """(file:line:col, code, message) of each error of ``path``'s validation."""
    return [(str(f.position), f.code, f.message) for f in validate_file(path) if f.is_error]


def test_missing_file_is_an_error_at_the_imports_entry(tmp_path: Path) -> None:
    parent = write(
        tmp_path, "flow.yaml",
        'version: "0.1"\nimports:\n  ok: parts/child.yaml\n  review: parts/reveiw.yaml\nsteps:\n'
        "  - {name: call, uses: imports.review}\n",
    )  # fmt: skip
    write(tmp_path, "parts/child.yaml", CHILD)
    assert errors(parent) == [
        (
            f"{parent}:4:11",
            "unknown-reference",
            f"imports.review: file 'parts/reveiw.yaml' not found (looked for {tmp_path / 'parts' / 'reveiw.yaml'})",
        )
    ]


def test_paths_are_relative_to_the_importing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "flows/main.yaml", 'version: "0.1"\nimports: {sub: ../lib/sub.yaml}\nsteps: [{name: s, uses: imports.sub}]\n')  # fmt: skip
    write(tmp_path, "lib/sub.yaml", 'version: "0.1"\nimports: {leaf: leaf.yaml}\nsteps: [{name: t, uses: imports.leaf}]\n')  # fmt: skip
    write(tmp_path, "lib/leaf.yaml", CHILD)
    monkeypatch.chdir(tmp_path / "lib")  # the working directory plays no part
    blueprint = load_blueprint(tmp_path / "flows" / "main.yaml")
    assert blueprint.imports["sub"].path == tmp_path / "lib" / "sub.yaml"
    assert blueprint.imports["sub"].imports["leaf"].path == tmp_path / "lib" / "leaf.yaml"


def test_import_cycle_is_an_error_at_the_entry_that_closes_it(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", 'version: "0.1"\nimports: {b: b.yaml}\nsteps: [{name: one, uses: imports.b}]\n')
    second = write(
        tmp_path, "b.yaml", 'version: "0.1"\nname: b\nimports:\n  back: a.yaml\nsteps: [{name: two, uses: imports.back}]\n'
    )  # fmt: skip
    assert errors(first) == [(f"{second}:4:9", "import-cycle", "imports.back: import cycle a.yaml → b.yaml → a.yaml")]
    assert errors(second) == [(f"{first}:2:14", "import-cycle", "imports.b: import cycle b.yaml → a.yaml → b.yaml")]
    with pytest.raises(InvalidBlueprint) as caught:
        load_blueprint(first)
    assert caught.value.position == SourcePosition(str(second), 4, 9)
    assert caught.value.hint == "a blueprint cannot import itself, directly or through the blueprints it imports"


def test_a_blueprint_importing_itself_is_a_cycle(tmp_path: Path) -> None:
    path = write(
        tmp_path, "me.yaml", 'version: "0.1"\nimports: {me: ./me.yaml}\nsteps: [{name: one, uses: imports.me}]\n'
    )
    assert errors(path) == [(f"{path}:2:15", "import-cycle", "imports.me: import cycle me.yaml → me.yaml")]


def test_a_file_imported_twice_is_not_a_cycle_and_is_validated_once(tmp_path: Path) -> None:
    top = write(
        tmp_path, "top.yaml",
        'version: "0.1"\nimports: {left: left.yaml, right: right.yaml}\nsteps:\n'
        "  - {name: l, uses: imports.left}\n  - {name: r, uses: imports.right}\n",
    )  # fmt: skip
    for side in ("left", "right"):
        write(tmp_path, f"{side}.yaml", 'version: "0.1"\nimports: {leaf: leaf.yaml}\nsteps: [{name: x, uses: imports.leaf}]\n')  # fmt: skip
    leaf = write(tmp_path, "leaf.yaml", 'version: "0.1"\nsteps:\n  - {name: passes}\n')
    findings = validate_file(top)
    assert [(str(f.position), f.code) for f in findings] == [(f"{leaf}:3:5", "passthrough-step")]
    blueprint = load_blueprint(top)
    assert blueprint.imports["left"].imports["leaf"] is blueprint.imports["right"].imports["leaf"]


def test_errors_inside_an_imported_file_name_that_file(tmp_path: Path) -> None:
    parent = write(tmp_path, "flow.yaml", 'version: "0.1"\nimports: {sub: sub.yaml}\nsteps:\n  - {name: bad, uses: agents.nobody}\n  - {name: call, uses: imports.sub}\n')  # fmt: skip
    child = write(tmp_path, "sub.yaml", 'version: "0.1"\nsteps:\n  - kind: hitl\n    name: ask\n    mesage: "Hi?"\n')
    assert [row[0] for row in errors(parent)] == [f"{parent}:4:23", f"{child}:5:5"]
    assert [row[2] for row in errors(parent)][1:] == [
        "unknown key 'mesage' in step 'ask' — did you mean 'message'?",
    ]


def test_config_of_a_sub_workflow_is_checked(tmp_path: Path) -> None:
    write(tmp_path, "sub.yaml", 'version: "0.1"\nsteps:\n  - {name: draft}\n')
    parent = write(
        tmp_path, "flow.yaml",
        """version: "0.1"
imports: {sub: sub.yaml}
steps:
  - name: call
    uses: imports.sub
    config:
      propagate_hitl: false
      input_scratchpad_key: q
      outputs:
        - {child: scratchpad.x, parent: steps.call}
        - {child: steps.drat.output, parent: scratchpad.y}
        - {child: nowhere.z, parent: scratchpad.z}
  - name: plain
    config: {input_to: scratchpad}
""",
    )  # fmt: skip
    found = [(f.position.line if f.position else 0, f.code, f.message) for f in validate_file(parent)]
    assert found == [
        (7, "bad-value", "propagate_hitl: false is not supported: a question inside a sub-workflow always pauses the parent run"),
        (8, "ignored-key", "input_scratchpad_key has no effect with input_to: initial_prompt"),
        (10, "bad-value", "outputs can write only the parent's scratchpad, not 'steps.call'"),
        (11, "unknown-reference", "outputs: 'steps.drat.output' names step 'drat', which sub.yaml does not have — did you mean 'draft'?"),
        (12, "bad-value", "outputs: cannot read 'nowhere.z' from the sub-workflow"),
        (13, "passthrough-step", "step 'plain' has no agent; it passes its input through"),
        (14, "ignored-key", "config has no effect on step 'plain'; only a sub-workflow step (uses: imports.<alias>) takes config"),
        (3, "passthrough-step", "step 'draft' has no agent; it passes its input through"),
    ]  # fmt: skip


def test_outputs_of_a_wrong_shape_are_one_error(tmp_path: Path) -> None:
    write(tmp_path, "sub.yaml", CHILD)
    parent = write(
        tmp_path, "flow.yaml",
        'version: "0.1"\nimports: {sub: sub.yaml}\nsteps:\n  - name: call\n    uses: imports.sub\n'
        "    config: {outputs: scratchpad.x, input_to: everywhere}\n",
    )  # fmt: skip
    assert [(pos.split(":", 1)[1], code) for pos, code, _ in errors(parent)] == [
        ("6:23", "bad-value"),
        ("6:47", "bad-value"),
    ]


async def stored_runs(db: Path) -> list[RunRecord]:
    store = await open_store(str(db))
    try:
        return await store.list_runs()
    finally:
        await store.close()


def test_validate_and_run_report_import_errors_with_positions(tmp_path: Path, state_db: Path) -> None:
    first = write(tmp_path, "a.yaml", 'version: "0.1"\nimports: {b: b.yaml}\nsteps: [{name: one, uses: imports.b}]\n')
    second = write(tmp_path, "b.yaml", 'version: "0.1"\nimports: {a: a.yaml}\nsteps: [{name: two, uses: imports.a}]\n')
    code, _, err = flujo(["validate", str(first)])
    assert code == exit_codes.FAILED
    assert f"{second}:2:14: error: imports.a: import cycle a.yaml → b.yaml → a.yaml" in err
    code, _, err = flujo(["run", str(first)])
    assert code == exit_codes.BLUEPRINT and f"{second}:2:14" in err and "nothing ran" in err
    assert asyncio.run(stored_runs(state_db)) == []
    with pytest.raises(InvalidBlueprint):
        load_pipeline(first, Settings())
