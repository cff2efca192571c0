"""Redaction of everything lens reads, before anything is shown.

The engine masks trace events before it stores them, but lens never relies on it: a database may come from
elsewhere or an older flujo, and step inputs and outputs are stored as they were. So every text lens reads
from a record goes through the ``Redactor`` here, once, when the run is loaded (``lens.snapshot``), and
the views only ever see masked records. The value under a sensitive key (``{"password": ...}``,
``core.text.redaction.SENSITIVE_KEYS``) is masked whole. Mapping keys are masked too (user data may put a token in
a key), and a path is masked segment by segment, so that the same step always has the same masked path.

A conversation's turns come back in every prompt that injected them, so a ``Masker`` remembers the texts
it masked: the regular expressions run once per distinct text. It remembers the latest ones (``REMEMBERED``
texts, or ``REMEMBERED_CHARS`` characters), so that reading a run a part at a time (``lens.parts``) keeps
its memory flat: a text is masked again only if it comes back after that many others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from core import Redactor, RunRecord, StepRecord, TraceEvent, masked_under_key, sensitive_key

REMEMBERED = 8_192
"""How many of the latest texts a ``Masker`` remembers (and as many before them, as long as they come back)."""
REMEMBERED_CHARS = 4_000_000
"""How many characters of them, at most (and as many before them)."""


class Masker:
    """Masks records with ``redactor``, remembering what it masked.

    ``again``: what it gives is masked once more (``lens.json_trace``, as ``masked_document`` does): it keeps
    the mappings and lists it gave back as they were (nothing in them to mask) until ``forget``, and gives
    them back at once when they come again, instead of walking them a second time."""

    def __init__(self, redactor: Redactor, *, again: bool = False) -> None:
        self.redactor = redactor
        self._done: dict[str, str] = {}  # the latest texts masked (what ``value`` looks in first)
        self._older: dict[str, str] = {}  # the ones before them
        self._chars = 0  # in ``_done``
        self._paths: dict[str, str] = {}  # a step's path comes back in each of its events
        self._older_paths: dict[str, str] = {}
        self._keys: dict[Any, tuple[str, bool]] = {}  # a mapping key → ``_key``: a run repeats a few keys
        # id → a mapping or list ``value`` gave back unchanged, held so that no other object takes its id.
        self._kept: dict[int, Any] | None = {} if again else None

    def _key(self, key: Any) -> tuple[str, bool]:
        """A mapping key masked, and whether it says its value is a secret (``sensitive_key``)."""
        if len(self._keys) >= REMEMBERED:
            self._keys = {}
        found = self._keys[key] = (self.text(key if type(key) is str else str(key)), sensitive_key(key))
        return found

    def forget(self) -> None:
        """Let go of the mappings and lists kept (``again``)."""
        if self._kept:
            self._kept = {}

    def text(self, data: str) -> str:
        done = self._done.get(data)
        if done is None:
            done = self._older.pop(data, None)
            if done is None:
                masked = self.redactor.text(data)
                done = data if masked == data else masked  # one string, not two equal ones
            self._remember(data, done)
        return done

    def _remember(self, data: str, done: str) -> None:
        if len(self._done) >= REMEMBERED or self._chars >= REMEMBERED_CHARS:
            self._older, self._done, self._chars = self._done, {}, 0
        self._done[data] = done
        self._chars += len(data)

    def value(self, data: Any) -> Any:
        """``data`` (JSON-like) with every text, keys included, masked."""
        kind = type(data)  # the exact types first: the store gives str, dict and list (an ABC check is slow)
        if kind is str:
            return self._done.get(data) or self.text(data)
        kept = self._kept
        if kind is dict or isinstance(data, Mapping):
            if kept is not None and id(data) in kept:
                return data
            done, text, value, keys, key_of = self._done, self.text, self.value, self._keys, self._key
            masked = {
                (known := keys.get(key) or key_of(key))[0]: (
                    masked_under_key(item)
                    if known[1]  # {"token": "..."}: the key says the value is a secret
                    else (done.get(item) or text(item))
                    if type(item) is str
                    else value(item)
                )
                for key, item in data.items()
            }
            if kept is not None and kind is dict and masked == data:  # nothing masked: it masks to itself
                kept[id(data)] = data
                return data
            return masked
        if kind is list or isinstance(data, list | tuple):
            if kept is not None and id(data) in kept:
                return data
            items = [self.value(item) for item in data]
            if kept is not None and kind is list and items == data:
                kept[id(data)] = data
                return data
            return items
        if isinstance(data, str):  # a str subclass
            return self.text(data)
        return data

    def optional(self, data: str | None) -> str | None:
        return None if data is None else self.text(data)

    def path(self, data: str) -> str:
        done = self._paths.get(data)
        if done is None:
            done = self._older_paths.pop(data, None)
            if done is None:
                masked = "/".join(self.text(segment) for segment in data.split("/"))
                done = data if masked == data else masked
            if len(self._paths) >= REMEMBERED:
                self._older_paths, self._paths = self._paths, {}
            self._paths[data] = done
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
