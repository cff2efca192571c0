"""Ctrl-C while the ``flujo`` command starts, before any of its handlers can act (Python importing the
command line, Typer building it): remembered, then reported as one line with exit code 130 once the
command line is loaded, instead of a ``KeyboardInterrupt`` traceback out of an import.

Only when the process was started as the ``flujo`` command (the console script or ``python -m
flujo_cli.main``): importing ``flujo_cli`` elsewhere (tests, a program) leaves Ctrl-C alone.
"""

from __future__ import annotations

import _thread
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


def redeliver_swallowed() -> None:
    """A Ctrl-C that lands while Python or a library calls back from C code that cannot raise (a finalizer;
    pydantic-core building a validator) is only printed, "Exception ignored in: ...", with its traceback, and
    lost: the command then goes on as if it never came. From now on such an interrupt is not printed but
    raised again in the next Python code that runs, where it can propagate, so the command ends as at any
    Ctrl-C."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if unraisable.exc_type is None or not issubclass(unraisable.exc_type, KeyboardInterrupt):
            previous(unraisable)
        elif _thread.get_ident() == _main_thread_ident():
            sys.setprofile(_raise_interrupt_once)
        else:  # only the main thread gets Ctrl-C; the main thread will raise it at its next instruction
            _thread.interrupt_main()

    sys.unraisablehook = hook


def _main_thread_ident() -> int | None:
    import threading

    return threading.main_thread().ident


def _raise_interrupt_once(frame: FrameType, event: str, arg: object) -> None:
    """A profile function: at the first event outside ``redeliver_swallowed``'s hook (its own return is one),
    it removes itself and raises ``KeyboardInterrupt`` there."""
    if frame.f_code.co_name == "hook" and frame.f_code.co_filename == __file__:
        return
    sys.setprofile(None)
    raise KeyboardInterrupt


def restore() -> bool:
    """Give Ctrl-C back its usual handler (asyncio's run then turns it into a clean stop); True when it was
    pressed while deferred."""
    global _deferring
    if _deferring:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _deferring = False
    return _interrupted
