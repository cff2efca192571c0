"""Benchmarks run at full size only when they are measured (see ``benchmarks/sizes.py``)."""

from __future__ import annotations

import pytest

from benchmarks import sizes


def pytest_configure(config: pytest.Config) -> None:
    disabled = config.getoption("benchmark_disable", False) and not config.getoption("benchmark_enable", False)
    sizes.FULL = not disabled
