"""Golden files: the expected output of a command, kept under ``tests/golden/`` and compared exactly.

A test fails on any difference and shows a unified diff. After an intended change, regenerate the files
and review the diff before committing it::

    FLUJO_UPDATE_GOLDEN=1 .venv/bin/pytest tests/cli/test_explain_golden.py tests/cli/test_create_wizard.py
    git diff tests/golden/

(see tests/golden/README.md).
"""

from __future__ import annotations

import difflib
import os

import pytest

from tests.support.cli_helpers import ROOT

GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("FLUJO_UPDATE_GOLDEN") == "1"
REGENERATE = "FLUJO_UPDATE_GOLDEN=1 .venv/bin/pytest tests/cli/test_explain_golden.py tests/cli/test_create_wizard.py"


def check_golden(relative: str, actual: str) -> None:
    """``actual`` is the content of ``tests/golden/<relative>`` (written instead when FLUJO_UPDATE_GOLDEN=1)."""
    path = GOLDEN / relative
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.is_file():
        pytest.fail(f"no golden file tests/golden/{relative}; create it with: {REGENERATE}")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                f"tests/golden/{relative}",
                "actual",
            )
        )
        pytest.fail(f"the output differs from tests/golden/{relative}:\n{diff}\nIf intended, regenerate: {REGENERATE}")
