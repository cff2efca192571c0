"""Redaction of everything lens reads, before anything is shown.

The engine masks trace events before it stores them, but lens never relies on it: a database may come from
elsewhere or an older flujo, and step inputs and outputs are stored as they were. So every text lens reads
from a record goes through the ``Redactor`` here, once, when the run is loaded (``lens.snapshot``), and
the views only ever see masked records. Mapping keys are masked too (user data may put a token in a key),
and a path is masked segment by segment, so that the same step always has the same masked path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from core.ports import RunRecord, StepRecord, TraceEvent
from core.redaction import Redactor


def value(data: Any, redactor: Redactor) -> Any:
    """``data`` (JSON-like) with every text, keys included, masked."""
    if isinstance(data, str):
        return redactor.text(data)
    if isinstance(data, Mapping):
        return {redactor.text(str(key)): value(item, redactor) for key, item in data.items()}
    if isinstance(data, list | tuple):
        return [value(item, redactor) for item in data]
    return data


def text(data: str | None, redactor: Redactor) -> str | None:
    return None if data is None else redactor.text(data)


def path(data: str, redactor: Redactor) -> str:
    return "/".join(redactor.text(segment) for segment in data.split("/"))


def run(record: RunRecord, redactor: Redactor) -> RunRecord:
    return dataclasses.replace(
        record,
        pipeline_name=redactor.text(record.pipeline_name),
        source=text(record.source, redactor),
        input=value(record.input, redactor),
        output=value(record.output, redactor),
        error=text(record.error, redactor),
        thread=text(record.thread, redactor),
        pause_path=None if record.pause_path is None else path(record.pause_path, redactor),
        pause_message=text(record.pause_message, redactor),
        owner=text(record.owner, redactor),
    )


def step(record: StepRecord, redactor: Redactor) -> StepRecord:
    return dataclasses.replace(
        record,
        path=path(record.path, redactor),
        name=redactor.text(record.name),
        input=value(record.input, redactor),
        output=value(record.output, redactor),
        error=text(record.error, redactor),
    )


def event(record: TraceEvent, redactor: Redactor) -> TraceEvent:
    payload = value(record.payload, redactor)
    assert isinstance(payload, dict)
    return dataclasses.replace(record, path=path(record.path, redactor), payload=payload)
