"""What ``flujo worker`` keeps between runs (flujo_cli.blueprint_cache): a blueprint is loaded once while its
file and the files it imports are unchanged, and again when one of them changes (an edit that keeps the size
too, a file touched but unchanged is still the same); settings are read again when flujo.toml changes or
appears; a file that became broken fails, and is not kept."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import BlueprintError
from flujo_cli.blueprint_cache import BlueprintCache

MAIN = """\
version: "0.1"
imports:
  helper: helper.yaml
steps:
  - {kind: step, name: first, agent: {id: flujo.builtins.stringify}}
  - {kind: step, name: inner, uses: imports.helper}
"""

HELPER = """\
version: "0.1"
steps:
  - {kind: step, name: %s, agent: {id: flujo.builtins.stringify}}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "main.yaml").write_text(MAIN, encoding="utf-8")
    (tmp_path / "helper.yaml").write_text(HELPER % "aaaa", encoding="utf-8")
    with contextlib.chdir(tmp_path):
        yield tmp_path


def _steps(cache: BlueprintCache, path: Path) -> list[str]:
    blueprint = cache.prepared(path, [], []).blueprint
    return [step.name for step in blueprint.imports["helper"].model.steps]


def test_a_blueprint_is_loaded_once_while_its_files_are_unchanged(folder: Path) -> None:
    cache = BlueprintCache(None)
    first = cache.prepared(folder / "main.yaml", [], [])
    (folder / "helper.yaml").touch()  # a new timestamp, the same content
    again = cache.prepared(folder / "main.yaml", [], [])
    assert again.blueprint is first.blueprint and again.settings is first.settings and cache.loads == 1


def test_an_edited_import_is_loaded_again_even_at_the_same_size(folder: Path) -> None:
    cache = BlueprintCache(None)
    assert _steps(cache, folder / "main.yaml") == ["aaaa"]
    (folder / "helper.yaml").write_text(HELPER % "bbbb", encoding="utf-8")
    assert _steps(cache, folder / "main.yaml") == ["bbbb"]
    assert cache.loads == 2


def test_an_edited_blueprint_is_loaded_again(folder: Path) -> None:
    cache = BlueprintCache(None)
    before = cache.prepared(folder / "main.yaml", [], []).blueprint
    (folder / "main.yaml").write_text(MAIN.replace("name: first", "name: second"), encoding="utf-8")
    after = cache.prepared(folder / "main.yaml", [], []).blueprint
    assert [step.name for step in after.model.steps] == ["second", "inner"]
    assert after.source_hash != before.source_hash and cache.loads == 2


def test_other_overrides_are_other_entries(folder: Path) -> None:
    cache = BlueprintCache(None)
    plain = cache.prepared(folder / "main.yaml", [], [])
    bounded = cache.prepared(folder / "main.yaml", ["limits.max_tokens=5"], [])
    assert bounded.settings is not plain.settings and cache.loads == 2
    assert cache.prepared(folder / "main.yaml", [], []).blueprint is plain.blueprint


def test_settings_are_read_again_when_flujo_toml_appears_or_changes(folder: Path) -> None:
    cache = BlueprintCache(None)
    before = cache.prepared(folder / "main.yaml", [], []).settings
    (folder / "flujo.toml").write_text('redact_patterns = ["sk-[a-z]+"]\n', encoding="utf-8")
    appeared = cache.prepared(folder / "main.yaml", [], []).settings
    assert appeared is not before and appeared.redact_patterns == ["sk-[a-z]+"]
    (folder / "flujo.toml").write_text('redact_patterns = ["pk-[a-z]+"]\n', encoding="utf-8")
    assert cache.prepared(folder / "main.yaml", [], []).settings.redact_patterns == ["pk-[a-z]+"]


def test_a_broken_edit_fails_each_time_and_its_fix_is_loaded(folder: Path) -> None:
    cache = BlueprintCache(None)
    cache.prepared(folder / "main.yaml", [], [])
    (folder / "helper.yaml").write_text("version: [\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(BlueprintError):
            cache.prepared(folder / "main.yaml", [], [])
    (folder / "helper.yaml").write_text(HELPER % "cccc", encoding="utf-8")
    assert _steps(cache, folder / "main.yaml") == ["cccc"]


SCRIPTED = """\
version: "0.1"
agents:
  speaker: {model: scripted, replies: ["first", "second"]}
steps:
  - {kind: step, name: say, uses: agents.speaker}
"""


def test_a_pipeline_of_agents_without_run_state_is_compiled_once_and_shared(folder: Path) -> None:
    cache = BlueprintCache(None)
    first = cache.prepared(folder / "main.yaml", [], [])
    again = cache.prepared(folder / "main.yaml", [], [])
    assert again.pipeline is first.pipeline and cache.compiles == 1
    (folder / "helper.yaml").write_text(HELPER % "bbbb", encoding="utf-8")
    assert cache.prepared(folder / "main.yaml", [], []).pipeline is not first.pipeline and cache.compiles == 2


def test_two_runs_of_a_scripted_agent_each_get_its_first_reply(folder: Path) -> None:
    """A scripted model takes its replies in turn: each run is given a pipeline of its own, as flujo run
    compiles one for each run, so each starts from the first reply."""
    from core import Engine, NullReporter
    from core.store import open_store

    (folder / "talk.yaml").write_text(SCRIPTED, encoding="utf-8")
    cache = BlueprintCache(None)

    async def two_runs() -> list[object]:
        outputs = []
        async with await open_store(str(folder / "flujo.db")) as store:
            for text in ("one", "two"):
                prepared = cache.prepared(folder / "talk.yaml", [], [])
                engine = Engine(store=store, reporter=NullReporter(), redactor=prepared.redactor)
                outputs.append((await engine.run(prepared.pipeline, text)).output)
        return outputs

    assert asyncio.run(two_runs()) == ["first", "first"]
    assert cache.loads == 1 and cache.compiles == 2
