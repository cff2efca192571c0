"""Keys that are accepted and validated but do not act at run time yet — the one list of them.

``validate`` warns (code ``not-yet-supported``) at each of these keys wherever a blueprint uses one, so
no author mistakes a key that parses for a key that works. When a feature lands, delete its entry here
(and its test expectation); nothing else needs to change.

Keys: ``loop.<key>`` for a loop setting, ``step.<key>`` for a ``kind: step`` key, ``<key>`` at the top.
"""

from __future__ import annotations

from collections.abc import Mapping

NOT_YET_SUPPORTED: Mapping[str, str] = {}


def pending_message(feature: str, key: str) -> str | None:
    """The warning text for ``key`` (as written) when ``feature`` is not supported yet, else None."""
    reason = NOT_YET_SUPPORTED.get(feature)
    if reason is None:
        return None
    return f"{key} is accepted but has no effect yet: {reason}"
