"""Policies for the leaf steps: an agent call (``step``) and a human question (``hitl``).

Leaf steps are the unit of durability: each commits its result (and its trace events) before the run
moves on, and on resume a committed leaf is replayed from the journal, never executed again.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from core.context import RunContext
from core.conversation import (
    Speaker,
    capture,
    default_question,
    message_for,
    prepare,
    replayed_call,
)
from core.model.calls import AgentCall, OutputRepair, Retry
from core.model.codec import normalize
from core.model.errors import AgentOutputError, ControlSignal, FlujoError, PromptTooLarge, ReplyCutOff, RunError
from core.model.events import OutputRepaired, PromptSent, ReplyCut, ReplyReceived, StepErrored
from core.model.records import TraceEvent
from core.model.usage import ZERO_USAGE, Usage
from core.model.views import copied
from core.policies.body import BodyRunner
from core.policies.context_writes import note_agent_command, record_output, sink, update_context
from core.policies.frame import Frame, Reservation, numbered, scope
from core.policies.person import ask_person, person_question
from core.policies.turn_text import shown_turn
from core.ports import Agent
from core.steps.kinds import AgentStep, HitlStep
from core.text.tokens import count_messages
from core.text.turns import HitlEntry


def retry_line(step: str, retry: Retry) -> str:
    """What the person watching is told of a retry: ``retrying 'answer' in 1.0 s (attempt 2 of 3): ...``;
    after a reply cut off mid-stream (whose text stays on screen above), ``'answer' was cut off — retrying
    (2/3) in 1.0 s: ...``."""
    if retry.cut is not None:
        return (
            f"{step!r} was cut off — retrying ({retry.attempt}/{retry.attempts}) in {retry.delay_s:.1f} s: "
            f"{retry.reason}"
        )
    return f"retrying {step!r} in {retry.delay_s:.1f} s (attempt {retry.attempt} of {retry.attempts}): {retry.reason}"


def refuse_oversized(step: str, agent: Agent, call: AgentCall) -> None:
    """Raise PromptTooLarge when the system prompt and the message of ``call`` alone (the history is cut to
    fit; these cannot be) need more tokens than ``agent``'s prompt budget: the provider would refuse the
    call, or cut it silently, after the time and money of sending it."""
    budget = agent.prompt_budget
    if budget is None:
        return
    needed = count_messages(agent.prompt(replace(call, history=())), agent.model_name)
    if needed <= budget:
        return
    raise PromptTooLarge(
        f"step {step!r} was not sent to {agent.label}: its system prompt and message need {needed:,} tokens, "
        f"but the agent has room for {budget:,} (its context window minus the tokens kept for the reply)",
        step=step,
        needed=needed,
        budget=budget,
        hint="shorten the step's input or system prompt, or set the agent's context_window to the model's real"
        " window (model_settings.max_tokens sets the reply's share)",
    )


def _apply_agent_output(
    step: AgentStep, ctx: RunContext, data: Any, output: Any, path: str, events: list[TraceEvent] | None = None
) -> None:
    """The step's output lands: its turn in the conversation (which its ``agent.reply`` in ``events``, when
    there is one, numbers: ``provenance.told``), the context, the sink."""
    shown = shown_turn(step, ctx, data, output)
    record_output(ctx, step.name, output)
    told = capture(ctx, step.name, output, hitl=False, shown=shown, path=path)
    if told and events:
        numbered(events, ReplyReceived.kind, told)
    if step.agent is not None:
        note_agent_command(ctx, output)
    if step.sink_to:
        sink(ctx, step.sink_to, output)
    if step.updates_context:
        update_context(ctx, step.name, output)


async def run_agent_step(
    step: AgentStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner | None = None
) -> Any:
    """Run an agent step (its tool loop when it has tools; ``body`` runs a ``workflow:`` tool's steps)."""
    absorbed = frame.absorbed_failure(path)
    if absorbed is not None:
        frame.replays += 1
        raise RunError(absorbed)
    replay = frame.replayed(path)
    if replay is not None:
        frame.replays += 1
        if step.agent is not None:
            # A stateful agent (``model: scripted``) advances past every reply the step took: each turn of its
            # tool loop, or a reply and its repair (two requests).
            if step.tools is not None:  # the tool loop's module, imported by the steps that have tools only
                from core.policies.tool_loop import turns_taken

                taken = turns_taken(path, frame)
            else:
                taken = max(1, replay.usage.requests)
            for _ in range(taken):
                step.agent.replayed()
            from core.conversation import replay_summary  # the summaries' module: a replayed step's only

            replay_summary(ctx, path, frame)
            replayed_call(step, step.agent, ctx)
        _apply_agent_output(step, ctx, data, replay.output, path)
        frame.add_usage(replay.usage)
        return replay.output

    frame.reporter.step_started(path, step.name, step.kind)
    started = time.time()
    events: list[TraceEvent] = []
    usage: Usage = ZERO_USAGE
    # What of ``usage`` the run's total still lacks, when not all of it: a tool loop's turns are charged as
    # each ends (core.policies.tool_loop), so the step adds only what a failing turn spent.
    unpaid: Usage | None = None
    call_input: Any = data
    held: Reservation | None = None  # what the call holds against the limits until its usage replaces it
    try:
        variables = scope(ctx, data)
        if step.input is not None:
            call_input = step.input.render(variables)
        if step.agent is None:
            # As the passthrough builtin: the propagated context carries the state, the step passes
            # the conversation's newest turn along (never the context, which its output would nest).
            call_input = message_for(ctx, call_input)
            output = normalize(call_input)
        else:
            agent = step.agent

            def retrying(retry: Retry) -> None:
                frame.reporter.note(retry_line(step.name, retry))
                if retry.cut is not None:  # the attempt that failed streamed part of a reply: keep it, marked
                    cut = ReplyCut(agent.label, retry.attempt - 1, retry.attempts, retry.cut, retry.reason)
                    events.append(frame.event(path, cut))

            injection = await prepare(step, agent, data, call_input, ctx, path, frame, events)
            call_input = injection.message
            call = AgentCall(
                input=copied(call_input),  # an agent that mutates its input changes nothing of ours
                step=step.name,
                history=injection.history,
                context=variables["context"],
                on_text=lambda text: frame.reporter.text_delta(path, text),
                run_id=frame.run_id,
                path=path,
                begin_attempt=lambda: frame.begin_attempt(path, agent.label),
                process_started=lambda pid: frame.process_started(path, agent.label, pid),
                on_retry=retrying,
                on_activity=lambda activity: frame.reporter.activity(path, activity),
            )
            refuse_oversized(step.name, agent, call)
            why = injection.why if not isinstance(agent, Speaker) else agent.why  # an ensemble's participant
            prompt = PromptSent(agent.label, (), injection.injected, history=injection.trace or None, why=why)
            if step.tools is not None:  # each turn of the loop is journaled, reserved and traced on its own
                from core.policies.tool_loop import LoopSpend, run_tool_loop

                spend = LoopSpend(prompt=prompt)
                try:
                    output = normalize(await run_tool_loop(step, agent, call, path, frame, spend, body))
                finally:
                    usage, unpaid = spend.usage, ZERO_USAGE
                events.append(frame.event(path, ReplyReceived(output, None, spend.turns, usage.to_dict())))
            else:
                sent = agent.prompt(call)
                # The messages go as the message objects: a conversation's prompts resend the same ones, masked
                # once.
                events.append(sent_event := frame.event(path, prompt, sent))
                served = frame.served_reply(sent_event)
                if served is not None:  # a replay: the recorded reply, no model called, nothing spent
                    agent.replayed()
                    output = served.output
                    events.append(frame.served_event(path, served))
                else:
                    held = await frame.begin_call(path, step.name, agent, sent, started=started)
                    reply = await agent.run(call)
                    usage = reply.usage
                    # The value the journal will hold (a JSON round trip), so a resumed run sees exactly what
                    # this one saw.
                    output = normalize(reply.output)
                    if reply.repair is not None:
                        events.append(frame.event(path, _repaired(reply.repair)))
                    received = ReplyReceived(output, reply.model, reply.attempts, usage.to_dict())
                    events.append(frame.event(path, received))
            if agent.is_model:
                frame.reporter.agent_replied(path, step.name, output)
        _apply_agent_output(step, ctx, data, output, path, events)
    except ControlSignal:
        frame.abandon(held)
        raise
    except FlujoError as exc:
        if isinstance(exc, AgentOutputError):  # the call spent tokens, and its repair belongs in the trace
            usage, unpaid = (exc.usage, None) if unpaid is None else (usage + exc.usage, exc.usage)
            if exc.repair is not None:
                events.append(frame.event(path, _repaired(exc.repair)))
        if isinstance(exc, ReplyCutOff) and step.agent is not None:  # the last attempt, cut off as well
            cut = ReplyCut(step.agent.label, exc.attempts, exc.attempts, exc.received, exc.reason)
            events.append(frame.event(path, cut))
        await _fail(frame, step.name, step.kind, path, started, call_input, exc, events, usage, held, unpaid=unpaid)
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception):
            frame.abandon(held)  # cancelled (Ctrl-C, a sibling's failure): the call will never report usage
            raise
        frame.release(held)
        error = RunError(f"step {step.name!r} failed: {type(exc).__name__}: {exc}")  # an agent's own bug
        await _fail(frame, step.name, step.kind, path, started, call_input, error, events, usage, unpaid=unpaid)
        raise error from exc
    await frame.commit(
        path=path,
        name=step.name,
        kind=step.kind,
        status="completed",
        started=started,
        input=call_input,
        output=output,
        usage=usage,
        events=events,
    )
    frame.charge(usage if unpaid is None else unpaid, releasing=held)
    return output


def _repaired(repair: OutputRepair) -> OutputRepaired:
    return OutputRepaired(repair.first_reply, repair.error, repair.request, repair.second_reply)


async def _fail(
    frame: Frame,
    name: str,
    kind: str,
    path: str,
    started: float,
    data: Any,
    exc: FlujoError,
    events: list[Any],
    usage: Usage,
    held: Reservation | None = None,
    *,
    unpaid: Usage | None = None,
) -> None:
    """Record the failed step and add what it spent to the run total (``unpaid`` of it, when the rest is there
    already). The limits are not checked here: a LimitReached would hide ``exc``; the check before the next
    agent call (if the run goes on) sees it."""
    events.append(frame.event(path, StepErrored(exc.message, exc.hint)))
    await frame.commit(
        path=path,
        name=name,
        kind=kind,
        status="failed",
        started=started,
        input=data,
        error=exc.message,
        usage=usage,
        events=events,
        failure=exc,
    )
    frame.add_usage(usage if unpaid is None else unpaid, releasing=held)


def _apply_answer(step: HitlStep, ctx: RunContext, message: str, answer: Any, path: str) -> dict[str, int]:
    """The answer lands; what its ``hitl.answer`` event says of the turn it made (``provenance.told``)."""
    ctx.hitl_history.append(HitlEntry(step=step.name, message=message, answer=answer))
    record_output(ctx, step.name, answer)
    told = capture(ctx, step.name, answer, hitl=True, path=path)
    if step.sink_to:
        sink(ctx, step.sink_to, answer)
    return told


async def run_hitl_step(step: HitlStep, data: Any, ctx: RunContext, path: str, frame: Frame) -> Any:
    started = time.time()
    try:
        if step.message is None:
            message = default_question(ctx, step.name)
        else:
            message = step.message.render_text(scope(ctx, data))
    except FlujoError as exc:
        await _fail(frame, step.name, step.kind, path, started, data, exc, [], ZERO_USAGE)
        raise
    absorbed = frame.absorbed_failure(path)
    if absorbed is not None:
        frame.replays += 1
        raise RunError(absorbed)
    replay = frame.replayed(path)
    if replay is not None:
        frame.replays += 1
        _apply_answer(step, ctx, message, replay.output, path)
        frame.add_usage(replay.usage)  # a simulated person's calls
        return replay.output
    frame.reporter.step_started(path, step.name, step.kind)

    try:
        answer = await ask_person(person_question(step, path, message, ctx, started=started), frame)
    except FlujoError as exc:
        await _fail(frame, step.name, step.kind, path, started, message, exc, [], ZERO_USAGE)
        raise
    told = _apply_answer(step, ctx, message, answer.value, path)
    events = answer.trace(frame, path, message, told)
    await frame.commit(
        path=path,
        name=step.name,
        kind=step.kind,
        status="completed",
        started=started,
        input=message,
        output=answer.value,
        usage=answer.usage,
        events=events,
    )
    return answer.value
