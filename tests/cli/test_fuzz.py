"""Fuzzing: generated and mutated blueprints and answers files never crash flujo (tests/support/fuzz_input.py).

The fuzzer runs in a child process capped at ~2 GB with a generous hang guard (tests/support/capped.py), so an
input that explodes fails this test instead of the machine. Its examples are derandomized: the same on
every run, so a failure here reproduces with ``python -m tests.support.fuzz_input``.
"""

from __future__ import annotations

import pytest

from tests.support.capped import capped


@pytest.mark.slow
def test_generated_and_mutated_input_never_crashes_and_every_error_is_located() -> None:
    done = capped(["-m", "tests.support.fuzz_input"], timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "0 properties failed" in done.stdout
