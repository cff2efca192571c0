"""Shared pytest fixtures and the suite's rules. Append new fixtures below; keep each one small and documented.

Every test starts isolated (``isolated_environment``, autouse; the benchmarks use it too): its working
directory is its own ``tmp_path``; ``HOME`` is an empty folder of its own and neither ``XDG_CONFIG_HOME`` nor
``XDG_CACHE_HOME`` is set, so no test reads the user's settings file (``~/.config/flujo/config.toml``) or
another test's cache (flujo_cli/user_cache.py); no ``FLUJO_*`` (except the test
suite's own ``FLUJO_TEST_*``), ``OPENAI_*``, ``ANTHROPIC_*``, ``OLLAMA_*`` or ``OTEL_*`` variable, no variable whose
name flujo reads as a secret (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_KEY``, ``*PASSWORD``: their
values are masked in every trace) and none that sets a terminal's width or colours (``COLUMNS``, ``LINES``,
``NO_COLOR``, ``FORCE_COLOR``) is inherited from the shell that started pytest. So a test that needs a
file, a folder, a setting or a width says so itself: ``monkeypatch.chdir(ROOT)`` for paths relative to the
repository, ``monkeypatch.setenv``, or ``env={...}`` for a subprocess (whose ``os.environ`` is the isolated
one). Output a test reads is never wrapped at a width it was not given: ask for ``--json``, or set the width.

The processes a test starts get Ctrl-C's default action even when pytest itself was started with it
ignored, as a shell does for a command it runs in the background (``pytest_configure``).

Every test has a time limit (pytest-timeout; pyproject.toml): 120 s, or 600 s for one marked
``@pytest.mark.slow``. It only ends a test that hangs: a test waits for an event (a line on a pipe, a row
in the store, a file appearing), never for an amount of time, so that it passes on a loaded machine too.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fakes.openai_server import FakeLLM

SLOW_TIMEOUT_S = 600  # the limit of a test marked slow; the others have pyproject.toml's ``timeout``

# What no test inherits from the shell (see the module docstring).
_INHERITED_PREFIXES = ("FLUJO_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "OTEL_")
_KEPT_PREFIXES = ("FLUJO_TEST_",)  # the test suite's own settings (tests/support/postgres_server.py)
_SECRET_NAME = re.compile(r"(?i)(_API_KEY|_TOKEN|_SECRET|_KEY|PASSWORD)$")  # as core.settings.config.secret_values
_TERMINAL = frozenset({"COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR"})
# Where the user's settings file is (core.settings.layers) and the command's cache (flujo_cli/user_cache.py).
_USER_FILES = frozenset({"XDG_CONFIG_HOME", "XDG_CACHE_HOME"})


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C keeps its usual action in the processes tests start. A shell that runs a command in the
    background (``make test &``, ``nohup``, a script's ``cmd &``) starts it with SIGINT ignored, and every
    process it starts inherits that: a ``flujo`` told to stop by a test would then run on. From a terminal
    pytest already has Python's handler; here it gets it back, and its children start with the default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked slow gets ``SLOW_TIMEOUT_S`` instead of the default limit, unless it names its own; so
    does every benchmark when they are measured (``--benchmark-enable``: full size, benchmarks/sizes.py)."""
    measuring = bool(config.getoption("benchmark_enable", False))
    for item in items:
        slow = measuring or item.get_closest_marker("slow") is not None
        if slow and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


def _inherited(name: str) -> bool:
    if name.startswith(_KEPT_PREFIXES):
        return False
    return (
        name.startswith(_INHERITED_PREFIXES)
        or name in _TERMINAL
        or name in _USER_FILES
        or _SECRET_NAME.search(name) is not None
    )


@pytest.fixture(autouse=True)
def isolated_environment(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test: the working directory is ``tmp_path``, ``HOME`` an empty folder (with no user settings
    file), and no setting, secret or terminal width comes from the shell that started pytest (the module
    docstring lists them)."""
    for name in [name for name in os.environ if _inherited(name)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running fake OpenAI/Anthropic server on 127.0.0.1 (see tests/support/fakes/openai_server.py)."""
    with FakeLLM() as server:
        yield server


@pytest.fixture
def state_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run store of its own for CLI tests: FLUJO_STATE_URI points into tmp_path (the working directory, and
    no provider setting leaks in: ``isolated_environment``)."""
    db = tmp_path / "state" / "flujo.db"
    monkeypatch.setenv("FLUJO_STATE_URI", str(db))
    return db


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The superuser URI of a PostgreSQL server for this test session (tests/support/postgres_server.py): started on
    first use, stopped at the end, and exported as FLUJO_TEST_POSTGRES_URI for subprocesses. Skipped with
    the reason when none can be started, except under CI, where that fails."""
    from tests.support import postgres_server

    try:
        server = postgres_server.start()
    except postgres_server.NoServer as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL tests: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")
    previous = os.environ.get(postgres_server.ENV_URI)
    os.environ[postgres_server.ENV_URI] = server.uri
    try:
        yield server.uri
    finally:
        if previous is None:
            os.environ.pop(postgres_server.ENV_URI, None)
        server.stop()


@pytest.fixture
def postgres_uri(postgres_server: str) -> str:
    """The URI of an empty run store on the session's PostgreSQL server: a new schema of its own (its
    search_path), so tests share the server and cost a CREATE SCHEMA each, not a CREATE DATABASE."""
    from tests.support.postgres_server import empty_store_uri

    return empty_store_uri(postgres_server)
