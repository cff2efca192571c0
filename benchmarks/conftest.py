"""Benchmarks run at full size only when they are measured (see ``benchmarks/sizes.py``), and share the
tests' throwaway PostgreSQL server (tests/postgres_server.py)."""

from __future__ import annotations

import pytest

from benchmarks import sizes
from tests.conftest import postgres_server, postgres_uri

__all__ = ["postgres_server", "postgres_uri"]


def pytest_configure(config: pytest.Config) -> None:
    disabled = config.getoption("benchmark_disable", False) and not config.getoption("benchmark_enable", False)
    sizes.FULL = not disabled
