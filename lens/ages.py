"""Ages and dates as ``flujo lens`` takes them: ``--older-than`` of ``prune`` and ``--since`` of ``list``.

An age is a number and a unit (``90m``, ``12h``, ``30d``, ``2w``; also ``s``), counted back from now; a date
is an ISO date or date and time (``2025-06-01``, ``2025-06-01T09:30``, with an offset or ``Z`` if you like),
in the local time zone when it names none. ``parse_moment`` turns either into seconds since the epoch.
"""

from __future__ import annotations

import re
from datetime import datetime

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_EXAMPLES = "a number and a unit, such as 90m, 12h, 30d or 2w, or an ISO date such as 2025-06-01"


def parse_age(text: str) -> float:
    """Seconds in an age such as ``90m``, ``12h``, ``30d`` or ``2w``; ``ValueError`` (saying what is
    accepted) otherwise."""
    found = _AGE.match(text.lower())
    if found is None:
        raise ValueError(f"{text!r} is not an age: give a number and a unit, such as 90m, 12h, 30d or 2w")
    return float(found.group(1)) * _UNITS[found.group(2)]


def parse_moment(text: str, *, now: float) -> float:
    """The moment (seconds since the epoch) that ``text`` names: ``now`` less an age (``30d``), or an ISO
    date or date and time (local time unless it says otherwise); ``ValueError`` saying what is accepted."""
    if _AGE.match(text.lower()) is not None:
        return now - parse_age(text)
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise ValueError(f"{text!r} is not an age or a date: give {_EXAMPLES}") from None
    return moment.timestamp()  # a naive date and time is read in the local time zone
