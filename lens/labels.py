"""One line per node: what the plain tree and the TUI tree both show for a run, step, iteration, agent call,
message or event (``label``), and the words of the badges (``history_badge``).

Labels are ``rich.text.Text``; styles carry meaning only together with words or marks (``✓ completed``), so
the text reads the same without colour.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, assert_never

from rich.text import Text

from core.records import RunRecord
from core.usage import Usage
from lens import figures
from lens.preview import compact, one_line
from lens.tree import CallNode, EventNode, GroupNode, MessageNode, Node, RunNode, StepNode

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
    """``2 requests · 130 tokens · $0.0012``, or "" for a step that called no model (unless ``always``)."""
    if not always and usage.requests == 0 and usage.total_tokens == 0:
        return ""
    return " · ".join(
        (figures.count(usage.requests, "request"), figures.count(usage.total_tokens, "token"), figures.cost(usage))
    )


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
        return text
    words = (record.kind, figures.duration(record.duration_s), usage_words(node.usage))
    text.append(" · ".join(w for w in words if w))
    if record.status != "completed":
        text.append(f" · {record.status}", style=_MARKS.get(record.status, ("", ""))[1])
    for event in node.events:
        if event.kind == "hitl.answer" and event.payload.get("source"):
            text.append(" · " + answered_by(event.payload), style="magenta")
    return text


def answered_by(payload: Mapping[str, Any]) -> str:
    """Who gave a ``hitl.answer`` that the person did not type: ``simulated by agents.tester``, ``replayed
    from run 3f2a…``; "answered by the person" otherwise."""
    source, by = payload.get("source"), payload.get("by")
    if source == "simulated":
        return f"simulated by {by}"
    if source == "replayed":
        return f"replayed from run {by}"
    return "answered by the person"


def call_label(call: CallNode) -> Text:
    agent = str(call.prompt.get("agent", "agent"))
    text = Text.assemble(("▸ ", "magenta"), ("call ", "magenta"), (agent, "bold magenta"))
    text.append(" · " + figures.count(len(call.messages), "message"))
    if call.prompt.get("purpose") == "summarize":
        text.append(" · summary request", style="magenta")
    if call.prompt.get("simulated_person"):
        text.append(f" · simulated person {call.prompt.get('simulated_person')}", style="magenta")
    badge = history_badge(call)
    if badge:
        text.append(" · ")
        text.append(badge, style="bold yellow" if call.injected else "yellow")
    if call.repairs:
        text.append(" · output repaired", style="yellow")
    attempts = call.reply.get("attempts") if call.reply is not None else None
    if isinstance(attempts, int) and attempts > 1:
        text.append(f" · {attempts} attempts")
    if call.reply is None:
        text.append(" · no reply recorded", style="dim")
    return text


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
    event = call.summary
    if event is None:
        covered = _int((call.history or {}).get("summary_of"))
        return [f"the summary made earlier sent for {figures.count(covered, 'older turn')}"] if covered else []
    if event.kind == "history.summarized":
        replaced = _int(event.payload.get("turns_replaced"))
        return [f"{figures.count(replaced, 'older turn')} summarised into one"]
    fallback = event.payload.get("fallback")
    return ["summary failed" + (f": {fallback}" if fallback else ", history truncated instead")]


def event_label(node: EventNode) -> Text:
    kind, payload = node.event.kind, node.event.payload
    return Text.assemble((f"{kind}  ", "dim"), _event_words(kind, payload))


def _event_words(kind: str, payload: Mapping[str, Any]) -> Text:
    get = payload.get
    if kind == "hitl.answer":
        text = Text.assemble(
            ("asked ", "dim"), one_line(get("message"), 50), ("  answered ", "dim"), one_line(get("answer"), 50)
        )
        if get("source"):
            text.append(f"  ({answered_by(payload)})", style="magenta")
        return text
    if kind == "hitl.rejected":
        return Text.assemble(("rejected ", "yellow"), one_line(get("answer"), 50), f"  {one_line(get('error'), 60)}")
    if kind == "loop.exit":
        words = f"ended after {figures.count(_int(get('iterations')), 'iteration')}: {get('reason')}"
        if get("condition"):
            words += f" ({get('condition')})"
        return Text(words + (f" · error: {get('error')}" if get("error") else ""))
    if kind == "ensemble.done":
        words = f"ended after {figures.count(_int(get('turn_count')), 'round')}: {get('reason')}"
        return Text(words + (f" · error: {get('error')}" if get("error") else ""))
    if kind == "parallel.done":
        failed = get("failed") or {}
        branches = ", ".join(str(b) for b in get("branches") or [])
        return Text(f"branches {branches}" + (f" · failed: {', '.join(map(str, failed))}" if failed else ""))
    if kind == "conditional.branch":
        return Text(f"took branch {get('branch')} (condition {get('condition')})")
    if kind == "step.error":
        return Text.assemble((one_line(get("error"), 90), "red"), f"  hint: {get('hint')}" if get("hint") else "")
    if kind == "history.summarized":
        return Text(f"{_int(get('turns_replaced'))} turns summarised into one, {_int(get('turns_kept'))} kept")
    if kind == "history.summarize_failed":
        return Text(
            f"{one_line(get('error'), 80)}" + (f" · {get('fallback')}" if get("fallback") else ""), style="yellow"
        )
    if kind == "workflow.child":
        return Text(f"child run {get('child_run_id')} ({get('pipeline')})")
    if kind == "agent.reply":
        return Text(one_line(get("output")))
    if kind == "agent.started":  # a script agent about to run its side effects (docs/durability.md)
        attempt = _int(get("attempt"))
        return Text(f"{get('agent')} started, attempt {attempt}", style="yellow" if attempt > 1 else "")
    return Text(one_line(dict(payload)))


def role_style(role: str) -> str:
    """The colour of a message's role label (``system`` blue, ``user`` green, ``assistant`` cyan)."""
    return {"system": "blue", "user": "green", "assistant": "cyan"}.get(role, "magenta")


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0
