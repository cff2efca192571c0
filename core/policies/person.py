"""Asking the person a question: the one function every place that asks a person calls (a ``hitl`` step;
an ensemble's person participant).

``ask_person`` tries the answer sources in the order ``core.answering.order`` documents (given answers, a
replayed answer, the simulated person, the person) and checks each answer against the question's
``input_schema``: an invalid answer is asked again with the validation error — from the same source when
it can answer again (a person, a simulated person up to ``MAX_SIMULATED_ATTEMPTS`` times, then the run
pauses for the real person), else from the next one.

A simulated person's calls are like any agent call: reserved against the run's limits before, charged
after, and traced (``agent.prompt`` with the flipped roles exactly as sent, ``agent.reply``); the caller
commits those events and the usage with the step. If the question ends in a pause or an error instead,
those events are stored here, so the trace keeps every call that was paid for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from core.answering.order import AnswerNote, AnswerSource
from core.context import RunContext
from core.conversation import active_in, bound, turn_text
from core.model.calls import AgentCall, HumanQuestion
from core.model.codec import normalize
from core.model.errors import AgentOutputError, FlujoError, Pause, StepFailed
from core.model.events import AnswerRejected, PromptSent, QuestionAnswered, ReplyReceived
from core.model.records import TraceEvent
from core.model.usage import ZERO_USAGE, Usage
from core.policies.frame import Frame
from core.steps.kinds import HistoryPolicy, HitlStep
from core.text.schema_check import parse_answer, schema_errors
from core.text.tokens import count_messages
from core.text.turns import ConversationTurn, HitlEntry

if TYPE_CHECKING:  # the simulated person's module: imported by the runs that have one (or reject an answer)
    from core.answering.simulated_person import Rejection, SimulatedPerson

MAX_ANSWER_ATTEMPTS = 10
MAX_SIMULATED_ATTEMPTS = 3


@dataclass(frozen=True)
class PersonQuestion:
    """A question for the person.

    ``answered_by`` is the asking step's own simulated person (it beats the run's ``--simulate-user``);
    ``heard`` is the conversation so far as the asking side recorded it (``user`` turns are the person's),
    bounded by ``history`` (and the simulated person's prompt budget) before it is sent."""

    step: str
    path: str
    message: str
    input_schema: Mapping[str, Any] | None = None
    answered_by: SimulatedPerson | None = None
    heard: Sequence[ConversationTurn] = ()
    history: HistoryPolicy | None = None
    # When the asking step's attempt started (its record's ``started_at``): a simulated person's calls are
    # journaled with it (``Frame.begin_call``).
    started: float = 0.0
    yes_no: bool = False  # a [y/N] question (a tool call's approval): HumanQuestion.yes_no


@dataclass(frozen=True)
class PersonAnswer:
    """A valid answer: its value, who gave it, what the simulated person's calls cost and their events."""

    value: Any
    source: AnswerSource
    by: str | None = None
    usage: Usage = ZERO_USAGE
    events: tuple[TraceEvent, ...] = ()

    def marks(self) -> dict[str, str | None]:
        """What the ``hitl.answer`` event adds for an answer the person did not type now."""
        if self.source in ("simulated", "replayed"):
            return {"source": self.source, "by": self.by}
        return {}

    def trace(self, frame: Frame, path: str, message: str, told: Mapping[str, int] | None = None) -> list[TraceEvent]:
        """The events the asking step commits: the simulated person's calls, then ``hitl.answer`` (with who
        answered, when it was not the person, and the number of the turn the answer made: ``told``)."""
        turn = (told or {}).get("turn")
        answered = frame.event(path, QuestionAnswered(message, self.value, **self.marks(), turn=turn))
        return [*self.events, answered]


def person_question(
    step: HitlStep, path: str, message: str, ctx: RunContext, *, started: float = 0.0
) -> PersonQuestion:
    """The question a ``hitl`` step asks: in a ``conversation: true`` loop the person has heard that
    conversation (bounded by the loop's strategy); elsewhere, the questions asked so far and their answers."""
    active = active_in(ctx)
    heard: Sequence[ConversationTurn]
    if active is not None:
        # Not a copy (a copy costs the whole conversation, every question): the question is read while it is
        # asked, and the history grows only after the answer comes (it never escapes: a pause carries none).
        heard, history = ctx.conversation_history, active.settings.history
    else:
        heard, history = _Heard(ctx.hitl_history), None
    return PersonQuestion(step.name, path, message, step.input_schema, step.answered_by, heard, history, started)


class _Heard(Sequence[ConversationTurn]):
    """The questions asked so far and their answers as turns, made only if read: only a simulated person
    reads them, and making them for every question would cost each the whole run's questions so far."""

    def __init__(self, entries: Sequence[HitlEntry]) -> None:
        self._entries = tuple(entries)  # those asked before this question (a copy of pointers, in C)
        self._turns: list[ConversationTurn] | None = None

    def _made(self) -> list[ConversationTurn]:
        if self._turns is None:
            from core.answering.simulated_person import questions_and_answers

            self._turns = questions_and_answers(self._entries)
        return self._turns

    @overload
    def __getitem__(self, index: int) -> ConversationTurn: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ConversationTurn]: ...

    def __getitem__(self, index: int | slice) -> ConversationTurn | Sequence[ConversationTurn]:
        return self._made()[index]

    def __len__(self) -> int:
        return 2 * len(self._entries)  # a question and its answer each


async def ask_person(question: PersonQuestion, frame: Frame) -> PersonAnswer:
    """A valid answer to ``question``. Raises Pause when no source has one now, StepFailed after
    ``MAX_ANSWER_ATTEMPTS`` invalid answers (RunError when an answer given up front is invalid)."""
    events: list[TraceEvent] = []
    try:
        return await _ask(question, frame, events)
    except BaseException:
        if events:  # calls already paid for stay in the trace
            await frame.record_events(events)
        raise


async def _ask(question: PersonQuestion, frame: Frame, events: list[TraceEvent]) -> PersonAnswer:
    answering = frame.answering
    full_path = f"{answering.prefix}{question.path}"
    schema = question.input_schema
    simulated = question.answered_by or answering.simulated_user
    recorded = answering.replay.get(full_path) if answering.replay is not None else None
    # A replay of the whole run serves the answer when the question is asked in the same words (else it
    # diverges there); a simulated person's answer is served as its call, in ``_simulate``.
    if frame.replay is not None and not frame.replay.answer_served(
        question.path, frame.redactor.text(question.message), simulated=simulated is not None
    ):
        recorded = None
    replay_left = recorded is not None
    simulated_left = MAX_SIMULATED_ATTEMPTS if simulated is not None else 0
    usage = ZERO_USAGE
    error: str | None = None
    last: AnswerSource | None = None
    rejected: Rejection | None = None
    for _ in range(MAX_ANSWER_ATTEMPTS):
        source: AnswerSource | None = None
        by: str | None = None
        value: Any = None
        if answering.given is not None:
            text = await answering.given.ask(_human(question, error if last == "given" else None, full_path))
            if text is not None:
                source, value = "given", parse_answer(text, schema)
        if source is None and replay_left and recorded is not None and answering.replay is not None:
            replay_left = False
            source, value, by = "replayed", recorded.value, answering.replay.run_id
            if frame.replay is not None:
                frame.replay.answer_taken()
        if source is None and simulated is not None:
            if not simulated_left:  # it had its chances: the real person answers, now or on resume
                tries = f"the simulated person {simulated.name} gave no valid answer in {MAX_SIMULATED_ATTEMPTS} tries"
                reason = f"{tries}: {error}"
                raise Pause(step=question.step, path=question.path, message=question.message, reason=reason)
            simulated_left -= 1
            value, spent = await _simulate(
                simulated, question, frame, events, rejected if last == "simulated" else None
            )
            usage = usage + spent
            source, by = "simulated", simulated.name
        if source is None:
            text = await frame.human.ask(_human(question, error if last == "person" else None, full_path))
            if text is None:
                raise Pause(step=question.step, path=question.path, message=question.message)
            source, value = "person", parse_answer(text, schema)
        error = schema_errors(value, schema) if schema else None
        last = source
        if error is None:
            if answering.replay is not None and recorded is None:
                answering.log.new_questions.append(full_path)
            answering.log.notes.append(AnswerNote(full_path, question.step, source, by))
            return PersonAnswer(value, source, by, usage, tuple(events))
        from core.answering.simulated_person import Rejection

        rejected = Rejection(turn_text(value), error)
        if source != "person":
            events.append(frame.event(question.path, AnswerRejected(value, error, source)))
    raise StepFailed(
        f"no valid answer to {question.step!r} after {MAX_ANSWER_ATTEMPTS} attempts: {error}", step=question.step
    )


def _human(question: PersonQuestion, error: str | None, full_path: str) -> HumanQuestion:
    return HumanQuestion(
        step=question.step,
        path=question.path,
        message=question.message,
        input_schema=question.input_schema,
        error=error,
        full_path=full_path,
        yes_no=question.yes_no,
    )


async def _simulate(
    person: SimulatedPerson,
    question: PersonQuestion,
    frame: Frame,
    events: list[TraceEvent],
    rejected: Rejection | None,
) -> tuple[Any, Usage]:
    """Ask the simulated person: one agent call, reserved, traced and charged like any other."""
    agent = person.agent
    heard = _bounded(person, question)
    call = person.call(question.step, question.message, heard, rejected=rejected)
    sent = agent.prompt(call)
    # The messages go as the message objects, masked once each (``Redactor.messages``), as an agent step's.
    prompt = PromptSent(agent.label, (), bool(call.history), simulated_person=person.name)
    events.append(sent_event := frame.event(question.path, prompt, sent))
    served = frame.served_reply(sent_event)
    if served is not None:  # a replay: the simulated person's recorded reply
        agent.replayed()
        events.append(frame.served_event(question.path, served))
        output = served.output
        return (parse_answer(output, question.input_schema) if isinstance(output, str) else output), ZERO_USAGE
    held = await frame.begin_call(question.path, question.step, agent, sent, started=question.started)
    try:
        reply = await agent.run(call)
    except AgentOutputError as exc:
        frame.add_usage(exc.usage, releasing=held)
        raise
    except BaseException as exc:
        if isinstance(exc, FlujoError):  # the asking step fails, committed: the call ended
            frame.release(held)
        else:  # cancelled, or nothing commits the step: a journaled call counts as interrupted
            frame.abandon(held)
        raise
    output = normalize(reply.output)
    events.append(frame.event(question.path, ReplyReceived(output, reply.model, reply.attempts, reply.usage.to_dict())))
    frame.charge(reply.usage, releasing=held)
    value = parse_answer(output, question.input_schema) if isinstance(output, str) else output
    return value, reply.usage


def _bounded(person: SimulatedPerson, question: PersonQuestion) -> list[ConversationTurn]:
    """The conversation the simulated person is sent, bounded like any history: by the asking loop's
    strategy and by the agent's prompt budget (what is left of it after its system prompt and the question)."""
    policy = question.history
    max_tokens = policy.max_tokens if policy is not None and policy.strategy != "truncate_turns" else None
    max_turns = policy.max_turns if policy is not None and policy.strategy != "truncate_tokens" else None
    agent = person.agent
    budget = agent.prompt_budget
    if budget is not None:
        fixed = count_messages(agent.prompt(AgentCall(input=question.message, step=question.step)), agent.model_name)
        room = max(0, budget - fixed)
        max_tokens = room if max_tokens is None else min(max_tokens, room)
    return bound(question.heard, max_tokens=max_tokens, max_turns=max_turns)
