"""How lens writes figures: durations, times, token counts, costs and counted nouns.

Every view (plain, JSON aside, and the TUI) uses these, so a run reads the same everywhere. Times are
shown in the zone given (the local one by default), so tests fix it.
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from core import Usage


def duration(seconds: float | None) -> str:
    """``0.4 ms``, ``12 ms``, ``1.25 s``, ``2m 05s``, ``1h 02m``; ``—`` when unknown."""
    if seconds is None:
        return "—"
    if seconds < 0.001:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    if seconds < 3600:
        minutes, rest = divmod(int(seconds), 60)
        return f"{minutes}m {rest:02d}s"
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h {rest // 60:02d}m"


def when(ts: float, tz: tzinfo | None = None, *, seconds: bool = True) -> str:
    """``2026-11-24 01:50:58`` (or without the seconds) in zone ``tz`` (local when None)."""
    moment = datetime.fromtimestamp(ts, tz) if tz is not None else datetime.fromtimestamp(ts).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def tokens(usage: Usage) -> str:
    return f"{usage.total_tokens:,}"


def cost(usage: Usage) -> str:
    """``$0.0123``; ``$0`` for free calls; ``?`` when a model without a price was called, or a call whose
    usage is unknown (interrupted): never $0."""
    if usage.cost_usd is None:
        return "?"
    return dollars(usage.cost_usd)


def dollars(amount: float) -> str:
    """``$0.0123``, ``$0.000150`` (small amounts with more digits), ``$0``."""
    if amount == 0:
        return "$0"
    return f"${amount:.4f}" if amount >= 0.01 else f"${amount:.6f}"


def count(n: int, word: str, plural: str | None = None) -> str:
    """``1 turn``, ``3 turns`` (``plural`` for irregular words)."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {plural or word + 's'}"
