"""Shared pytest fixtures. Append new fixtures below; keep each one small and documented."""

from __future__ import annotations

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
