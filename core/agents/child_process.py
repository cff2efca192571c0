"""The processes of ``command:`` agents and tools (and of MCP servers) live no longer than the run that
started them; ``run_command`` runs one to its end, bounded (``command:`` agents and ``command:`` tools share it).

Each command starts in a process group of its own, which flujo kills whole (the command and anything it
started) when the step is cancelled (Ctrl-C, a sibling branch failing) or times out. On Linux the command is
also given a parent-death signal: when the ``flujo`` process dies in a way it cannot clean up after
(``kill -9``, a crash), the kernel kills the command at once, so a command cannot finish a side effect for a
run that will execute its step again on resume. Processes the command itself started are not covered by
that signal (it is not inherited), but they stay in the command's process group: the engine records the
group when the command starts (``group_mark``, an ``agent.process`` event), and a resumed run ends what is
left of it (``end_leftovers``) before it runs the step again.

On Linux a process group is told apart from a later one with the same number by the machine's boot id and
the leader's start time (``/proc``); a process is ended only if it is in that group, started no earlier
than its leader, and (where its environment can be read) belongs to the run. Elsewhere nothing is
recorded and nothing is ended on resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from core.model.errors import RunError
from core.text.bounds import current_bounds

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
_PROC = Path("/proc")
STDERR_TAIL_CHARS = 2000


def _death_signal_setter() -> Callable[[], None] | None:
    """A function the child runs between fork and exec (Linux only): die with SIGKILL when the parent does.

    libc is loaded here, in the parent, so the child only makes the system call."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here, not at the top: a run that starts no program does not pay its import (~37 M instructions)
    import ctypes.util

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


async def start_command(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None
) -> asyncio.subprocess.Process:
    """``argv`` started with pipes for stdin, stdout and stderr, in its own process group, environment ``env``,
    in directory ``cwd`` (flujo's own when None); OSError when it cannot be started."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        process_group=0,
        preexec_fn=_death_signal_setter(),
    )


def missing_program(program: str, *, env: Mapping[str, str], cwd: str | None = None) -> tuple[str, str] | None:
    """Why a command whose first item is ``program`` cannot start with environment ``env`` in directory
    ``cwd`` (None: the working directory), as (what is wrong, a hint), or None when it can be found there. A
    name without a slash is looked for on ``env``'s PATH, as ``start_command`` finds it (the hint lists the
    folders searched); a path is taken from ``cwd``. Only this machine is looked at: the program may be there
    by the time it runs (``flujo validate`` warns of it)."""
    if not program or "\0" in program:
        return None  # no file name: starting it says why
    if "/" not in program:
        path = env.get("PATH", os.defpath)
        if shutil.which(program, path=path) is not None:
            return None
        folders = dict.fromkeys(folder for folder in path.split(os.pathsep) if folder)  # in order, once each
        searched = os.pathsep.join(folders) or "(PATH is empty)"
        return (
            f"{program!r} is not on PATH",
            f"PATH searched: {searched}; install it there, or give the program's absolute path",
        )
    file = Path(program) if os.path.isabs(program) else Path(cwd or os.getcwd()) / program
    where = "" if os.path.isabs(program) else f" (from {cwd or os.getcwd()})"
    if not file.exists():
        return f"{program} does not exist{where}", "give the path of an installed program, or a program's name on PATH"
    if file.is_dir():
        return f"{program} is a folder{where}", "name the program in it"
    if not os.access(file, os.X_OK):
        hint = 'make it executable (chmod +x), or name its interpreter first: ["python3", ...]'
        return f"{program} is not executable{where}", hint
    return None


class CommandFailed(RunError):
    """A command gave no result: it could not start, did not finish in time, printed too much or exited with a
    status other than 0. The message names its owner (``agents.X``, ``tools.X``) and, for an exit, ends with the
    tail of its stderr."""


async def run_command(
    argv: Sequence[str],
    data: bytes,
    *,
    owner: str,
    env: Mapping[str, str],
    timeout: float,
    started: Callable[[int], Awaitable[None]] | None = None,
    cwd: str | None = None,
) -> str:
    """Run ``argv`` (``start_command``, in directory ``cwd``) with ``data`` on its stdin; its stdout, as text.
    ``started`` is told the process's id once it runs (the engine records its group). Its stdout is bounded by
    the setting ``bounds.agent_output_max_bytes`` and its run by ``timeout`` seconds; past either, or when
    cancelled, its whole process group is killed. CommandFailed (naming ``owner``) when there is no result."""
    shown = shlex.join(argv)
    try:
        process = await start_command(argv, env=env, cwd=cwd)
    except OSError as exc:
        raise CommandFailed(
            f"{owner}: cannot start {shown}: {exc.strerror or exc}",
            hint="check the program exists and is executable (is it on PATH?)",
        ) from exc
    if started is not None:
        try:
            await started(process.pid)
        except BaseException:
            kill_group(process)
            await process.wait()
            raise
    limit = current_bounds().agent_output_max_bytes
    try:
        stdout, stderr = await asyncio.wait_for(_communicate(process, data, limit), timeout)
    except TimeoutError:
        kill_group(process)
        await process.communicate()  # reap it and close its pipes
        raise CommandFailed(
            f"{owner}: {shown} did not finish within {timeout:g} s",
            hint=f"raise {owner}.timeout, or make the command faster",
        ) from None
    except _TooMuchOutput:
        kill_group(process)
        await process.communicate()
        raise CommandFailed(
            f"{owner}: {shown} printed more than {limit:,} bytes",
            hint="print less, or raise the setting bounds.agent_output_max_bytes",
        ) from None
    except BaseException:  # cancelled (Ctrl-C, a failing sibling): the command must not go on without us
        kill_group(process)
        await process.wait()  # reap it (killed, it ends at once)
        raise
    if process.returncode != 0:
        tail = stderr.decode(errors="replace").strip()[-STDERR_TAIL_CHARS:]
        raise CommandFailed(
            f"{owner}: {shown} exited with status {process.returncode}" + (f": {tail}" if tail else " (no stderr)")
        )
    return stdout.decode(errors="replace")


def parse_output(text: str) -> Any:
    """A command's stdout as a value: JSON when it parses, else the text without its trailing newline."""
    text = text.removesuffix("\r\n") if text.endswith("\r\n") else text.removesuffix("\n")
    try:
        return json.loads(text)
    except ValueError:
        return text


class _TooMuchOutput(Exception):
    """Internal: a command printed more than it may. Never escapes this module."""


async def _communicate(process: asyncio.subprocess.Process, data: bytes, limit: int) -> tuple[bytes, bytes]:
    """``process.communicate(data)``, reading at most ``limit`` bytes of stdout (then _TooMuchOutput) and
    keeping only the tail of stderr, so a command that prints without end cannot exhaust memory."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

    async def feed() -> None:
        try:
            stdin.write(data)
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):  # the command did not read all its input
            pass
        finally:
            stdin.close()

    async def read_out() -> bytes:
        chunks: list[bytes] = []
        size = 0
        while chunk := await stdout.read(65536):
            size += len(chunk)
            if size > limit:
                raise _TooMuchOutput
            chunks.append(chunk)
        return b"".join(chunks)

    async def read_err() -> bytes:
        tail = b""
        while chunk := await stderr.read(65536):
            tail = (tail + chunk)[-4 * STDERR_TAIL_CHARS :]
        return tail

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(feed())
            out = group.create_task(read_out())
            err = group.create_task(read_err())
    except ExceptionGroup as group_error:  # the other readers were cancelled; report the first cause
        raise group_error.exceptions[0] from None
    await process.wait()
    return out.result(), err.result()


def kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill ``process`` and every process of its group (gone already is fine)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


def group_mark(pid: int) -> tuple[str, int] | None:
    """What tells the process group led by ``pid`` apart from any later one: the boot id and the leader's
    start time in clock ticks since boot. None where ``/proc`` does not say (not Linux, or it ended)."""
    boot = _boot_id()
    stat = _stat(pid)
    if boot is None or stat is None:
        return None
    return boot, stat[1]


def end_leftovers(group: int, *, boot: str, since: int, run_id: str) -> int:
    """Kill what is left of the process group ``group`` a command of run ``run_id`` led (``group_mark`` gave
    ``boot`` and ``since``): its processes started no earlier than its leader, whose environment (when it
    can be read) names the run. How many were killed; none when the machine has rebooted since."""
    if _boot_id() != boot:
        return 0
    killed = 0
    for entry in _PROC.iterdir() if _PROC.is_dir() else ():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        stat = _stat(pid)
        if stat is None or stat[0] != group or stat[1] < since or not _belongs_to(pid, run_id):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def _boot_id() -> str | None:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _stat(pid: int) -> tuple[int, int] | None:
    """The process group and start time (clock ticks since boot) of ``pid``; None if it is gone or a zombie."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # after "pid (comm) ": the name may hold spaces
    if len(fields) < 20 or fields[0] == "Z":
        return None
    return int(fields[2]), int(fields[19])


def _belongs_to(pid: int, run_id: str) -> bool:
    """Whether ``pid``'s environment names ``run_id`` (``FLUJO_RUN_ID``, which commands and what they start
    inherit); True when it cannot be read, as the group and start time already match."""
    try:
        environment = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return True
    return f"FLUJO_RUN_ID={run_id}".encode() in environment.split(b"\0")
