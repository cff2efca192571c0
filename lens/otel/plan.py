"""A run as OpenTelemetry spans in the GenAI conventions, planned from what the store holds.

``plan_spans(snapshot)`` turns a ``RunSnapshot`` (masked by lens, as every view) into ``PlannedSpan`` values;
``lens.otel.sending`` hands them to the OpenTelemetry SDK. One plan serves both ways a run leaves flujo: live,
as each run ends (``flujo run``), and after the fact (``flujo lens export RUN --otlp``). Nothing here imports
OpenTelemetry.

The tree::

    invoke_workflow {blueprint}     the run; a sub-workflow's child run is one too, under the step that started it
    ├── invoke_agent {step}         an agent step: a step whose agent was called, or whose model used tools
    │   ├── chat {model}            each call of its model (a tool loop's turn K, at P/model/K)
    │   └── execute_tool {tool}     each tool call (P/tool/N); the question approving it is its event
    └── chat {model}                a model call outside an agent step (a summary, a simulated person)

Each human question is a span event (``flujo.question``) of the span it was asked in, with its path and
how long it waited (``flujo.wait_s``: its step's duration, from the question to the answer while the run ran);
so is each step that failed and is no span of its own (``flujo.step.failed``: a template's error, say).
A script agent (``python:``, ``command:``) is an ``invoke_agent`` span without a ``chat`` span: no model is
called. Message content (prompts, replies, inputs, outputs, tool arguments and results, questions and
answers) is planned only with ``capture_content``.

Invariants: the trace id is the run's id (16 hex digits) followed by 16 zeros, and each span's id is a hash
of the run id, its path and what it is: planning the same run again gives the same spans, so a re-export
is the same trace. Start and end times are the stored ones. ``since`` (the live case: when this process took
the run) keeps only the spans that start from then on, and the run's own span only when the run has ended
from then on: the spans an earlier process of a resumed run sent are not sent again, and the run's span is
sent once, by the process that ends it (a paused run's end is not known yet).
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from core import (
    MODEL_TURN_KIND,
    TOOL_CALL_KIND,
    PromptSent,
    QuestionAnswered,
    ReplyCut,
    ReplyReceived,
    RunRecord,
    StepErrored,
    StepRecord,
    TraceEvent,
    Usage,
)
from lens.otel import genai
from lens.otel.genai import Attributes
from lens.snapshot import RunSnapshot

ENDED = frozenset({"completed", "failed", "limit_reached", "aborted", "cancelled"})
"""The statuses of a run that has ended: its span has an end. (A failed run may still be resumed; a resume
that ends it again sends its span again, with the new end.)"""

_FAILED = frozenset({"failed", "limit_reached", "aborted"})  # a run's span with status ERROR
_HEX_ID = re.compile(r"[0-9a-f]{16}")
_SCRIPTS = ("python", "command")  # agents that call no model: their labels' prefixes (core/agents/script.py)
_QUESTION_KIND = "hitl"
_AGENT_KIND = "step"  # an agent step's (an ensemble's participants' too); a summary's record is of its own kind


@dataclass(frozen=True)
class PlannedEvent:
    """A span event: its name, when it happened (seconds since the epoch) and its attributes."""

    name: str
    at: float
    attributes: Attributes


@dataclass(frozen=True)
class PlannedSpan:
    """One span to send: ids, times in seconds since the epoch, attributes, events, and an error description
    when it failed. ``client``: the span kind is CLIENT (a call to a model), otherwise INTERNAL."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start: float
    end: float
    attributes: Attributes
    events: tuple[PlannedEvent, ...] = ()
    error: str | None = None
    client: bool = False


def trace_id_of(run_id: str) -> int:
    """The trace id of a run: its 16 hex digits followed by 16 zeros (a run id of another form: a hash)."""
    if _HEX_ID.fullmatch(run_id):
        return int(run_id + "0" * 16, 16)
    return int.from_bytes(hashlib.sha256(b"flujo trace\0" + run_id.encode()).digest()[:16], "big") or 1


def span_id_of(run_id: str, path: str, role: str) -> int:
    """The id of the span ``role`` (``run``, ``invoke_agent``, ``chat 2`` ...) of the step at ``path``."""
    digest = hashlib.sha256(f"{run_id}\0{path}\0{role}".encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


def plan_spans(
    snapshot: RunSnapshot, *, capture_content: bool = False, since: float | None = None
) -> list[PlannedSpan]:
    """The spans of the run of ``snapshot`` and of its child runs, in the order they started (the run's own
    span first, when it is planned). ``since``: see the module's docstring."""
    record = snapshot.record
    planner = _Planner(trace_id_of(record.run_id), capture_content, since, record.thread)
    planner.run(snapshot, parent_id=None)
    return sorted(planner.spans, key=lambda span: span.start)


@dataclass
class _Planner:
    trace_id: int
    capture: bool
    since: float | None
    session: str | None
    spans: list[PlannedSpan] = field(default_factory=list)

    def run(self, snapshot: RunSnapshot, *, parent_id: int | None) -> None:
        record = snapshot.record
        run = _Run(record.run_id, snapshot.steps, snapshot.events)
        # The span events of each span: the questions asked in it, and its steps that failed and are no span.
        events_of: dict[int, list[PlannedEvent]] = defaultdict(list)
        for step in run.steps.values():
            if step.kind == _QUESTION_KIND:
                events_of[run.parent_of(step.path)].append(self._question(step, run.events.get(step.path, ())))
            elif step.status == "failed" and step.path not in run.owners:
                failure: Attributes = {genai.STEP_PATH: step.path, genai.ERROR_MESSAGE: step.error or "failed"}
                events_of[run.parent_of(step.path)].append(PlannedEvent(genai.STEP_FAILED, step.started_at, failure))
        if self._keeps_run(record):
            root_attributes = self._run_attributes(record)
            start, end = record.created_at, _run_end(snapshot)
            error = (record.error or record.status) if record.status in _FAILED else None
            if error is not None:
                root_attributes[genai.ERROR_TYPE] = record.status
            self._add(
                f"{genai.WORKFLOW} {record.pipeline_name}", run.root, parent_id, start, end, root_attributes,
                events_of[run.root], error,
            )  # fmt: skip
        for step in run.steps.values():
            span_id = run.owners.get(step.path)
            if span_id is None or step.kind not in (_AGENT_KIND, MODEL_TURN_KIND, TOOL_CALL_KIND):
                continue
            if step.kind == MODEL_TURN_KIND:
                self._turn(run, step, span_id, events_of[span_id])
            elif step.kind == TOOL_CALL_KIND:
                self._tool(run, step, span_id, events_of[span_id])
            else:
                self._agent(run, step, span_id, events_of[span_id])
        for path, events in run.events.items():
            found = run.steps.get(path)
            if found is None or found.kind != MODEL_TURN_KIND:
                self._calls(run, path, events, found)
        for child_id, child in snapshot.children.items():
            where = snapshot.child_paths.get(child_id)
            self.run(child, parent_id=run.root if where is None else run.owners.get(where, run.parent_of(where)))

    def _keeps_run(self, record: RunRecord) -> bool:
        if self.since is None:
            return True
        return record.status in ENDED and (record.finished_at or 0.0) >= self.since

    def _keeps(self, start: float) -> bool:
        return self.since is None or start >= self.since

    def _add(
        self,
        name: str,
        span_id: int,
        parent_id: int | None,
        start: float,
        end: float,
        attributes: Attributes,
        events: Iterable[PlannedEvent] = (),
        error: str | None = None,
        *,
        client: bool = False,
    ) -> None:
        if self.session is not None:
            attributes[genai.SESSION] = attributes[genai.CONVERSATION] = self.session
        span = PlannedSpan(name, self.trace_id, span_id, parent_id, start, max(start, end), attributes,
                           tuple(sorted(events, key=lambda e: e.at)), error, client)  # fmt: skip
        self.spans.append(span)

    def _run_attributes(self, record: RunRecord) -> Attributes:
        attributes: Attributes = {
            genai.OPERATION: genai.WORKFLOW,
            genai.WORKFLOW_NAME: record.pipeline_name,
            genai.RUN_ID: record.run_id,
            genai.RUN_STATUS: record.status,
            **_usage(record.usage),
        }
        if record.parent_run_id is not None:
            attributes[genai.PARENT_RUN_ID] = record.parent_run_id
        if record.pause_path is not None:
            attributes[genai.PAUSED_AT] = record.pause_path
        if self.capture:
            attributes[genai.INPUT_MESSAGES] = genai.user_message(record.input)
            if record.output is not None:
                attributes[genai.OUTPUT_MESSAGES] = genai.output_message(record.output)
        return attributes

    def _agent(self, run: _Run, step: StepRecord, span_id: int, events: list[PlannedEvent]) -> None:
        if not self._keeps(step.started_at):
            return
        attributes: Attributes = {
            genai.OPERATION: genai.AGENT,
            genai.AGENT_NAME: step.name,
            genai.STEP_PATH: step.path,
            genai.STEP_STATUS: step.status,
            **_usage(step.usage),
        }
        label = run.labels.get(step.path)
        if label is not None:
            provider, model = genai.provider_and_model(label)
            attributes[genai.PROVIDER], attributes[genai.REQUEST_MODEL] = provider, model
        else:
            attributes[genai.PROVIDER] = "flujo"
        if self.capture:
            attributes[genai.INPUT_MESSAGES] = genai.user_message(step.input)
            if step.output is not None:
                attributes[genai.OUTPUT_MESSAGES] = genai.output_message(step.output)
        error = _failed(step, attributes)
        end = step.started_at + step.duration_s
        self._add(f"{genai.AGENT} {step.name}", span_id, run.parent_of(step.path), step.started_at, end, attributes,
                  events, error)  # fmt: skip

    def _turn(self, run: _Run, step: StepRecord, span_id: int, events: list[PlannedEvent]) -> None:
        """A tool loop's model turn: one call of the model, its prompt and reply the events at its path."""
        if not self._keeps(step.started_at):
            return
        found = run.events.get(step.path, ())
        prompt = next((e.data for e in found if isinstance(e.data, PromptSent)), None)
        reply = next((e.data for e in found if isinstance(e.data, ReplyReceived)), None)
        attributes = self._chat_attributes(step.path, prompt, reply, run.labels.get(step.path))
        attributes[genai.STEP_STATUS] = step.status
        error = _failed(step, attributes)
        end = step.started_at + step.duration_s
        name = f"{genai.CHAT} {attributes[genai.REQUEST_MODEL]}"
        self._add(name, span_id, run.parent_of(step.path), step.started_at, end, attributes, events, error,
                  client=True)  # fmt: skip

    def _calls(self, run: _Run, path: str, events: list[TraceEvent], step: StepRecord | None) -> None:
        """The model calls made at ``path`` outside a tool loop's turns: each ``PromptSent`` and what ended it
        (its reply, the step's error, else the step's end)."""
        parent = run.owners.get(path, run.parent_of(path))
        index = 0
        for at, event in enumerate(events):
            prompt = event.data
            if not isinstance(prompt, PromptSent) or genai.provider_and_model(prompt.agent)[0] in _SCRIPTS:
                continue
            index += 1
            reply: ReplyReceived | None = None
            error: str | None = None
            end = step.started_at + step.duration_s if step is not None else event.ts
            for later in events[at + 1 :]:
                data = later.data
                if isinstance(data, PromptSent):
                    break
                if isinstance(data, ReplyReceived | StepErrored):
                    reply = data if isinstance(data, ReplyReceived) else None
                    error = data.error if isinstance(data, StepErrored) else None
                    end = later.ts
                    break
                if isinstance(data, ReplyCut):
                    end = later.ts
            if not self._keeps(event.ts):
                continue
            attributes = self._chat_attributes(path, prompt, reply, prompt.agent)
            if error is not None:
                attributes[genai.ERROR_TYPE] = "failed"
            name = f"{genai.CHAT} {attributes[genai.REQUEST_MODEL]}"
            span_id = span_id_of(run.run_id, path, f"{genai.CHAT} {index}")
            self._add(name, span_id, parent, event.ts, end, attributes, (), error, client=True)

    def _chat_attributes(
        self, path: str, prompt: PromptSent | None, reply: ReplyReceived | None, label: str | None
    ) -> Attributes:
        provider, model = genai.provider_and_model(label or (reply.model if reply and reply.model else "unknown"))
        attributes: Attributes = {
            genai.OPERATION: genai.CHAT,
            genai.PROVIDER: provider,
            genai.REQUEST_MODEL: model,
            genai.STEP_PATH: path,
        }
        if prompt is not None:
            if prompt.purpose is not None:
                attributes[genai.PURPOSE] = prompt.purpose
            if prompt.simulated_person is not None:
                attributes[genai.SIMULATED_PERSON] = prompt.simulated_person
            if self.capture:
                attributes[genai.INPUT_MESSAGES] = genai.input_messages(prompt.messages)
        if reply is not None:
            if reply.model:
                attributes[genai.RESPONSE_MODEL] = genai.provider_and_model(reply.model)[1]
            if reply.attempts is not None:
                attributes[genai.ATTEMPTS] = reply.attempts
            if reply.usage is not None:
                attributes.update(_usage(Usage.from_dict(reply.usage)))
            if reply.replayed_from is not None:
                attributes[genai.REPLAYED_FROM] = reply.replayed_from
            if self.capture:
                attributes[genai.OUTPUT_MESSAGES] = genai.output_message(reply.output)
        return attributes

    def _tool(self, run: _Run, step: StepRecord, span_id: int, events: list[PlannedEvent]) -> None:
        if not self._keeps(step.started_at):
            return
        called = step.input if isinstance(step.input, Mapping) else {}
        result = step.output if isinstance(step.output, Mapping) else {}
        attributes: Attributes = {
            genai.OPERATION: genai.TOOL,
            genai.TOOL_NAME: step.name,
            genai.TOOL_TYPE: "function",
            genai.STEP_PATH: step.path,
            genai.STEP_STATUS: step.status,
        }
        if isinstance(called.get("id"), str):
            attributes[genai.TOOL_CALL_ID] = called["id"]
        if result.get("declined") is True:
            attributes[genai.DECLINED] = True
        if self.capture:
            attributes[genai.TOOL_ARGUMENTS] = genai.as_json(called.get("arguments"))
            if "content" in result:
                attributes[genai.TOOL_RESULT] = genai.text_of(result["content"])
        error = _failed(step, attributes)
        # The model was told the tool failed; one the person declined did not fail (flujo.tool.declined says so).
        if error is None and result.get("error") is True and result.get("declined") is not True:
            attributes[genai.ERROR_TYPE] = "tool_error"
            error = genai.text_of(result.get("content")) if self.capture else "the tool call failed"
        end = step.started_at + step.duration_s
        self._add(f"{genai.TOOL} {step.name}", span_id, run.parent_of(step.path), step.started_at, end, attributes,
                  events, error)  # fmt: skip

    def _question(self, step: StepRecord, events: Iterable[TraceEvent]) -> PlannedEvent:
        attributes: Attributes = {genai.STEP_PATH: step.path, genai.WAIT: step.duration_s}
        answered = next((e.data for e in events if isinstance(e.data, QuestionAnswered)), None)
        if answered is not None:
            attributes[genai.ANSWERED_BY] = answered.by or answered.source or "person"
        if self.capture:
            attributes[genai.QUESTION_TEXT] = genai.text_of(answered.message if answered else step.input)
            if step.output is not None:
                attributes[genai.ANSWER_TEXT] = genai.text_of(step.output)
        return PlannedEvent(genai.QUESTION, step.started_at, attributes)


class _Run:
    """One run's records, indexed: each path's record and events, which paths are spans (``owners``: path →
    span id), and the agent label each agent step and model turn was called with (``labels``)."""

    def __init__(self, run_id: str, steps: Iterable[StepRecord], events: Iterable[TraceEvent]) -> None:
        self.run_id = run_id
        self.root = span_id_of(run_id, "", "run")
        self.steps: dict[str, StepRecord] = {}
        self.events: dict[str, list[TraceEvent]] = defaultdict(list)
        self.labels: dict[str, str] = {}
        for event in events:
            self.events[event.path].append(event)
        for step in steps:
            self.steps[step.path] = step  # a path's latest record (a step run again after a failure)
        self.owners: dict[str, int] = {}
        looped: set[str] = set()  # agent steps whose model used tools: their turns are below them
        for step in self.steps.values():
            if step.kind in (MODEL_TURN_KIND, TOOL_CALL_KIND):
                self.owners[step.path] = span_id_of(run_id, step.path, step.kind)
                looped.add(_owner_of(step.path))
        for path, found in self.events.items():
            for event in found:
                if isinstance(event.data, PromptSent):
                    self.labels.setdefault(path, event.data.agent)
                    turn = self.steps.get(path)
                    if turn is not None and turn.kind == MODEL_TURN_KIND:
                        self.labels.setdefault(_owner_of(path), event.data.agent)
        # A tool loop's agent step is its turns' and calls' parent before its own record is committed (a run
        # paused at a call's approval sends them first): its span's id is known from its path alone.
        for path in looped:
            self.owners[path] = span_id_of(run_id, path, genai.AGENT)
        for step in self.steps.values():
            if step.kind == _AGENT_KIND and step.path in self.labels:
                self.owners[step.path] = span_id_of(run_id, step.path, genai.AGENT)

    def parent_of(self, path: str) -> int:
        """The span a step at ``path`` is under: the nearest step above it that is a span, else the run's."""
        while "/" in path:
            path = path.rpartition("/")[0]
            found = self.owners.get(path)
            if found is not None:
                return found
        return self.root


def _owner_of(path: str) -> str:
    """The agent step of a tool loop's record at ``P/model/K`` or ``P/tool/N``: ``P``."""
    return path.rsplit("/", 2)[0]


def _usage(usage: Usage) -> Attributes:
    found: Attributes = {
        genai.INPUT_TOKENS: usage.input_tokens,
        genai.OUTPUT_TOKENS: usage.output_tokens,
        genai.REQUESTS: usage.requests,
    }
    if usage.cost_usd is not None:
        found[genai.COST] = usage.cost_usd
    return found


def _failed(step: StepRecord, attributes: Attributes) -> str | None:
    """The error of a failed step (its ``error.type`` set), else None."""
    if step.status != "failed":
        return None
    attributes[genai.ERROR_TYPE] = "failed"
    return step.error or "failed"


def _run_end(snapshot: RunSnapshot) -> float:
    """When the run ended, or, for one that has not (paused, interrupted, running), the last thing it did."""
    record = snapshot.record
    if record.finished_at is not None:
        return record.finished_at
    ends = [step.started_at + step.duration_s for step in snapshot.steps]
    ends.extend(event.ts for event in snapshot.events)
    return max([record.created_at, *ends])
