"""The ``summarize`` strategy: condensing the oldest turns of a conversation with the summarizer agent.

The conversation itself is never cut: a summary is a view (``RunContext.summary``) that stands for the
oldest turns in prompts, as one assistant turn ``Summary of the earlier conversation: ...``. A summary is
made when the turns said since the last one (all of them, before the first) are over the strategy's bound:
the last summary and the oldest ``summarize_ratio`` of those turns are condensed into the next. Until then
the last summary is reused, so one is made each time the history crosses its bound again, not before every
call. The summary is journaled as a step of its own (``<step path>/summarize``, with the turns it
condensed), so a resumed run rebuilds the same view without calling the summarizer again
(``replay_summary``). Its call obeys the rules of any agent call: reserved against the run's limits,
traced as ``agent.prompt``, and its request bounded by the summarizer's own prompt budget (fewer turns are
condensed when the ratio's do not fit). A failing summarizer never fails the run: each failure is journaled
too (status failed, with the count of consecutive failures), and after three in a row the run stops trying
and the history manager's final bound pass (truncation) does the work; the trace says so, and a resumed
run knows it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from core.context import RunContext
from core.conversation.history import SUMMARY_PREFIX, history_block, needs_summary, prompt_turns, summary_cut
from core.conversation.run_frame import RunFrame
from core.conversation.turns import ActiveConversation, active_in
from core.model.calls import AgentCall
from core.model.codec import normalize
from core.model.errors import AgentOutputError, ControlSignal, FlujoError, RunError
from core.model.events import SUMMARY, HistorySummarized, PromptSent, ReplyReceived, SummaryFailed
from core.model.provenance import summary_origin
from core.model.records import TraceEvent
from core.model.usage import ZERO_USAGE, Usage
from core.ports import Agent
from core.text.tokens import count_messages, count_tokens
from core.text.turns import ConversationTurn, Summary, turn_text

MAX_SUMMARIZER_FAILURES = 3
SUMMARY_REQUEST = (
    "Summarize the conversation below in a few sentences. Keep every fact, decision and open question; "
    "reply with the summary only."
)


def replay_summary(ctx: RunContext, path: str, frame: RunFrame[Any]) -> bool:
    """Re-apply what an earlier attempt journaled for the summary before this step's call (on resume,
    whether the step itself finished or the process died between the summary and the call); True if there
    was a record. A summary is applied again (the summarizer is told its reply was replayed, as agents of
    replayed steps are); a failure restores the count of consecutive failures, so a summarizer the run had
    given up stays given up, and the resumed run sends what an uninterrupted one would."""
    record = frame.journal.get(summary_path(path))
    if record is None or not isinstance(record.input, dict):
        return False
    if record.status == "failed":
        failures = record.input.get("consecutive_failures")
        if not isinstance(failures, int):
            return False
        frame.replays += 1
        frame.summarizer_failures = failures
        frame.add_usage(record.usage)
        return True
    cut = record.input.get("cut")
    if record.status != "completed" or not isinstance(cut, int) or not isinstance(record.output, str):
        return False
    frame.replays += 1
    frame.summarizer_failures = 0
    active = active_in(ctx)
    if active is not None and active.settings.history.summarizer is not None:
        active.settings.history.summarizer.replayed()
    _apply_summary(ctx, cut, record.output)
    return True


def summary_path(path: str) -> str:
    """Where the summary made before the call of the step at ``path`` is journaled: its child ``summarize``."""
    return f"{path}/summarize" if path else "summarize"


def _apply_summary(ctx: RunContext, cut: int, summary: str) -> None:
    """The new summary stands for the first ``cut`` turns of the prompt view (the last summary among them)."""
    content = f"{SUMMARY_PREFIX}{summary}"
    before = ctx.summary
    covers = cut if before is None else before.covers + cut - 1
    active = active_in(ctx)
    summarizer = active.settings.history.summarizer if active is not None else None
    origin = summary_origin(1, covers, summarizer.label if summarizer is not None else "?")
    ctx.summary = Summary(covers, ConversationTurn("assistant", content, count_tokens(content), origin=origin))


async def summarize(active: ActiveConversation, ctx: RunContext, path: str, frame: RunFrame[Any]) -> None:
    policy = active.settings.history
    summarizer = policy.summarizer
    if policy.strategy != "summarize" or summarizer is None:
        return
    if replay_summary(ctx, path, frame) or frame.summarizer_failures >= MAX_SUMMARIZER_FAILURES:
        return
    before = ctx.summary
    head = 0 if before is None else 1  # the last summary opens the view and goes into the next one
    fresh = ctx.conversation_history[before.covers :] if before is not None else ctx.conversation_history
    if not needs_summary(fresh, max_tokens=policy.max_tokens, max_turns=policy.max_turns):
        return  # the last summary (if any) is reused
    fresh_cut = summary_cut(fresh, policy.summarize_ratio)
    if fresh_cut == 0:
        return
    turns = prompt_turns(ctx.conversation_history, before)
    step = f"{active.loop}.summarize"
    cut = _fitting_cut(summarizer, step, turns, head + fresh_cut)
    if cut <= head:
        return
    here = summary_path(path)
    call = AgentCall(input=_request(turns[:cut]), step=step)
    sent = summarizer.prompt(call)
    started = time.time()
    prompt = frame.event(here, PromptSent(summarizer.label, tuple(m.to_dict() for m in sent), False, purpose=SUMMARY))
    try:
        served = frame.served_reply(prompt)  # a replay serves the recorded summary
    except RunError as failed:  # a replay: the recorded summarizer call failed, and so does this one
        await _failed(frame, failed, ZERO_USAGE, here, step, started, cut, prompt)
        return
    if served is not None:
        summarizer.replayed()
        summary = turn_text(served.output).strip()
        await frame.commit(
            path=here,
            name=step,
            kind="summarize",
            status="completed",
            started=started,
            input={"cut": cut, "turns": [turn.to_dict() for turn in turns[:cut]]},
            output=summary,
            events=[
                prompt,
                frame.served_event(here, served, summary),
                frame.event(here, HistorySummarized(cut, len(turns) - cut)),
            ],
        )
        _apply_summary(ctx, cut, summary)
        return
    # The same rules as any agent call: reserved against the limits (LimitReached stops the run, it is
    # not a summarizer failure), and its usage replaces the reservation when it ends.
    held = await frame.begin_call(here, step, summarizer, sent, started=started)
    try:
        reply = await summarizer.run(call)
    except ControlSignal:
        frame.abandon(held)
        raise
    except Exception as exc:  # a failing summarizer never fails the run: truncation takes over
        usage = exc.usage if isinstance(exc, AgentOutputError) else ZERO_USAGE
        frame.add_usage(usage, releasing=held)
        await _failed(frame, exc, usage, here, step, started, cut, prompt)
        return
    except BaseException:  # cancelled: a journaled call counts as interrupted
        frame.abandon(held)
        raise
    frame.summarizer_failures = 0
    summary = turn_text(normalize(reply.output)).strip()
    replaced = [turn.to_dict() for turn in turns[:cut]]
    await frame.commit(
        path=here,
        name=step,
        kind="summarize",
        status="completed",
        started=started,
        input={"cut": cut, "turns": replaced},
        output=summary,
        usage=reply.usage,
        events=[
            prompt,
            frame.event(here, ReplyReceived(summary, reply.model, usage=reply.usage.to_dict())),
            frame.event(here, HistorySummarized(cut, len(turns) - cut)),
        ],
    )
    _apply_summary(ctx, cut, summary)
    frame.charge(reply.usage, releasing=held)


async def _failed(
    frame: RunFrame[Any],
    exc: Exception,
    usage: Usage,
    here: str,
    step: str,
    started: float,
    cut: int,
    prompt: TraceEvent,
) -> None:
    """Record a summarizer call that failed: journaled, not only traced, so a resumed run knows how many
    failed in a row (``replay_summary``); after ``MAX_SUMMARIZER_FAILURES`` in a row, history is truncated
    instead."""
    frame.summarizer_failures += 1
    error = exc.message if isinstance(exc, FlujoError) else f"{type(exc).__name__}: {exc}"
    failed = SummaryFailed(
        error,
        frame.summarizer_failures,
        usage=usage.to_dict() if usage.requests else None,
        fallback="summarizer disabled for the rest of the run; history is truncated instead"
        if frame.summarizer_failures >= MAX_SUMMARIZER_FAILURES
        else None,
    )
    await frame.commit(
        path=here,
        name=step,
        kind="summarize",
        status="failed",
        started=started,
        input={"cut": cut, "consecutive_failures": frame.summarizer_failures},
        error=error,
        usage=usage,
        events=[prompt, frame.event(here, failed)],
    )


def _request(turns: Sequence[ConversationTurn]) -> str:
    return f"{SUMMARY_REQUEST}\n\n{history_block(turns, None)}"


def _fitting_cut(summarizer: Agent, step: str, turns: Sequence[ConversationTurn], cut: int) -> int:
    """``cut``, or fewer of the oldest turns when the request for them would not fit the summarizer's own
    prompt budget (the summary replaces only the turns it was given); never splitting an assistant turn from
    the user turn answering it. 0 when not even two turns fit."""
    budget = summarizer.prompt_budget
    if budget is None:
        return cut
    model = summarizer.model_name
    fixed = count_messages(summarizer.prompt(AgentCall(input=_request(()), step=step)), model)
    while cut >= 2:
        size = count_messages(summarizer.prompt(AgentCall(input=_request(turns[:cut]), step=step)), model)
        if size <= budget:
            return cut
        per_turn = max(1.0, (size - fixed) / cut)
        cut -= max(1, math.ceil((size - budget) / per_turn))
        while 0 < cut < len(turns) and turns[cut - 1].role == "assistant" and turns[cut].role == "user":
            cut -= 1
    return 0
