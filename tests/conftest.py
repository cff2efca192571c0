"""Shared pytest fixtures. Append new fixtures below; keep each one small and documented."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeLLM


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running fake OpenAI/Anthropic server on 127.0.0.1 (see tests/fakes/openai_server.py)."""
    with FakeLLM() as server:
        yield server
