"""What the conversation needs of the run it is part of: the journal, the usage meter, trace events, commits.

A summary is an agent call of its own, made by the history manager before the call it shortens: it is
reserved against the run's limits, traced and journaled like any step, and replayed from the journal on
resume. The step policies' frame (``core.policies.frame.Frame``) provides all of that; this protocol names
the part the conversation uses, so that the conversation package never imports the policies (they import
it: docs/architecture.md).

``Held`` is the frame's reservation type (what a call in flight holds against the limits until its usage
replaces it); the conversation only hands it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from core.model.calls import ChatMessage
from core.model.errors import FlujoError
from core.model.events import KnownEvent
from core.model.records import StepRecord, StepStatus, TraceEvent
from core.model.usage import ZERO_USAGE, Usage
from core.ports import Agent

if TYPE_CHECKING:  # only types here: a replay's and a simulated person's code loads when one is used
    from core.replay.recording import RecordedCall

Held = TypeVar("Held")


class RunFrame(Protocol[Held]):
    """The run's frame as the history manager uses it (``Frame`` satisfies it)."""

    journal: Mapping[str, StepRecord]  # the steps an earlier attempt of this run committed
    replays: int  # steps replayed from the journal instead of executed
    summarizer_failures: int  # consecutive; the summarize strategy stops trying at three

    def event(self, path: str, event: KnownEvent) -> TraceEvent: ...

    def served_reply(self, prompt: TraceEvent) -> RecordedCall | None: ...

    def served_event(self, path: str, call: RecordedCall, output: Any = None) -> TraceEvent: ...

    async def begin_call(
        self, path: str, step: str, agent: Agent, sent: Sequence[ChatMessage], *, started: float
    ) -> Held: ...

    def abandon(self, held: Held | None) -> None: ...

    def add_usage(self, usage: Usage, *, releasing: Held | None = None) -> None: ...

    def charge(self, usage: Usage, *, releasing: Held | None = None) -> None: ...

    async def commit(
        self,
        *,
        path: str,
        name: str,
        kind: str,
        status: StepStatus,
        started: float,
        input: Any = None,
        output: Any = None,
        error: str | None = None,
        usage: Usage = ZERO_USAGE,
        events: Sequence[TraceEvent] = (),
        failure: FlujoError | None = None,
    ) -> StepRecord: ...
