"""``lens.masking``: every text of a record is masked (keys and path segments too) and nothing else of the
record is lost on the way."""

from __future__ import annotations

import dataclasses
from typing import Any

from core import RunRecord, StepRecord, TraceEvent, Usage
from core.text.redaction import MASK, Redactor
from lens.masking import Masker

KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl"


def distinct_values(cls: Any) -> dict[str, Any]:
    """A value for every field of ``cls``: texts with a secret in them, other types left distinctive."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name == "usage":
            values[field.name] = Usage(input_tokens=3, output_tokens=4, requests=5, cost_usd=0.5)
        elif field.name in ("status",):
            values[field.name] = "completed"
        elif field.type in ("float", "float | None"):
            values[field.name] = 123.25
        elif field.name in ("run_id", "parent_run_id", "kind", "source_hash"):
            values[field.name] = f"{field.name}-value"
        else:
            values[field.name] = f"{field.name} {KEY}"
    return values


def test_every_field_of_a_step_survives_and_every_text_is_masked() -> None:
    record = StepRecord(**distinct_values(StepRecord) | {"input": {f"key {KEY}": [KEY]}})
    masked = Masker(Redactor()).step(record)
    for field in dataclasses.fields(StepRecord):
        before, after = getattr(record, field.name), getattr(masked, field.name)
        if isinstance(before, str) and KEY in before:
            assert after == before.replace(KEY, MASK), field.name
        elif field.name == "input":
            assert after == {f"key {MASK}": [MASK]}
        else:
            assert after == before, f"{field.name} was not copied"


def test_every_field_of_a_run_survives_and_every_text_is_masked() -> None:
    record = RunRecord(**distinct_values(RunRecord) | {"status": "paused"})
    masked = Masker(Redactor()).run(record)
    for field in dataclasses.fields(RunRecord):
        before, after = getattr(record, field.name), getattr(masked, field.name)
        expected = before.replace(KEY, MASK) if isinstance(before, str) else before
        assert after == expected, field.name


def test_an_event_path_is_masked_by_segment() -> None:
    event = TraceEvent("agent.prompt", f"chat/password={KEY}/ask", {"messages": [{"content": KEY}]}, 5.0)
    masked = Masker(Redactor()).event(event)
    assert masked == TraceEvent("agent.prompt", f"chat/password={MASK}/ask", {"messages": [{"content": MASK}]}, 5.0)
