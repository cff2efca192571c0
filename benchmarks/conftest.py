"""Benchmarks run at full size only when they are measured (see ``benchmarks/sizes.py``), and share the
tests' throwaway PostgreSQL server (tests/support/postgres_server.py).

Whole ``flujo`` processes are measured as users run them: with flujo's modules compiled to bytecode (pip and
``make`` compile them; where ``PYTHONDONTWRITEBYTECODE`` is set, as on CI machines, every process would
otherwise recompile them, about 0.2 s each), so they are compiled once before measuring, and so are the methods
of flujo's dataclasses (``python -m flujo_cli.compile_methods``), which ``make`` compiles too."""

from __future__ import annotations

import compileall
from pathlib import Path

import pytest

from benchmarks import sizes
from benchmarks.startup_ratio import compile_methods
from tests.conftest import isolated_environment, postgres_server, postgres_uri, pytest_collection_modifyitems

# The tests' rules hold here too (tests/conftest.py): each benchmark starts isolated, with a time limit.
__all__ = ["isolated_environment", "postgres_server", "postgres_uri", "pytest_collection_modifyitems"]


def pytest_configure(config: pytest.Config) -> None:
    disabled = config.getoption("benchmark_disable", False) and not config.getoption("benchmark_enable", False)
    sizes.FULL = not disabled
    if sizes.FULL:
        root = Path(__file__).resolve().parent.parent
        for package in ("core", "blueprints", "lens", "flujo_cli"):
            compileall.compile_dir(root / package, quiet=1, workers=0)
        compile_methods(root)  # and the methods of flujo's dataclasses, as make does
