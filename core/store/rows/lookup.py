"""Finding a run by its full id or a unique prefix of it, the same way in every store.

Rules: an exact id always wins (``abc`` finds run ``abc`` even when ``abcd`` exists); otherwise a prefix
matching one run finds it, matching none finds nothing, and matching several is a ``StoreError`` that
names up to ``MAX_CANDIDATES`` of them. The empty string finds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.model.errors import StoreError

MAX_CANDIDATES = 5
"""How many matching ids an ambiguity error names; stores fetch one more to know there are others."""


NO_RUN_HINT = "create the run before recording its steps"
"""The hint of the error for steps or events recorded for a run that does not exist."""


def pick_run_id(prefix: str, matches: Sequence[str]) -> str | None:
    """The run id ``prefix`` designates among ``matches`` (ids starting with it, sorted, at most 6)."""
    if not prefix or not matches:
        return None
    if prefix in matches or len(matches) == 1:
        return prefix if prefix in matches else matches[0]
    shown = ", ".join(matches[:MAX_CANDIDATES])
    more = " and more" if len(matches) > MAX_CANDIDATES else ""
    raise StoreError(
        f"run id {prefix!r} is ambiguous: it matches {shown}{more}",
        hint="type more characters of the run id",
    )
