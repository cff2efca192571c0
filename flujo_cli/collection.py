"""No garbage collection while ``flujo run`` / ``flujo resume`` load their code and the blueprint.

What start-up makes lives as long as the process (modules, classes, the blueprint's models, the compiled
pipeline): a collection then finds nothing to free, and Python collects all the same every few hundred new
objects, about a third of a second's worth of a run's start-up spent scanning what was just loaded. So the
collector is paused while loading, and when the run is about to start, what is loaded is frozen (later full
collections never scan it again) and collection resumes. ``paused`` always ends with the collector as it
was before, whatever happened in between (an error, a usage error before anything ran).

The ``flujo`` command pauses it from its first line (``from_start``), before Python loads the command line
and its libraries: a one-step run's start-up made 46 collections there, which freed 439 objects and cost
18.7 M instructions (2 % of it). ``run``, ``resume`` and ``worker`` keep it paused into their own
``paused``; every other command turns it back on before it starts (``start_up_done``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_resume = False  # whether ``loaded`` turns the collector back on: it was on when paused
_from_start = False  # paused by ``from_start``, and neither ``start_up_done`` nor ``paused`` took it over yet


def from_start() -> None:
    """The collector off from here (the ``flujo`` command's start), if it is on."""
    global _from_start
    if gc.isenabled():
        gc.disable()
        _from_start = True


def start_up_done() -> None:
    """The collector back on, if ``from_start`` turned it off and no ``paused`` has taken that over."""
    global _from_start
    if _from_start:
        _from_start = False
        gc.enable()


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside, unless ``loaded`` turned it back on; as it was on the way out."""
    global _resume, _from_start
    was = _resume = gc.isenabled() or _from_start  # on, but for the command's start (``from_start``)
    _from_start = False
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
