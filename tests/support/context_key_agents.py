"""A ``python:`` agent for tests/blueprints/test_context_keys.py: its output is fixed by no schema."""

from __future__ import annotations

from typing import Any


def decide(data: Any, context: Any) -> dict[str, Any]:
    return {"anything": data}
