"""What a run recorded of the calls a replay serves: every agent call (its prompt and its reply), every tool
call (its name, arguments and outcome) and every answer to a question, each at its step path. A
sub-workflow's child run is read too, its paths under its step's path (``review/draft``), as
``core.answering.replay`` names its questions.

Everything is masked as lens shows it (the events are masked when written; a tool's outcome, kept whole in
its step record, is masked here): a replay serves the mask where the run held a secret, and a case file
written from a recording (``flujo lens export --case``) holds none.

An agent call is a prompt (``agent.prompt``) followed by its reply (``agent.reply``) at the same path, or
by the failure of its step (``step.error`` at its path or its tool loop's step's, ``history.summarize_failed``
for a summarizer): a failed call is served as that failure (a branch a parallel ignores fails again, a
summary falls back again). A failure a later call at the same path superseded (the run was resumed there)
is left out, and so is a prompt whose process was killed before anything was recorded. A tool call is a
``tool.call`` event with its step record's outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from core.answering.replay import RecordedAnswer, RecordedAnswers
from core.model.errors import RunError
from core.model.events import (
    ChildRunStarted,
    PromptSent,
    QuestionAnswered,
    ReplyReceived,
    StepErrored,
    SummaryFailed,
    ToolCalled,
)
from core.model.records import TOOL_CALL_KIND
from core.ports import RunStore
from core.text.redaction import Redactor

CallKind = Literal["agent", "tool"]


@dataclass(frozen=True)
class RecordedCall:
    """One call a run made, at ``path``: an agent call (``agent``, the ``messages`` it was sent, its reply's
    ``output``, ``model`` and ``usage``; ``simulated_person`` when it played the person; ``error`` and
    ``hint`` instead of a reply when it failed) or a tool call (``tool``, its ``arguments``, and ``output``:
    its outcome, as ``ToolOutcome.to_dict()``). ``tools``: the definitions of the tools an agent call offered
    (a model turn of a tool loop; None for a call that offered none, or one recorded before they were kept)."""

    path: str
    kind: CallKind
    output: Any = None
    agent: str | None = None
    messages: tuple[Mapping[str, Any], ...] = ()
    model: str | None = None
    usage: Mapping[str, Any] | None = None
    simulated_person: str | None = None
    tool: str | None = None
    arguments: Any = None
    error: str | None = None
    hint: str | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "tool":
            return {
                "path": self.path,
                "kind": "tool",
                "tool": self.tool,
                "arguments": self.arguments,
                "output": self.output,
            }
        data: dict[str, Any] = {
            "path": self.path,
            "kind": "agent",
            "agent": self.agent,
            "messages": [dict(message) for message in self.messages],
            "output": self.output,
            "model": self.model,
            "usage": dict(self.usage) if self.usage is not None else None,
        }
        if self.simulated_person is not None:
            data["simulated_person"] = self.simulated_person
        if self.tools is not None:
            data["tools"] = [dict(tool) for tool in self.tools]
        if self.error is not None:
            data["error"] = self.error
            if self.hint is not None:
                data["hint"] = self.hint
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedCall:
        """The call ``to_dict`` wrote (ValueError when ``data`` is not one)."""
        path, kind = data.get("path"), data.get("kind")
        if not isinstance(path, str) or kind not in ("agent", "tool"):
            raise ValueError("a recorded call needs a text 'path' and a 'kind' of agent or tool")
        if kind == "tool":
            tool = data.get("tool")
            if not isinstance(tool, str):
                raise ValueError(f"the tool call at {path} has no 'tool' name")
            return cls(path, "tool", output=data.get("output"), tool=tool, arguments=data.get("arguments"))
        messages = data.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
            raise ValueError(f"the agent call at {path} needs 'messages', a list of messages")
        usage, tools = data.get("usage"), data.get("tools")
        if tools is not None and not (isinstance(tools, list) and all(isinstance(t, Mapping) for t in tools)):
            raise ValueError(f"the agent call at {path} has 'tools' that are not a list of tool definitions")
        return cls(
            path,
            "agent",
            output=data.get("output"),
            agent=_text(data.get("agent")),
            messages=tuple(messages),
            model=_text(data.get("model")),
            usage=usage if isinstance(usage, Mapping) else None,
            simulated_person=_text(data.get("simulated_person")),
            error=_text(data.get("error")),
            hint=_text(data.get("hint")),
            tools=tuple(tools) if tools is not None else None,
        )


@dataclass(frozen=True)
class Recording:
    """The calls and answers of run ``run_id`` (and its child runs), in the order the run made them;
    ``thread``, the thread the run continued, if any (a replay hears what it heard: core.engine)."""

    run_id: str
    calls: tuple[RecordedCall, ...] = ()
    answers: tuple[RecordedAnswer, ...] = ()
    thread: str | None = None
    by_path: Mapping[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    # The indices of the calls made inside each path (``review`` → those at ``review/critique``, ...): looked
    # up for every served tool call and every step a resumed run replays, so a replay stays linear.
    under: Mapping[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    answered: Mapping[str, RecordedAnswer] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_path: dict[str, list[int]] = {}
        under: dict[str, list[int]] = {}
        for index, call in enumerate(self.calls):
            by_path.setdefault(call.path, []).append(index)
            parts = call.path.split("/")
            for depth in range(1, len(parts)):
                under.setdefault("/".join(parts[:depth]), []).append(index)
        object.__setattr__(self, "by_path", {path: tuple(found) for path, found in by_path.items()})
        object.__setattr__(self, "under", {path: tuple(found) for path, found in under.items()})
        object.__setattr__(self, "answered", {answer.path: answer for answer in self.answers})

    def answer(self, path: str) -> RecordedAnswer | None:
        return self.answered.get(path)

    def inside(self, path: str) -> tuple[int, ...]:
        """The indices of the calls made inside the call or step at ``path`` (a workflow tool's child run's,
        a sub-workflow's, a loop's)."""
        return self.under.get(path, ())

    def replayed_answers(self) -> RecordedAnswers:
        """The answers a replay serves as answers: those a person gave (a simulated person's answers are
        served as its calls, so that what it is asked is compared too)."""
        kept = {answer.path: answer for answer in self.answers if answer.source != "simulated"}
        return RecordedAnswers(self.run_id, kept)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "calls": [call.to_dict() for call in self.calls],
            "answers": [_answer_dict(answer) for answer in self.answers],
        }
        if self.thread is not None:
            data["thread"] = self.thread
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recording:
        """The recording ``to_dict`` wrote (ValueError, saying what is wrong, when ``data`` is not one)."""
        calls, answers = data.get("calls", []), data.get("answers", [])
        if not isinstance(calls, list) or not isinstance(answers, list):
            raise ValueError("'calls' and 'answers' must be lists")
        found: list[RecordedAnswer] = []
        for answer in answers:
            if not isinstance(answer, Mapping) or not isinstance(answer.get("path"), str):
                raise ValueError("each answer needs a text 'path'")
            found.append(
                RecordedAnswer(
                    path=answer["path"],
                    step=str(answer.get("step") or answer["path"].rsplit("/", 1)[-1]),
                    value=answer.get("value"),
                    source=str(answer.get("source") or "person"),
                    by=_text(answer.get("by")),
                    question=_text(answer.get("question")),
                )
            )
        made = tuple(RecordedCall.from_dict(call) if isinstance(call, Mapping) else _not_a_call() for call in calls)
        return cls(str(data.get("run_id") or "case"), made, tuple(found), thread=_text(data.get("thread")))


def _not_a_call() -> RecordedCall:
    raise ValueError("each recorded call must be a mapping")


def _answer_dict(answer: RecordedAnswer) -> dict[str, Any]:
    data: dict[str, Any] = {
        "path": answer.path,
        "step": answer.step,
        "question": answer.question,
        "value": answer.value,
    }
    if answer.source != "person":
        data["source"] = answer.source
    if answer.by is not None:
        data["by"] = answer.by
    return data


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


async def load_recording(store: RunStore, run_id: str, redactor: Redactor) -> Recording:
    """The recording of run ``run_id`` (a unique prefix is enough) and its child runs, masked by
    ``redactor``. RunError when no run matches."""
    record = await store.get_run(run_id)
    if record is None:
        raise RunError(f"no run matches {run_id!r} (given to --replay)", hint="list runs with: flujo lens list")
    calls: list[RecordedCall] = []
    answers: list[RecordedAnswer] = []
    await _collect(store, record.run_id, "", redactor, calls, answers)
    return Recording(record.run_id, tuple(calls), tuple(answers), thread=record.thread)


async def _collect(
    store: RunStore,
    run_id: str,
    prefix: str,
    redactor: Redactor,
    calls: list[RecordedCall],
    answers: list[RecordedAnswer],
) -> None:
    steps = {step.path: step for step in await store.steps(run_id)}
    pending: dict[str, PromptSent] = {}
    made: list[RecordedCall | None] = []  # None: a failure a later call at its path superseded
    failed: dict[str, int] = {}  # path → the index in ``made`` of the failed call there
    children: list[tuple[str, str]] = []

    def agent_call(path: str, prompt: PromptSent, **outcome: Any) -> None:
        full = f"{prefix}{path}"
        if full in failed:  # the run was resumed there: only the last attempt is the call
            made[failed.pop(full)] = None
        if outcome.get("error") is not None:
            failed[full] = len(made)
        made.append(
            RecordedCall(
                full,
                "agent",
                agent=prompt.agent,
                messages=tuple(prompt.messages),
                simulated_person=prompt.simulated_person,
                tools=prompt.tools,
                **outcome,
            )
        )

    for event in await store.events(run_id):
        data = event.data
        full = f"{prefix}{event.path}"
        if isinstance(data, PromptSent):
            pending[event.path] = data
        elif isinstance(data, ReplyReceived):
            prompt = pending.pop(event.path, None)
            if prompt is not None:
                agent_call(event.path, prompt, output=data.output, model=data.model, usage=data.usage)
        elif isinstance(data, StepErrored | SummaryFailed):
            # The calls of the step that failed whose reply never came (an agent step's, or the model turn of
            # its tool loop at STEP/model/K): they failed.
            inside = f"{event.path}/"
            for path in [path for path in pending if path == event.path or path.startswith(inside)]:
                hint = data.hint if isinstance(data, StepErrored) else None
                agent_call(path, pending.pop(path), error=data.error, hint=hint)
        elif isinstance(data, ToolCalled):
            step = steps.get(event.path)
            outcome = step.output if step is not None and step.kind == TOOL_CALL_KIND else None
            if not isinstance(outcome, Mapping):
                outcome = {"content": data.result, "value": None, "error": data.error, "declined": bool(data.declined)}
            made.append(
                RecordedCall(
                    full, "tool", output=redactor.value(dict(outcome)), tool=data.tool, arguments=data.arguments
                )
            )
        elif isinstance(data, QuestionAnswered):
            step = steps.get(event.path)
            if step is not None and step.status == "completed":
                answers.append(
                    RecordedAnswer(
                        full, step.name, data.answer, data.source or "person", data.by, question=data.message
                    )
                )
        elif isinstance(data, ChildRunStarted):
            children.append((event.path, data.child_run_id))
    calls.extend(call for call in made if call is not None)
    for path, child in dict(children).items():
        await _collect(store, child, f"{prefix}{path}/", redactor, calls, answers)
