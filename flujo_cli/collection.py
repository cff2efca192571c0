"""No garbage collection while ``flujo run`` / ``flujo resume`` load their code and the blueprint.

What start-up makes lives as long as the process (modules, classes, the blueprint's models, the compiled
pipeline): a collection then finds nothing to free, and Python collects all the same every few hundred new
objects, about a third of a second's worth of a run's start-up spent scanning what was just loaded. So the
collector is paused while loading, and when the run is about to start, what is loaded is frozen (later full
collections never scan it again) and collection resumes. ``paused`` always ends with the collector as it
was before, whatever happened in between (an error, a usage error before anything ran).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_resume = False  # whether ``loaded`` turns the collector back on: it was on when paused


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside, unless ``loaded`` turned it back on; as it was on the way out."""
    global _resume
    was, _resume = gc.isenabled(), gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        _resume = False
        if was:
            gc.enable()


def loaded() -> None:
    """What is loaded now lives as long as the run: frozen, and collection resumes for what the run makes."""
    global _resume
    gc.freeze()
    if _resume:
        _resume = False
        gc.enable()
