"""Running an ensemble step: rounds until nobody is ready, the turn limit or the timeout.

Invariants:
- Every turn is a leaf step at ``<ensemble>/<round>/<participant>`` and commits when it finishes, so a
  crash loses at most the turns in flight; on resume the committed turns are replayed (never run again)
  and, because who speaks depends only on the state they rebuild, the same rounds are replayed.
- The participants of a round run concurrently, all sent the conversation as it was when the round
  began; the round is applied in declaration order whatever order they finish in.
- A signal (a pause for the person, a usage limit) or a failure of one participant is raised after the
  others of its round have settled (and committed); the conversation's finished turns stay committed.
- Its input opens the conversation (and is what a script participant's envelope carries); inside a
  conversational loop, a propagated context is replaced by that loop's newest turn first.
- ``timeout_seconds`` counts the time the conversation runs, not the time spent waiting for the person;
  it is checked between rounds and, during a round, calls still running at the deadline are cancelled
  (their turns are not recorded) and the conversation ends with reason ``timeout``. A round whose calls
  were all cancelled is not a round played: ``turn_count`` counts the rounds in which someone spoke.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from core.context import RunContext
from core.conversation import EnsembleState, Speaker, Turn, chat, cue, envelope, message_for, shown_text, turn_text
from core.model.calls import Role
from core.model.errors import ControlSignal, FlujoError, LimitReached
from core.model.events import EnsembleDone
from core.policies.body import BodyRunner
from core.policies.context_writes import record_output
from core.policies.failure import record_failure
from core.policies.frame import Frame, child_path
from core.policies.leaf import run_agent_step
from core.policies.person import PersonQuestion, ask_person
from core.steps.kinds import AgentStep, CompletionReason, Dependency, EnsembleStep, Participant
from core.text.turns import ConversationTurn, HitlEntry

_POLL_WHILE_ASKING_S = 0.25


@dataclass
class Clock:
    """The conversation's running time: wall-clock time minus the time spent waiting for the person."""

    limit: float | None
    started: float
    waited: float = 0.0
    asking: int = 0
    replayed: float = 0.0  # the running time of the rounds replayed on resume
    replaying: float = 0.0  # the longest replayed turn of the round being played (its turns ran at once)

    def elapsed(self) -> float:
        return time.monotonic() - self.started - self.waited + self.replayed

    def expired(self) -> bool:
        return self.limit is not None and self.asking == 0 and self.elapsed() >= self.limit

    def remaining(self) -> float | None:
        if self.limit is None:
            return None
        if self.asking:
            return _POLL_WHILE_ASKING_S
        return max(0.0, self.limit - self.elapsed())


class Conversation:
    """One execution of an ensemble step (``run_ensemble``)."""

    def __init__(self, step: EnsembleStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner):
        # In a conversational loop that propagates the context, the ensemble opens with what was said last
        # there, as any step standing here would be sent (never the context, which no prompt holds).
        data = message_for(ctx, data)
        self.step, self.data, self.ctx, self.path, self.frame, self.body = step, data, ctx, path, frame, body
        thread = frame.thread if frame.thread is not None and frame.thread.claim(step) else None
        self.threaded = thread is not None
        earlier = tuple(thread.opening(ctx)) if thread is not None else ()
        self.state = EnsembleState.start(step, data, earlier=earlier)
        if self.threaded and self.state.seed is not None:
            ctx.thread_turns.append(self.state.seed)
        self.clock = Clock(step.timeout_seconds, time.monotonic())
        self.alone = True  # whether the round being played has one agent speaking (it may stream)
        # What a person has heard (``_question``), kept as the turns come: a question costs the turns said
        # since the last one, not the whole conversation. ``_heard_turns`` of ``state.turns`` are in it.
        self._heard = [*self.state.earlier, *([self.state.seed] if self.state.seed is not None else [])]
        self._heard_turns = 0

    async def run(self) -> CompletionReason:
        """Play rounds until the conversation ends; why it ended."""
        while True:
            if self.state.turn_count >= self.step.max_total_turns:
                return "turn_limit"
            if self.clock.expired():
                return "timeout"
            played = await self.play_round()
            if played is None:
                return "completed"
            if played == "timeout":
                return "timeout"

    async def play_round(self) -> Literal["played", "timeout"] | None:
        """Play the next round and apply it to the state: ``played``, ``timeout`` (the deadline came during
        the round; the turns that finished are applied), or None when no participant is ready."""
        state = self.state
        ready = state.ready()
        if not ready:
            return None
        number = state.turn_count + 1
        spoken, timed_out = await self._round(number, ready)
        self.clock.replayed, self.clock.replaying = self.clock.replayed + self.clock.replaying, 0.0
        if timed_out and not spoken:  # every call was cancelled: no turn was said, so no round was played
            return "timeout"
        state.apply(spoken)
        if self.threaded:  # the thread keeps what was said: the person's turns as the user's
            said = state.said[len(state.said) - len(spoken) :]
            for (participant, _, spoke), turn in zip(spoken, said, strict=True):
                role: Role = "user" if participant.is_person else "assistant"
                text = shown_text(spoke.output)  # what a person reads of a structured reply
                shown = f"{participant.name}: {text}" if text is not None else None
                self.ctx.thread_turns.append(ConversationTurn(role, turn.content, turn.counted, shown))
        return "timeout" if timed_out else "played"

    async def _round(
        self, number: int, ready: list[tuple[Participant, list[Dependency]]]
    ) -> tuple[list[tuple[Participant, Sequence[Dependency], Turn]], bool]:
        """Run one round. The agents speak first, at the same time; the person is asked once they have
        all finished (in declaration order), so a question on the terminal never holds up a call in flight
        and no agent's output is printed into it. Everyone is sent the state as the round began, so the
        order they run in changes nothing of what they are sent."""
        here = child_path(self.path, str(number))
        results: dict[str, asyncio.Task[Turn]] = {}
        agents = [participant for participant, _ in ready if not participant.is_person]
        self.alone = len(agents) == 1
        tasks = [asyncio.create_task(self._speak(participant, number, here)) for participant in agents]
        results.update(zip((participant.name for participant in agents), tasks, strict=True))
        timed_out = await self._settle(tasks)
        if not timed_out and not any(task.exception() for task in tasks if not task.cancelled()):
            for participant, _ in ready:
                if not participant.is_person:
                    continue
                asking = asyncio.create_task(self._speak(participant, number, here))
                results[participant.name] = asking
                try:
                    await asyncio.wait([asking])
                except asyncio.CancelledError:  # Ctrl-C while the person is asked
                    asking.cancel()
                    raise
                if asking.exception() is not None:
                    break
        spoken: list[tuple[Participant, Sequence[Dependency], Turn]] = []
        problem: BaseException | None = None
        for participant, met in ready:
            result = results.get(participant.name)
            if result is None or result.cancelled():
                continue
            error = result.exception()
            if error is not None:
                problem = problem or error
                continue
            spoken.append((participant, met, result.result()))
        if problem is not None:
            if isinstance(problem, LimitReached):
                raise self.frame.restate(problem)
            raise problem
        return spoken, timed_out

    async def _settle(self, tasks: Sequence[asyncio.Task[Turn]]) -> bool:
        """Wait for ``tasks``; at the deadline cancel those still running. True when the deadline came."""
        try:
            pending: set[asyncio.Task[Turn]] = set(tasks)
            while pending:
                _, pending = await asyncio.wait(pending, timeout=self.clock.remaining())
                if pending and self.clock.expired():
                    for task in pending:
                        task.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                    return True
        except asyncio.CancelledError:  # Ctrl-C: stop every call of the round
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return False

    async def _speak(self, participant: Participant, number: int, here: str) -> Turn:
        path = child_path(here, participant.name)
        replay = self.frame.replayed(path)
        if replay is not None and not participant.is_person:  # its running time counts again, as when it ran
            self.clock.replaying = max(self.clock.replaying, replay.duration_s)  # (the person's never did)
        started = time.time()
        if replay is not None:
            started = replay.started_at
        if participant.is_person:
            output = await self._ask(participant, number, path)
        elif participant.workflow is not None:
            workflow = replace(participant.workflow, name=participant.name, input=None)
            message, _, _ = chat(self.state, participant, _NO_AGENT, number)
            output = await self.body(
                (workflow,), message, RunContext(initial_prompt=self.ctx.initial_prompt), here, self.frame
            )
        else:
            output = await self._call(participant, number, path)
        ended = started + replay.duration_s if replay is not None else time.time()
        return Turn(number, participant.name, output, ended - started, ended, path)

    async def _call(self, participant: Participant, number: int, path: str) -> Any:
        agent = participant.agent
        assert agent is not None
        if agent.is_model:
            message, history, why = chat(self.state, participant, agent, number, path)
            speaker = Speaker(agent, message, history, why, streams=self.alone)
        else:
            speaker = Speaker(agent, envelope(self.state, participant, self.data, number))
        # What the turn record keeps as its input: a reference to the round, never a copy of the history.
        reference = {"ensemble": self.step.name, "round": number, "history_turns": len(self.state.turns)}
        step = AgentStep(name=participant.name, agent=speaker, position=participant.position)
        scratch = RunContext(initial_prompt=self.ctx.initial_prompt)  # the turn's own effects are the state's
        return await run_agent_step(step, reference, scratch, path, self.frame)

    async def _ask(self, participant: Participant, number: int, path: str) -> Any:
        """The person's turn, asked through ``ask_person`` (given answers, a replayed answer, the
        simulated person, the terminal), committed as a ``hitl`` step at the turn's path."""
        frame = self.frame
        started = time.time()
        try:
            question = self._question(participant, number, path, started)
        except FlujoError as exc:
            await frame.commit(
                path=path, name=participant.name, kind="hitl", status="failed", started=started,
                error=exc.message, failure=exc,
            )  # fmt: skip
            raise
        replay = frame.replayed(path)
        if replay is not None:
            frame.replays += 1
            frame.add_usage(replay.usage)  # a simulated person's calls
            self._remember(participant, question.message, replay.output)
            return replay.output
        frame.reporter.step_started(path, participant.name, "hitl")
        self.clock.asking += 1
        asked = time.monotonic()
        try:
            answer = await ask_person(question, frame)
        except FlujoError as exc:
            await frame.commit(
                path=path, name=participant.name, kind="hitl", status="failed", started=started,
                input=question.message, error=exc.message, failure=exc,
            )  # fmt: skip
            raise
        finally:
            self.clock.asking -= 1
            self.clock.waited += time.monotonic() - asked
        self._remember(participant, question.message, answer.value)
        await frame.commit(
            path=path, name=participant.name, kind="hitl", status="completed", started=started,
            input=question.message, output=answer.value, usage=answer.usage,
            events=answer.trace(frame, path, question.message),
        )  # fmt: skip
        return answer.value

    def _question(self, participant: Participant, number: int, path: str, started: float) -> PersonQuestion:
        """What the person is asked: the ``ask`` question, or, for a participant only a simulated person
        plays, the newest turn someone else said (a cue when there is none). What the person has heard is
        the conversation as the asking side records it — the thread's earlier turns, the ensemble's input
        and the person participants' turns as the user's, the agents' (named) as the assistant's — bounded
        by the ensemble's history policy when it is sent."""
        state = self.state
        heard = self._heard
        assert len(state.turns) == len(state.said)  # appended together (EnsembleState.apply)
        for index in range(self._heard_turns, len(state.turns)):
            turn, said = state.turns[index], state.said[index]
            if self.step.participant(turn.participant).is_person:
                heard.append(ConversationTurn("user", turn_text(turn.output)))  # its own text, its own count
            else:
                heard.append(ConversationTurn("assistant", said.content, said.counted))
        self._heard_turns = len(state.turns)
        heard = list(heard)  # the question's own: turns said while it is asked are not in what it heard
        if participant.ask is not None:
            message = participant.ask.render_text(state.scope())
        elif heard and heard[-1].role == "assistant":
            message = heard[-1].content
        else:
            message = cue(participant, number)
        return PersonQuestion(
            step=participant.name, path=path, message=message, input_schema=participant.input_schema,
            answered_by=participant.answered_by, heard=heard, history=self.step.history, started=started,
        )  # fmt: skip

    def _remember(self, participant: Participant, message: str, answer: Any) -> None:
        self.ctx.hitl_history.append(HitlEntry(step=participant.name, message=message, answer=answer))


class _NoAgent:
    """The "agent" of a sub-workflow participant, for choosing its current message (no budget, no prompt)."""

    prompt_budget = None


_NO_AGENT: Any = _NoAgent()


async def run_ensemble(
    step: EnsembleStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner
) -> Any:
    """Run the conversation of ``step``; its output is {final_state, history, turn_count, completion_reason}
    (or what ``step.output`` makes of it)."""
    frame.reporter.step_started(path, step.name, step.kind)
    started = time.time()
    conversation = Conversation(step, data, ctx, path, frame, body)
    try:
        reason = await conversation.run()
        result = conversation.state.result(reason)
        final = step.output(result, ctx, data) if step.output is not None else result
    except (ControlSignal, asyncio.CancelledError):
        raise
    except Exception as exc:
        turns = conversation.state.turn_count
        error = await record_failure(
            step, path, started, data, exc, frame, ended=lambda message: EnsembleDone("error", turns, error=message)
        )
        if error is exc:
            raise
        raise error from exc
    record_output(ctx, step.name, final)
    event = frame.event(path, EnsembleDone(reason, conversation.state.turn_count, max_total_turns=step.max_total_turns))
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=data, output=final, events=[event],
    )  # fmt: skip
    return final
