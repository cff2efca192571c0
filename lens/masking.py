"""Redaction of everything lens reads, before anything is shown.

The engine masks trace events before it stores them, but lens never relies on it: a database may come from
elsewhere or an older flujo, and step inputs and outputs are stored as they were. So every text lens reads
from a record goes through the ``Redactor`` here, once, when the run is loaded (``lens.snapshot``), and
the views only ever see masked records. The value under a sensitive key (``{"password": ...}``,
``core.text.redaction.SENSITIVE_KEYS``) is masked whole. Mapping keys are masked too (user data may put a token in
a key), and a path is masked segment by segment, so that the same step always has the same masked path.

A conversation's turns come back in every prompt that injected them, so a ``Masker`` remembers each text
it masked for as long as it lives (one load): the regular expressions run once per distinct text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from core import Redactor, RunRecord, StepRecord, TraceEvent, masked_under_key, sensitive_key


class Masker:
    """Masks records with ``redactor``, remembering what it masked."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._done: dict[str, str] = {}
        self._paths: dict[str, str] = {}  # a step's path comes back in each of its events

    def text(self, data: str) -> str:
        done = self._done.get(data)
        if done is None:
            done = self._done[data] = self.redactor.text(data)
        return done

    def value(self, data: Any) -> Any:
        """``data`` (JSON-like) with every text, keys included, masked."""
        kind = type(data)  # the exact types first: the store gives str, dict and list (an ABC check is slow)
        if kind is str:
            return self._done.get(data) or self.text(data)
        if kind is dict or isinstance(data, Mapping):
            done, text, value = self._done, self.text, self.value
            return {
                (done.get(key) or text(key)) if type(key) is str else text(str(key)): (
                    masked_under_key(item)
                    if sensitive_key(key)  # {"token": "..."}: the key says the value is a secret
                    else (done.get(item) or text(item))
                    if type(item) is str
                    else value(item)
                )
                for key, item in data.items()
            }
        if kind is list or isinstance(data, list | tuple):
            return [self.value(item) for item in data]
        if isinstance(data, str):  # a str subclass
            return self.text(data)
        return data

    def optional(self, data: str | None) -> str | None:
        return None if data is None else self.text(data)

    def path(self, data: str) -> str:
        done = self._paths.get(data)
        if done is None:
            done = self._paths[data] = "/".join(self.text(segment) for segment in data.split("/"))
        return done

    def run(self, record: RunRecord) -> RunRecord:
        return dataclasses.replace(
            record,
            pipeline_name=self.text(record.pipeline_name),
            source=self.optional(record.source),
            input=self.value(record.input),
            output=self.value(record.output),
            error=self.optional(record.error),
            thread=self.optional(record.thread),
            pause_path=None if record.pause_path is None else self.path(record.pause_path),
            pause_message=self.optional(record.pause_message),
            owner=self.optional(record.owner),
            options=None if record.options is None else self.value(record.options),
        )

    def step(self, record: StepRecord) -> StepRecord:
        # Built field by field rather than with dataclasses.replace, which costs three times as much (a run
        # has thousands of steps); tests/lens/test_masking.py fails if StepRecord gains a field not copied.
        return StepRecord(
            run_id=record.run_id,
            path=self.path(record.path),
            name=self.text(record.name),
            kind=record.kind,
            status=record.status,
            input=self.value(record.input),
            output=self.value(record.output),
            error=self.optional(record.error),
            started_at=record.started_at,
            duration_s=record.duration_s,
            usage=record.usage,
        )

    def event(self, record: TraceEvent) -> TraceEvent:
        payload = self.value(record.payload)
        assert isinstance(payload, dict)
        return TraceEvent(kind=record.kind, path=self.path(record.path), payload=payload, ts=record.ts)
