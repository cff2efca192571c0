"""The ``flujo`` command keeps the blueprint files it validated (flujo_cli/user_cache.py): the next ``flujo run``
of an unchanged file builds none of the schema's validators; an edited file is validated again, so a mistake
made since is reported at its own line; the folder follows ``XDG_CACHE_HOME``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli_helpers import ROOT

ONE_STEP = """\
version: "0.1"
agents:
  echoer: {model: echo}
steps:
  - {kind: step, name: %s, uses: agents.echoer}
"""

# The command, started as ``python -m flujo_cli.main`` is, that says at its end whether the blueprint's
# validator (``blueprints.schema.validating``'s) was built in this process.
PROBE = """\
import atexit, runpy, sys
def said():
    validating = sys.modules.get("blueprints.schema.validating")
    built = validating is not None and validating._blueprint_adapter.cache_info().currsize > 0
    sys.stderr.write(f"\\nvalidator built: {built}\\n")
atexit.register(said)
sys.argv = ["-m", *sys.argv[1:]]
runpy.run_module("flujo_cli.main", run_name="__main__")
"""


def _run(folder: Path, env: dict[str, str]) -> tuple[str, bool]:
    """``flujo run flow.yaml``'s output, and whether it built the blueprint's validator."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "run", "flow.yaml", "--input", "hi", "--no-input"],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(folder / "s.db"), **env},
    )
    assert done.returncode == 0, done.stderr
    built = done.stderr.rstrip().rsplit("\n", 1)[-1]
    assert built in ("validator built: True", "validator built: False"), done.stderr
    return done.stderr, built.endswith("True")


def test_a_second_run_of_an_unchanged_blueprint_builds_no_validator(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(ONE_STEP % "first", encoding="utf-8")
    said, built = _run(tmp_path, {})
    assert built and "first" in said
    entries = list((Path(os.environ["HOME"]) / ".cache" / "flujo" / "validated").glob("*.validated"))
    assert len(entries) == 1

    said, built = _run(tmp_path, {})
    assert not built and "first" in said


def test_an_edit_is_seen_and_a_mistake_made_since_is_reported_at_its_line(tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(ONE_STEP % "first", encoding="utf-8")
    _run(tmp_path, {})
    flow.write_text(ONE_STEP % "again", encoding="utf-8")
    said, built = _run(tmp_path, {})
    assert built and "again" in said and "first" not in said

    flow.write_text((ONE_STEP % "again").replace("uses:", "usse:"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", "run", "flow.yaml", "--input", "hi", "--no-input"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(tmp_path / "s.db")},
    )
    assert done.returncode == 3 and "flow.yaml:5:31" in done.stderr and "usse" in done.stderr, done.stderr


def test_the_cache_is_kept_under_xdg_cache_home(tmp_path: Path) -> None:
    (tmp_path / "flow.yaml").write_text(ONE_STEP % "first", encoding="utf-8")
    cache = tmp_path / "xdg-cache"
    _run(tmp_path, {"XDG_CACHE_HOME": str(cache)})
    (entry,) = (cache / "flujo" / "validated").glob("*.validated")
    assert entry.stat().st_mode & 0o777 == 0o600 and entry.parent.stat().st_mode & 0o777 == 0o700
    assert not (Path(os.environ["HOME"]) / ".cache").exists()
    _, built = _run(tmp_path, {"XDG_CACHE_HOME": str(cache)})
    assert not built


def test_the_folder_follows_the_xdg_rules(tmp_path: Path) -> None:
    from flujo_cli.user_cache import cache_folder, validated_files

    home = str(tmp_path)
    assert cache_folder({"XDG_CACHE_HOME": "/c", "HOME": home}) == Path("/c/flujo")
    assert cache_folder({"XDG_CACHE_HOME": "relative", "HOME": home}) == tmp_path / ".cache" / "flujo"  # ignored
    assert cache_folder({}) is None and validated_files({}) is None
    assert cache_folder({"HOME": str(tmp_path / "nowhere")}) is None  # no home folder is made for a cache
    kept = validated_files({"HOME": home})
    assert kept is not None and kept.folder == tmp_path / ".cache" / "flujo" / "validated"
