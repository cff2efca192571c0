"""What a run costs at most, in words: the model calls it can make, their prices, and the limits.

The count is an upper bound read from the structure: a step inside loops runs at most the product of
their ``max_loops``; every branch of a parallel or a conditional counts (a conditional runs only one,
so this over-counts, never under-counts); a map multiplies by its number of items, which only the run
knows. A call with an ``output_schema`` may take one repair request; a step whose agent uses tools calls its
model up to ``max_tool_calls`` + 1 times. Offline agents (``scripted``, ``echo``) and Python or command
agents use no tokens. The limits are the blueprint's ``limits`` (each key falling back to the configured
``[limits]``), which flujo checks before every model call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from blueprints.explain.scope import Call, Tally
from blueprints.schema import LimitsModel
from core import LimitSettings, ModelInfo, provider_of


def _times(call: Call) -> str:
    words = "once" if call.calls == 1 else f"up to {call.calls} times"
    for name in reversed(call.per_item):
        words += f" per item of {name}"
    return words


def _money(value: float) -> str:
    return f"${value:.2f}" if value >= 0.01 else f"${value:g}"


def _total(calls: Sequence[Call]) -> int | None:
    return None if any(call.per_item for call in calls) else sum(call.calls for call in calls)


def _calls_line(calls: Sequence[Call]) -> str:
    listed = "; ".join(f"{call.label} ({call.model}) {_times(call)}" for call in calls)
    total = _total(calls)
    if total is None:
        return f"Model calls: {listed}; the total depends on the number of items."
    return f"At most {total} model call{'s' if total > 1 else ''}: {listed}."


def _price_line(model: str, info: ModelInfo | None) -> str:
    provider = provider_of(model)
    if provider is not None and not provider.priced:
        return f"{model} runs on this machine: its calls cost nothing."
    if info is None or info.input_per_mtok is None or info.output_per_mtok is None:
        return (
            f"{model} has no price in the model table, so the run's cost is unknown"
            " (add it under [models] in flujo.toml)."
        )
    return (
        f"{model} costs {_money(info.input_per_mtok)} per million input tokens and"
        f" {_money(info.output_per_mtok)} per million output tokens."
    )


def _limits_line(limits: LimitsModel | None, defaults: LimitSettings, *, metered: bool) -> str | None:
    cost = limits.max_cost_usd if limits is not None and limits.max_cost_usd is not None else defaults.max_cost_usd
    tokens = limits.max_tokens if limits is not None and limits.max_tokens is not None else defaults.max_tokens
    if cost is None and tokens is None:
        if not metered:
            return None
        return (
            "No usage limit is set: add limits: {max_cost_usd: ..., max_tokens: ...}, or run it with"
            " --max-cost-usd / --max-tokens."
        )
    bounds = " and ".join(
        words for words in (_money(cost) if cost is not None else "", f"{tokens} tokens" if tokens else "") if words
    )
    where = "limits" if limits is not None else "the configured [limits]"
    return (
        f"At most {bounds} per run ({where}): flujo checks before each model call and stops the run"
        " rather than go past them."
    )


def cost_words(
    tally: Tally, limits: LimitsModel | None, *, defaults: LimitSettings, models: Mapping[str, ModelInfo]
) -> tuple[str, ...]:
    """The cost section: calls, repairs, summaries, prices and limits."""
    metered = [call for call in tally.calls if call.model is not None]
    summaries = [call for call in tally.summarizer_calls if call.model is not None]
    lines: list[str] = []
    if not metered and not summaries:
        if tally.calls or tally.summarizer_calls:
            lines.append(
                "No model provider is called (scripted, echo, Python or command agents only):"
                " a run uses no tokens and costs nothing."
            )
        else:
            lines.append("No agent is called: a run uses no tokens and costs nothing.")
    if metered:
        lines.append(_calls_line(metered))
        structured = [call for call in metered if call.structured]
        if structured:
            total, extra = _total(metered), _total(structured)
            more = f": at most {total + extra} in all" if total is not None and extra is not None else ""
            lines.append(
                f"A reply that does not match its output_schema gets one repair request"
                f" ({', '.join(call.label for call in structured)}){more}."
            )
    for call in metered:
        if call.turns > 1:
            lines.append(
                f"{call.label} uses tools: each time it runs, {call.model} is called up to {call.turns} times"
                f" (at most {call.turns - 1} tool calls, their results sent back, then the answer)."
            )
    for call in summaries:
        lines.append(
            f"{call.agent} ({call.model}) may also condense the history before each agent call of {call.label}:"
            f" {_times(call)}."
        )
    for model in sorted({call.model for call in (*metered, *summaries) if call.model is not None}):
        lines.append(_price_line(model, models.get(model)))
    limit = _limits_line(limits, defaults, metered=bool(metered or summaries))
    if limit is not None:
        lines.append(limit)
    return tuple(lines)
