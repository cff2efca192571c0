"""One line per node: what the plain tree and the TUI tree both show for a run, step, iteration, agent call,
message or event (``label``), and the words of the badges (``history_badge``).

Labels are ``rich.text.Text``; styles carry meaning only together with words or marks (``✓ completed``), so
the text reads the same without colour.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, assert_never

from rich.text import Text

import lens.figures as figures
from core import (
    MODEL_TURN_KIND,
    TOOL_CALL_KIND,
    AgentStarted,
    AnswerRejected,
    BranchTaken,
    CallSent,
    ChildRunStarted,
    EnsembleDone,
    Event,
    HistoryNotInjected,
    HistorySummarized,
    LoopExited,
    OutputRepaired,
    ParallelDone,
    ProcessStarted,
    PromptSent,
    QuestionAnswered,
    ReplyCut,
    ReplyReceived,
    RunRecord,
    StepErrored,
    StepRecord,
    SummaryFailed,
    ToolCalled,
    UnknownEvent,
    Usage,
)
from lens.preview import compact, one_line
from lens.tree import CallNode, EventNode, GroupNode, MessageNode, Node, RunNode, StepNode, tool_call_words

_MARKS: dict[str, tuple[str, str]] = {
    "completed": ("✓", "green"),
    "failed": ("✗", "bold red"),
    "paused": ("⏸", "yellow"),
    "running": ("…", "cyan"),
    "interrupted": ("⏹", "yellow"),
    "limit_reached": ("⛔", "red"),
    "aborted": ("⏹", "red"),
    "queued": ("◌", "dim"),
    "cancelled": ("⊘", "dim"),
    "skipped": ("↷", "dim"),
}
_WELL_KNOWN_HISTORY = ("conversation", "turns", "dropped", "mode", "summary_of")


def mark(status: str) -> Text:
    """``✓`` / ``✗`` / ``⏸`` ... in the status's colour (``?`` for a step with no recorded result)."""
    symbol, style = _MARKS.get(status, ("?", "dim"))
    return Text(symbol, style=style)


def status_text(status: str) -> Text:
    return Text.assemble(mark(status), " ", (status.replace("_", " "), _MARKS.get(status, ("", "dim"))[1]))


def usage_words(usage: Usage, *, always: bool = False) -> str:
    """``2 requests · 130 tokens · $0.0012``, or "" for a step that called no model (unless ``always``);
    ``3 requests (1 interrupted: usage unknown) · 130 tokens · ?`` when the reply of some was never recorded."""
    if not always and usage.requests == 0 and usage.total_tokens == 0:
        return ""
    requests = figures.count(usage.requests, "request")
    if usage.interrupted:
        requests += f" ({usage.interrupted} interrupted: usage unknown)"
    return " · ".join((requests, figures.count(usage.total_tokens, "token"), figures.cost(usage)))


def run_duration(record: RunRecord) -> float | None:
    return None if record.finished_at is None else max(record.finished_at - record.created_at, 0.0)


def label(node: Node) -> Text:
    """The one-line label of ``node``."""
    if isinstance(node, RunNode):
        return run_label(node.record, child=bool(node.path))
    if isinstance(node, StepNode):
        return step_label(node)
    if isinstance(node, GroupNode):
        return Text(node.title, style="bold")
    if isinstance(node, CallNode):
        return call_label(node)
    if isinstance(node, MessageNode):
        return Text.assemble((f"{node.role:<9}", role_style(node.role)), " ", one_line(node.content))
    if isinstance(node, EventNode):
        return event_label(node)
    assert_never(node)


def run_label(record: RunRecord, *, child: bool = False) -> Text:
    words = [record.pipeline_name, figures.duration(run_duration(record))]
    if usage := usage_words(record.usage):
        words.append(usage)
    return Text.assemble(
        ("child run " if child else "run ", "bold"),
        (record.run_id, "bold cyan"),
        " · ",
        status_text(record.status),
        " · " + " · ".join(words),
    )


def step_label(node: StepNode) -> Text:
    record = node.record
    text = Text.assemble(mark(node.status), " ", (node.name, "bold"), "  ")
    if record is None:
        text.append(f"{node.status}", style="dim")
        if node.interrupted:  # calls interrupted there before any result was recorded
            text.append(f" · {usage_words(node.own_usage)}")
        return text
    words = (record.kind, figures.duration(record.duration_s), usage_words(node.usage))
    text.append(" · ".join(w for w in words if w))
    if record.status != "completed":
        text.append(f" · {record.status}", style=_MARKS.get(record.status, ("", ""))[1])
    for event in node.events:
        answer = event.data
        if isinstance(answer, QuestionAnswered) and answer.source:
            text.append(" · " + answered_by(answer), style="magenta")
    return text


def tool_loop_values(record: StepRecord) -> tuple[Any, str] | None:
    """What a record of a tool loop shows as its input and output (None for any other record): a tool call's
    arguments and the result its model was sent (``declined by the person`` for a declined call); a model
    turn's text and the calls it asked for (its input is the messages, which ``trace`` shows)."""
    output = record.output if isinstance(record.output, Mapping) else {}
    if record.kind == TOOL_CALL_KIND:
        given = record.input.get("arguments") if isinstance(record.input, Mapping) else record.input
        said = "declined by the person" if output.get("declined") else compact(output.get("content", ""))
        return given, said
    if record.kind == MODEL_TURN_KIND:
        return None, turn_words(output)
    return None


def turn_words(output: Any) -> str:
    """A model turn's reply (``ModelTurn.to_dict``): its text, then a line for each call it asked for."""
    if not isinstance(output, Mapping):
        return compact(output)
    text = compact(output.get("text") or "")
    asked = output.get("tool_calls")
    calls = [tool_call_words(call) for call in asked] if isinstance(asked, list) else []
    return "\n".join([*([text] if text else []), *calls])


def answered_by(answer: QuestionAnswered) -> str:
    """Who gave an answer that the person did not type: ``simulated by agents.tester``, ``replayed from run
    3f2a…``; "answered by the person" otherwise."""
    if answer.source == "simulated":
        return f"simulated by {answer.by}"
    if answer.source == "replayed":
        return f"replayed from run {answer.by}"
    return "answered by the person"


def replay_words(report: Any) -> Text | None:
    """What ``lens show`` says of a run that replayed another (its ``replay_report`` option: ``flujo run
    --replay``): ``run 3f2a… · 4 calls served · clean``, or where it diverged; None for any other run."""
    if not isinstance(report, Mapping) or not isinstance(report.get("from"), str):
        return None
    text = Text(f"run {report['from']} · {figures.count(_int(report.get('replayed_calls')), 'call')} served")
    where = report.get("diverged_at")
    if isinstance(where, str):
        text.append(f" · diverged at {where}: {report.get('reason')}", style="yellow")
        if report.get("mode") == "live":
            text.append(" · live from there", style="yellow")
    elif report.get("clean"):
        text.append(" · clean", style="green")
    return text


def served_words(run_id: str | None) -> Text:
    """The mark of a reply or tool result served from a recording (``flujo run --replay``): nothing was
    called, nothing ran."""
    return Text(f"  (served from run {run_id})", style="cyan") if run_id else Text()


def call_label(call: CallNode) -> Text:
    prompt = call.prompt
    text = Text.assemble(("▸ ", "magenta"), ("call ", "magenta"), (prompt.agent, "bold magenta"))
    text.append(" · " + figures.count(len(prompt.messages), "message"))  # one node each, made only if shown
    if prompt.summarizes:
        text.append(" · summary request", style="magenta")
    if prompt.simulated_person:
        text.append(f" · simulated person {prompt.simulated_person}", style="magenta")
    badge = history_badge(call)
    if badge:
        text.append(" · ")
        text.append(badge, style="bold yellow" if call.injected else "yellow")
    if call.repairs:
        text.append(" · output repaired", style="yellow")
    if call.cuts:
        text.append(f" · {figures.count(len(call.cuts), 'attempt')} cut off", style="red")
    attempts = call.reply.attempts if call.reply is not None else None
    if attempts is not None and attempts > 1:
        text.append(f" · {attempts} attempts")
    if call.reply is None:
        text.append(" · no reply recorded", style="dim")
    elif call.reply.replayed_from:
        text.append(f" · served from run {call.reply.replayed_from}", style="cyan")
    return text


def cut_words(cut: ReplyCut) -> str:
    """``attempt 1 of 3, 18 characters received: the stream ended before its end marker``."""
    received = figures.count(len(cut.received), "character")
    return f"attempt {cut.attempt} of {cut.attempts}, {received} received: {cut.reason}"


def history_badge(call: CallNode) -> str:
    """``conversation injected: 4 turns of chat (as messages) · 2 older turns dropped`` and what the history
    strategy did (a summary, a failed summary), from the prompt event's ``history`` facts; "" when the call
    is not in a conversation."""
    facts = call.history
    if facts is None:
        return ""
    conversation = facts.get("conversation", "?")
    turns = _int(facts.get("turns"))
    dropped = _int(facts.get("dropped"))
    if call.injected:
        words = f"conversation injected: {figures.count(turns, 'turn')} of {conversation}"
        mode = facts.get("mode")
        if mode:
            words += f" (as {mode})" if mode in ("messages", "text") else f" ({mode})"
    elif turns == 0 and dropped == 0:
        words = f"conversation {conversation}: no earlier turns"
    else:
        words = f"conversation {conversation}: history not injected"
    parts = [words]
    if dropped:
        parts.append(f"{figures.count(dropped, 'older turn')} dropped to fit the bound")
    parts.extend(_summary_words(call))
    parts.extend(f"{key}: {compact(value)}" for key, value in facts.items() if key not in _WELL_KNOWN_HISTORY)
    return " · ".join(parts)


def _summary_words(call: CallNode) -> list[str]:
    match call.summary:
        case None:
            covered = _int((call.history or {}).get("summary_of"))
            return [f"the summary made earlier sent for {figures.count(covered, 'older turn')}"] if covered else []
        case HistorySummarized(turns_replaced=replaced):
            return [f"{figures.count(replaced, 'older turn')} summarised into one"]
        case SummaryFailed(fallback=fallback):
            return ["summary failed" + (f": {fallback}" if fallback else ", history truncated instead")]
        case _:
            assert_never(call.summary)


def event_label(node: EventNode) -> Text:
    event = node.event
    return Text.assemble((f"{event.kind}  ", "dim"), _event_words(event.data, event.payload, node.interrupted))


def _event_words(event: Event, payload: Mapping[str, Any], interrupted: bool) -> Text:
    """What an event says, in words; its ``payload`` (as stored) for an event with no words of its own.
    ``interrupted``: the ``CallSent`` of a call whose reply was never recorded (``lens.tree``)."""
    match event:
        case QuestionAnswered(message=message, answer=answer, source=source):
            text = Text.assemble(("asked ", "dim"), one_line(message, 50), ("  answered ", "dim"), one_line(answer, 50))
            if source:
                text.append(f"  ({answered_by(event)})", style="magenta")
            return text
        case AnswerRejected(answer=answer, error=error):
            return Text.assemble(("rejected ", "yellow"), one_line(answer, 50), f"  {one_line(error, 60)}")
        case LoopExited():
            words = f"ended after {figures.count(event.iterations, 'iteration')}: {event.reason}"
            if event.condition:
                words += f" ({event.condition})"
            return Text(words + (f" · error: {event.error}" if event.error else ""))
        case EnsembleDone():
            words = f"ended after {figures.count(event.turn_count, 'round')}: {event.reason}"
            return Text(words + (f" · error: {event.error}" if event.error else ""))
        case ParallelDone(branches=branches, failed=failed):
            listed = ", ".join(str(b) for b in branches)
            return Text(f"branches {listed}" + (f" · failed: {', '.join(map(str, failed))}" if failed else ""))
        case BranchTaken(branch=branch, condition=condition):
            return Text(f"took branch {branch} (condition {condition})")
        case StepErrored(error=error, hint=hint):
            return Text.assemble((one_line(error, 90), "red"), f"  hint: {hint}" if hint else "")
        case HistorySummarized(turns_replaced=replaced, turns_kept=kept):
            return Text(f"{replaced} turns summarised into one, {kept} kept")
        case SummaryFailed(error=error, fallback=fallback):
            return Text(f"{one_line(error, 80)}" + (f" · {fallback}" if fallback else ""), style="yellow")
        case ChildRunStarted(child_run_id=child, pipeline=pipeline):
            return Text(f"child run {child} ({pipeline})")
        case ReplyReceived(output=output, replayed_from=served):
            return Text.assemble(one_line(output), served_words(served))
        case ReplyCut(received=received):
            return Text.assemble(("cut off ", "red"), one_line(received, 50), (f"  ({cut_words(event)})", "red"))
        case AgentStarted(agent=agent, attempt=attempt):  # a script agent about to run its side effects
            return Text(f"{agent} started, attempt {attempt}", style="yellow" if attempt > 1 else "")
        case ProcessStarted(group=group):  # a command agent's process, ended on resume if it outlived flujo
            return Text(f"process group {group} started")
        case CallSent(agent=agent) if not interrupted:  # its run is running: the reply may still come
            return Text(f"call to {agent} sent · no reply recorded yet", style="dim")
        case CallSent(agent=agent):
            words = (
                f"call to {agent} interrupted: sent, but its reply was never recorded · counted as 1 request of"
                f" unknown usage · up to {figures.count(event.most_tokens, 'token')}"
            )
            if event.cost_usd:
                words += f" and {figures.dollars(event.cost_usd)}"
            return Text(words + " held against the limits", style="yellow")
        case ToolCalled(tool=tool, arguments=arguments, result=result, error=error, declined=declined):
            said = f"{tool}({one_line(arguments, 50)}) → {one_line(result, 60)}"
            if declined:
                said = f"{tool}({one_line(arguments, 50)}) declined by the person"
                return Text.assemble((said, "yellow"), served_words(event.replayed_from))
            return Text.assemble((said, "red" if error else ""), served_words(event.replayed_from))
        case PromptSent() | OutputRepaired() | HistoryNotInjected() | UnknownEvent():
            return Text(one_line(dict(payload)))
        case _:
            assert_never(event)


def role_style(role: str) -> str:
    """The colour of a message's role label (``system`` blue, ``user`` green, ``assistant`` cyan)."""
    return {"system": "blue", "user": "green", "assistant": "cyan"}.get(role, "magenta")


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0
