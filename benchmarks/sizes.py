"""Full sizes for ``make bench``, small ones when ``make test`` runs each benchmark once, untimed.

``make test`` collects ``benchmarks/`` with ``--benchmark-disable`` so that no benchmark can rot; it only
checks that each one still runs and what it asserts, so it runs them on small inputs (``benchmarks/conftest.py``
sets ``FULL`` before the modules are collected).
"""

from __future__ import annotations

FULL = True


def size(full: int, quick: int) -> int:
    """``full`` when benchmarks are measured, ``quick`` when they only run once."""
    return full if FULL else quick
