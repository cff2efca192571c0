"""``run`` names the files of a blueprint's errors as ``validate`` does for the same argument: as typed
(``run`` resolves the path to keep it for a resume, and used to print it absolute even when given it
relative)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo

INVALID = "docs/examples/invalid/references.yaml"
IMPORTS = "docs/examples/invalid/imports.yaml"


def _locations(stderr: str) -> list[str]:
    return [line.split(": ")[0] for line in stderr.splitlines() if ": error: " in line]


@pytest.mark.parametrize("given", [INVALID, IMPORTS, str(ROOT / INVALID), f"./{INVALID}"])
def test_run_names_the_file_as_validate_does(given: str, monkeypatch: pytest.MonkeyPatch, state_db: Path) -> None:
    monkeypatch.chdir(ROOT)
    code, _, ran = flujo(["run", given, "--no-input"])
    assert code == exit_codes.BLUEPRINT
    _, _, validated = flujo(["validate", given])
    assert _locations(ran) == _locations(validated) and _locations(ran)
    if given == INVALID:
        assert _locations(ran) == [f"{INVALID}:10:11", f"{INVALID}:13:29", f"{INVALID}:16:13"]
