"""The processes of ``command:`` agents live no longer than the run that started them.

Each command starts in a process group of its own, which flujo kills whole (the command and anything it
started) when the step is cancelled (Ctrl-C, a sibling branch failing) or times out. On Linux the command is
also given a parent-death signal: when the ``flujo`` process dies in a way it cannot clean up after
(``kill -9``, a crash), the kernel kills the command at once, so a command cannot finish a side effect for a
run that will execute its step again on resume. Processes the command itself started are not covered by
that signal (it is not inherited); they are its own to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _death_signal_setter() -> Callable[[], None] | None:
    """A function the child runs between fork and exec (Linux only): die with SIGKILL when the parent does.

    libc is loaded here, in the parent, so the child only makes the system call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):  # no usable libc: the process group still covers cancel and timeout
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was set: nobody would get the output
            os._exit(1)

    return set_death_signal


async def start_command(argv: Sequence[str], *, env: Mapping[str, str]) -> asyncio.subprocess.Process:
    """``argv`` started with pipes for stdin, stdout and stderr, in its own process group, environment ``env``
    (OSError when it cannot be started)."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        process_group=0,
        preexec_fn=_death_signal_setter(),
    )


def kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill ``process`` and every process of its group (gone already is fine)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
