"""Shared pytest fixtures. Append new fixtures below; keep each one small and documented."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running fake OpenAI/Anthropic server on 127.0.0.1 (see tests/fakes/openai_server.py)."""
    with FakeLLM() as server:
        yield server


@pytest.fixture
def state_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated run store for CLI tests: FLUJO_STATE_URI points into tmp_path; no provider env leaks in."""
    db = tmp_path / "state" / "flujo.db"
    monkeypatch.setenv("FLUJO_STATE_URI", str(db))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return db


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The superuser URI of a PostgreSQL server for this test session (tests/postgres_server.py): started on
    first use, stopped at the end, and exported as FLUJO_TEST_POSTGRES_URI for subprocesses. Skipped with
    the reason when none can be started, except under CI, where that fails."""
    from tests import postgres_server

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
    from tests.postgres_server import empty_store_uri

    return empty_store_uri(postgres_server)
