"""Trace events as dataclasses (core/model/events.py): every kind survives to_payload → from_payload; what this
version cannot read keeps its payload; a stored event decodes through ``TraceEvent.data``; docs/lens.md's
table of event kinds is the module's; the step kinds lens groups by are the steps that run steps."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import core.model.events
from core import (
    CONTAINER_STEP_KINDS,
    KEYED_STEP_KINDS,
    ConditionalStep,
    EnsembleStep,
    LoopStep,
    MapStep,
    ParallelStep,
    TraceEvent,
    WorkflowStep,
)
from core.model.events import (
    EVENT_TYPES,
    SUMMARY,
    AgentStarted,
    HistorySummarized,
    KnownEvent,
    LoopExited,
    PromptSent,
    QuestionAnswered,
    ReplyReceived,
    UnknownEvent,
    from_payload,
)
from tests.support.cli_helpers import ROOT

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _values(hint: Any) -> st.SearchStrategy[Any]:
    """Values of an event field's type, as JSON would give them back."""
    if hint is Any:
        return JSON
    if hint in (str, int, bool):
        return st.from_type(hint)
    if hint is float:
        return st.floats(allow_nan=False)  # NaN is not equal to itself, and JSON has no NaN
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if type(None) in args:
        (inner,) = (arg for arg in args if arg is not type(None))
        return st.none() | _values(inner)
    if origin is Mapping:
        return st.dictionaries(st.text(max_size=5), JSON, max_size=3)
    if origin is tuple:
        return st.lists(_values(args[0]), max_size=3).map(tuple)
    raise AssertionError(f"no strategy for {hint!r}: teach _values the new field type")


def _events(cls: type[KnownEvent]) -> st.SearchStrategy[KnownEvent]:
    hints = typing.get_type_hints(cls)
    fields = {f.name: _values(hints[f.name]) for f in dataclasses.fields(cls)}
    return st.builds(cls, **fields)


ANY_EVENT = st.one_of([_events(cls) for cls in EVENT_TYPES.values()])


def test_every_event_class_is_registered_under_its_own_kind() -> None:
    classes = typing.get_args(KnownEvent)
    assert sorted(EVENT_TYPES) == sorted(cls.kind for cls in classes) and len(EVENT_TYPES) == len(classes)
    assert all(EVENT_TYPES[cls.kind] is cls for cls in classes)


@given(ANY_EVENT)
def test_every_kind_round_trips_through_its_stored_payload(event: KnownEvent) -> None:
    stored = json.loads(json.dumps(event.to_payload()))  # what the store writes and reads back
    assert from_payload(event.kind, stored) == event


def test_a_field_stored_only_when_set_is_left_out_while_none() -> None:
    assert PromptSent("m", (), True).to_payload() == {"agent": "m", "messages": [], "history_injected": True}
    assert ReplyReceived("hi", "m").to_payload() == {"output": "hi", "model": "m"}
    assert LoopExited("max_loops", 3, None, 3).to_payload() == {
        "reason": "max_loops", "iterations": 3, "condition": None, "max_loops": 3,
    }  # fmt: skip


def test_an_unknown_kind_keeps_its_payload() -> None:
    event = from_payload("agent.thought", {"text": "hmm", "n": 1})
    assert event == UnknownEvent("agent.thought", {"text": "hmm", "n": 1})
    assert event.to_payload() == {"text": "hmm", "n": 1}


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("agent.started", {"agent": "command:x"}),  # a field missing
        ("agent.started", {"agent": "command:x", "attempt": "2"}),  # of another type
        ("agent.started", {"agent": "command:x", "attempt": True}),  # a boolean is no count
        ("agent.prompt", {"agent": "m", "messages": ["not a message"]}),
        ("hitl.answer", {"trace_error": "this hitl.answer event could not be recorded: ValueError: x"}),
    ],
)
def test_a_payload_that_does_not_fit_its_kind_decodes_to_an_unknown_event(kind: str, payload: dict[str, Any]) -> None:
    assert from_payload(kind, payload) == UnknownEvent(kind, payload)


def test_a_payload_may_hold_more_than_this_version_reads() -> None:
    assert from_payload("agent.started", {"agent": "a", "attempt": 2, "host": "b"}) == AgentStarted("a", 2)


def test_a_stored_event_is_read_as_its_class() -> None:
    stored = TraceEvent("hitl.answer", "chat/1/answer", {"message": "Who?", "answer": "Ada"}, 1.0)
    assert stored.data == QuestionAnswered("Who?", "Ada")
    assert stored.data is stored.data  # decoded once
    summary = TraceEvent("agent.prompt", "chat/2/ask/summarize", {"agent": "s", "messages": [], "purpose": SUMMARY}, 2)
    assert isinstance(summary.data, PromptSent) and summary.data.summarizes
    assert TraceEvent("history.summarized", "x", {"turns_replaced": 3, "turns_kept": 2}, 3.0).data == (
        HistorySummarized(3, 2)
    )


def test_the_step_kinds_lens_groups_by_are_the_steps_that_run_steps() -> None:
    keyed = {LoopStep.kind, MapStep.kind, ParallelStep.kind, ConditionalStep.kind, EnsembleStep.kind}
    assert set(KEYED_STEP_KINDS) == keyed
    assert {*KEYED_STEP_KINDS, WorkflowStep.kind} == CONTAINER_STEP_KINDS


def _kind_of_field(hint: Any) -> str:
    words = {str: "text", int: "integer", float: "number", bool: "true/false", Any: "any JSON value"}
    if hint in words:
        return words[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if type(None) in args:
        (inner,) = (arg for arg in args if arg is not type(None))
        return f"{_kind_of_field(inner)} or null"
    if origin is Mapping:
        return "object"
    if origin is tuple:
        return f"list of {_kind_of_field(args[0])}s"
    raise AssertionError(f"no words for {hint!r}")


def event_table() -> str:
    """docs/lens.md's table of trace events, made from core/model/events.py."""
    rows = ["| kind | class (`core.model.events`) | payload fields |", "|---|---|---|"]
    for kind, cls in EVENT_TYPES.items():
        hints = typing.get_type_hints(cls)
        fields = []
        for f in dataclasses.fields(cls):
            if f.metadata.get("when_set"):  # left out rather than null
                (hint,) = (arg for arg in typing.get_args(hints[f.name]) if arg is not type(None))
                fields.append(f"`{f.name}` ({_kind_of_field(hint)}, when set)")
            else:
                fields.append(f"`{f.name}` ({_kind_of_field(hints[f.name])})")
        rows.append(f"| `{kind}` | `{cls.__name__}` | {', '.join(fields)} |")
    return "\n".join(rows) + "\n"


def test_docs_list_every_event_kind_with_its_fields() -> None:
    page = (ROOT / "docs" / "lens.md").read_text(encoding="utf-8")
    table = event_table()
    assert table in page, f"docs/lens.md's table of trace events differs from core/model/events.py; it is:\n{table}"
    assert core.model.events.__doc__ is not None and "docs/lens.md" in core.model.events.__doc__
