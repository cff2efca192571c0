"""Did-you-mean: the closest known word to a misspelt one, phrased for a message."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like ``word``, or None when none is close enough to be a likely typo."""
    pool = sorted(set(candidates))
    matches = difflib.get_close_matches(word, pool, n=1, cutoff=0.7)
    if matches:
        return matches[0]
    # A case slip ("Loop") or a word that only differs by separators ("max-loops") is still a typo.
    folded = {c.lower().replace("-", "_"): c for c in pool}
    return folded.get(word.lower().replace("-", "_"))


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` — did you mean 'x'?`` when a candidate is close, else the empty string."""
    match = closest(word, candidates)
    return f" — did you mean {match!r}?" if match is not None else ""


def one_of(candidates: Iterable[str]) -> str:
    """``'a', 'b' or 'c'`` for a hint listing what is allowed."""
    names = [repr(c) for c in candidates]
    if not names:
        return "nothing"
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]
