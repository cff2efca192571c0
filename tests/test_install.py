"""``make install`` says what it does: no setuptools deprecation warnings (the license is an SPDX string,
which setuptools 77 and later read without a warning), and pip's own progress instead of silence."""

from __future__ import annotations

import re
import tomllib

from tests.cli_helpers import ROOT


def test_the_license_is_an_spdx_string_that_the_required_setuptools_reads() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "MIT"
    [setuptools] = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    assert re.fullmatch(r"setuptools>=(\d+)", setuptools) and int(setuptools.split(">=")[1]) >= 77


def test_make_install_shows_the_progress_of_installing_flujo() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [install] = [line for line in makefile.splitlines() if "pip install" in line and "-e '.[dev" in line]
    assert "--quiet" not in install and "-q " not in install
