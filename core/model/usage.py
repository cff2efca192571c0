"""Token and cost accounting for one call, a step or a whole run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    """What calls cost. ``cost_usd`` is None when the price of any call counted here is unknown: never
    guessed, and never counted as zero (offline and script agents do cost exactly 0.0).

    ``interrupted`` counts the requests among ``requests`` whose usage is unknown: a provider's call sent
    by a process that was stopped before it recorded the reply (``core.model.records.call_interrupted``). Their tokens
    are not in the counts, and their cost makes ``cost_usd`` unknown."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost_usd: float | None = 0.0
    interrupted: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        # Unknown plus anything is unknown: a total that skipped an unpriced call would understate the spend.
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
            cost_usd=cost,
            interrupted=self.interrupted + other.interrupted,
        )

    def to_dict(self) -> dict[str, int | float | None]:
        """The usage as JSON data; ``interrupted`` only when some requests were (the shape is otherwise the
        one flujo has always written)."""
        data: dict[str, int | float | None] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "requests": self.requests,
            "cost_usd": self.cost_usd,
        }
        if self.interrupted:
            data["interrupted"] = self.interrupted
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """The usage ``to_dict`` wrote (a missing or misfit count reads as 0, an unknown cost as None)."""

        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        cost = data.get("cost_usd")
        return cls(
            input_tokens=count("input_tokens"),
            output_tokens=count("output_tokens"),
            requests=count("requests"),
            cost_usd=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
            interrupted=count("interrupted"),
        )


ZERO_USAGE = Usage()
INTERRUPTED_CALL = Usage(requests=1, cost_usd=None, interrupted=1)
"""What a call whose reply was never recorded counts: one request, of unknown tokens and cost."""
FREE_INTERRUPTED_CALL = Usage(requests=1, cost_usd=0.0, interrupted=1)
"""The same for a model that costs nothing (a local one): its tokens are unknown, its cost is 0."""
