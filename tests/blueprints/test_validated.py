"""Blueprint files validated before and kept on disk (blueprints.checking.validated): a file read again with the
same bytes, bounds, ``--model`` overrides, default model and code is taken from its entry and gives the same
blueprint, findings and pipeline as validating it; anything else is validated again, a broken file is never
kept, and a damaged or stray entry is a miss."""

from __future__ import annotations

import os
import shutil
import sys
import types
from pathlib import Path

import pytest

from blueprints import InvalidBlueprint, ModelOverrides, ValidatedFiles, compile_pipeline, load_blueprint
from blueprints.checking import validated as validated_module
from blueprints.checking.validated import FORMAT, _code_stamp
from core import Settings, load_settings
from tests.support.cli_helpers import EXAMPLES

WARNED = """\
version: "0.1"
name: warned
agents:
  helper: {model: echo}
steps:
  - kind: conditional
    name: pick
    condition_expression: "'true'"
    branches:
      yes:
        - {kind: step, name: only, uses: agents.helper}
"""

BROKEN = """\
version: "0.1"
steps:
  - {kind: step, name: only, uses: agents.nobody, agnet: typo}
"""


def _entries(kept: ValidatedFiles) -> list[Path]:
    return sorted(kept.folder.glob("*.validated")) if kept.folder.exists() else []


def _copy(example: Path, folder: Path) -> Path:
    """``example`` with the files beside it it may read (prompts, imports), in a folder of its own."""
    shutil.copytree(example.parent, folder, dirs_exist_ok=True)
    return folder / example.name


DOCS_EXAMPLES = EXAMPLES.parents[1] / "docs" / "examples"
# Every example of the repository: the scripted and local ones, imports (subworkflow.yaml), tools, MCP
# servers, ensembles, the ensemble file format and people simulated.
ALL_EXAMPLES = (
    sorted(EXAMPLES.glob("*.yaml"))
    + sorted(DOCS_EXAMPLES.glob("*.yaml"))
    + sorted((DOCS_EXAMPLES / "ensemble_file").glob("*.yaml"))
)


@pytest.mark.parametrize("example", ALL_EXAMPLES, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_every_example_read_from_its_entry_is_the_blueprint_validation_makes(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy(example, tmp_path / "work")
    monkeypatch.chdir(path.parent)  # with the flujo.toml beside it, if it has one
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # compiling builds agents; nothing is called
        monkeypatch.setenv(name, "test-key-not-used")
    settings = load_settings()
    kept = ValidatedFiles(tmp_path / "kept")
    fresh = load_blueprint(path, settings=settings)
    first = load_blueprint(path, settings=settings, kept=kept)
    written = {entry: (entry.stat().st_ino, entry.stat().st_mtime_ns) for entry in _entries(kept)}
    assert written  # the file, and each file it imports
    again = load_blueprint(path, settings=settings, kept=kept)
    assert {entry: (entry.stat().st_ino, entry.stat().st_mtime_ns) for entry in _entries(kept)} == written  # read
    for loaded in (first, again):
        assert loaded.model == fresh.model and loaded.findings == fresh.findings
        assert loaded.defaulted == fresh.defaulted and loaded.tree_hash == fresh.tree_hash
        assert [loaded.position(("steps", 0))] == [fresh.position(("steps", 0))]
        assert {alias: child.model for alias, child in loaded.imports.items()} == {
            alias: child.model for alias, child in fresh.imports.items()
        }
    assert [step.name for step in compile_pipeline(again, settings).steps] == [
        step.name for step in compile_pipeline(fresh, settings).steps
    ]


def test_a_kept_file_keeps_the_warnings_of_its_yaml(tmp_path: Path) -> None:
    path = tmp_path / "warned.yaml"
    path.write_text(WARNED, encoding="utf-8")
    kept = ValidatedFiles(tmp_path / "kept")
    first = load_blueprint(path, kept=kept)
    (entry,) = _entries(kept)
    written = entry.stat().st_mtime_ns
    again = load_blueprint(path, kept=kept)
    assert entry.stat().st_mtime_ns == written  # taken from the entry
    assert [f.code for f in first.findings] == ["bad-value"]  # YAML reads the key 'yes' as true
    assert again.findings == first.findings == load_blueprint(path).findings


def test_an_edited_file_is_validated_again_even_at_the_same_size(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(WARNED.replace("warned", "aaaaaa"), encoding="utf-8")
    kept = ValidatedFiles(tmp_path / "kept")
    assert load_blueprint(path, kept=kept).model.name == "aaaaaa"
    stamp = path.stat()
    path.write_text(WARNED.replace("warned", "bbbbbb"), encoding="utf-8")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # the same size and time: only the bytes differ
    assert load_blueprint(path, kept=kept).model.name == "bbbbbb"
    assert len(_entries(kept)) == 2


def test_a_broken_file_is_never_kept_and_says_its_errors_each_time(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    kept = ValidatedFiles(tmp_path / "kept")
    said = []
    for _ in range(2):
        with pytest.raises(InvalidBlueprint) as raised:
            load_blueprint(path, kept=kept)
        said.append([(f.code, f.message, f.position) for f in raised.value.findings])
    assert said[0] == said[1] and any(code == "unknown-key" for code, _, _ in said[0])
    assert _entries(kept) == []


def test_a_file_whose_checks_fail_is_kept_but_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(BROKEN.replace(", agnet: typo", ""), encoding="utf-8")  # valid structure, unknown agent
    kept = ValidatedFiles(tmp_path / "kept")
    for _ in range(2):
        with pytest.raises(InvalidBlueprint, match="nobody"):
            load_blueprint(path, kept=kept)
    assert len(_entries(kept)) == 1


def test_overrides_and_the_default_model_are_part_of_the_key(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(WARNED.replace("{model: echo}", "{system_prompt: hi}"), encoding="utf-8")
    kept = ValidatedFiles(tmp_path / "kept")
    echo = load_blueprint(path, settings=Settings(default_model="echo"), kept=kept)
    openai = load_blueprint(path, settings=Settings(default_model="openai:gpt-4o-mini"), kept=kept)
    overridden = load_blueprint(
        path,
        settings=Settings(default_model="echo"),
        models=ModelOverrides.parse(["agents.helper=openai:gpt-4o"]),
        kept=kept,
    )
    assert echo.model.agents["helper"].model == "echo" and echo.defaulted == {"helper"}
    assert openai.model.agents["helper"].model == "openai:gpt-4o-mini"
    assert overridden.model.agents["helper"].model == "openai:gpt-4o" and overridden.defaulted == frozenset()
    assert len(_entries(kept)) == 3
    assert load_blueprint(path, settings=Settings(default_model="echo"), kept=kept).model == echo.model


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1],  # cut short
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # a byte of the payload changed
        lambda data: b"flujo validated blueprint 0\n" + data[len(FORMAT) :],  # another format
        lambda data: b"",
        lambda data: os.urandom(len(data)),
    ],
    ids=["cut", "changed", "format", "empty", "noise"],
)
def test_a_damaged_entry_is_a_miss_and_is_written_again(tmp_path: Path, damage: types.FunctionType) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(WARNED, encoding="utf-8")
    kept = ValidatedFiles(tmp_path / "kept")
    fresh = load_blueprint(path, kept=kept)
    (entry,) = _entries(kept)
    entry.write_bytes(damage(entry.read_bytes()))
    assert load_blueprint(path, kept=kept).model == fresh.model
    assert entry.read_bytes().startswith(FORMAT) and kept.recall(_key(kept, path)) is not None


def test_an_entry_written_under_another_key_is_not_taken(tmp_path: Path) -> None:
    """Entries are named by their key's first 40 digits; the whole key is inside and must match."""
    one, other = tmp_path / "one.yaml", tmp_path / "other.yaml"
    one.write_text(WARNED, encoding="utf-8")
    other.write_text(WARNED.replace("warned", "other"), encoding="utf-8")
    kept = ValidatedFiles(tmp_path / "kept")
    load_blueprint(one, kept=kept)
    (entry,) = _entries(kept)
    shutil.copy(entry, kept.folder / f"{_key(kept, other)[:40]}.validated")
    assert load_blueprint(other, kept=kept).model.name == "other"


def test_an_edited_module_of_flujo_changes_every_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "probe.py"
    source.write_text("X = 1\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "core._validated_probe", types.SimpleNamespace(__file__=str(source)))
    before = _code_stamp()
    source.write_text("X = 22\n", encoding="utf-8")
    assert _code_stamp() != before


def test_the_modules_that_validate_count_whether_a_command_loaded_them_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """The schema's constraints (``blueprints.schema.validating``) decide what an entry holds but are imported
    only by a command that validates, after it looked for its entry: their file is in every key, and the key is
    the same whether this process loaded them or not (or a run that validated would miss a run that did not)."""
    import blueprints.schema.validating as constraints

    stamp = _code_stamp()
    assert constraints.__file__ is not None and str(Path(constraints.__file__).resolve()).encode() in stamp
    monkeypatch.delitem(sys.modules, "blueprints.schema.validating")
    monkeypatch.delitem(sys.modules, "blueprints.reading.ensemble_file", raising=False)
    assert _code_stamp() == stamp


def test_the_oldest_entries_go_first_past_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validated_module, "KEPT", 4)
    kept = ValidatedFiles(tmp_path / "kept")
    names = []
    for number in range(6):
        path = tmp_path / f"flow{number}.yaml"
        path.write_text(WARNED.replace("warned", f"flow{number}"), encoding="utf-8")
        load_blueprint(path, kept=kept)
        names.append(_key(kept, path)[:40])
        for age, entry in enumerate(sorted(_entries(kept), key=lambda entry: names.index(entry.stem))):
            os.utime(entry, ns=(age * 10**9, age * 10**9))  # written in this order, whatever the clock says
    left = {entry.stem for entry in _entries(kept)}
    assert len(left) <= 4 and names[-1] in left and names[0] not in left


def test_a_folder_that_cannot_be_written_keeps_nothing_and_the_load_works(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(WARNED, encoding="utf-8")
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder", encoding="utf-8")
    kept = ValidatedFiles(blocked / "kept")
    assert load_blueprint(path, kept=kept).model == load_blueprint(path).model


def _key(kept: ValidatedFiles, path: Path) -> str:
    import hashlib

    from core import BoundsSettings

    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return kept.key(str(path), digest, bounds=BoundsSettings(), models=ModelOverrides(), default_model=None)


def test_what_a_killed_writer_left_is_removed_once_an_hour_old(tmp_path: Path) -> None:
    kept = ValidatedFiles(tmp_path / "kept")
    kept.folder.mkdir()
    old, recent = kept.folder / ".writing-1-aaaa", kept.folder / ".writing-2-bbbb"
    old.write_bytes(b"half an entry")
    recent.write_bytes(b"being written")
    os.utime(old, (0, 0))
    path = tmp_path / "flow.yaml"
    path.write_text(WARNED, encoding="utf-8")
    load_blueprint(path, kept=kept)
    assert not old.exists() and recent.exists() and len(_entries(kept)) == 1
