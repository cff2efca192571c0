"""Ctrl-C while the ``flujo`` command starts, before any of its handlers can act (Python importing the
command line, Typer building it): remembered, then reported as one line with exit code 130 once the
command line is loaded, instead of a ``KeyboardInterrupt`` traceback out of an import.

Only when the process was started as the ``flujo`` command (the console script or ``python -m
flujo_cli.main``): importing ``flujo_cli`` elsewhere (tests, a program) leaves Ctrl-C alone.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

_interrupted = False
_deferring = False


def _remember(signum: int, frame: FrameType | None) -> None:
    global _interrupted
    _interrupted = True


def started_as_command() -> bool:
    """Whether this process is the ``flujo`` command (the console script, or ``python -m flujo_cli.main``
    while it imports the package), not a program or a test importing ``flujo_cli``."""
    return (os.path.basename(sys.argv[0]) if sys.argv else "") in ("flujo", "-m")


def defer_when_started_as_command() -> None:
    """Remember Ctrl-C instead of raising it, until ``restore`` (the ``flujo`` command only)."""
    global _deferring
    if not started_as_command():
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:  # ignored, or someone else's
        return
    signal.signal(signal.SIGINT, _remember)
    _deferring = True


def restore() -> bool:
    """Give Ctrl-C back its usual handler (asyncio's run then turns it into a clean stop); True when it was
    pressed while deferred."""
    global _deferring
    if _deferring:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _deferring = False
    return _interrupted
