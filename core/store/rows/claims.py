"""Which process is executing a run: claims that the operating system ends when their process dies.

A run whose status is ``running`` is either being executed right now or was left so by a process that
crashed (``kill -9``, a power cut). Only a claim held by a live process tells the two apart: resuming a
crashed run is what ``flujo resume`` is for, executing the same run twice at once would interleave two
journals.

Invariants:

* A claim is an exclusive POSIX byte-range lock (``fcntl.lockf``) of one byte of ``<database>.claims``,
  at an offset derived from the run id. The kernel drops it when the process exits however it exits,
  SIGKILL included, so a claim can never be left behind by a crash.
* POSIX locks belong to a process, and closing *any* descriptor of the file drops all of them; so each
  process keeps one descriptor per lock file (``_LockFile``), shared by every store on that database,
  and closes it only when it holds no claim on it. Claims inside one process are kept in the same
  registry, because the kernel never makes a process wait for its own locks.
* Two run ids share an offset only if 62 bits of their BLAKE2b digests collide; the worst outcome would
  be a refused resume, never two executions of one run.
* A thread is claimed the same way, under ``thread_key(name)``, while a run of it executes: a key no run id
  can be (it holds a space), so a thread's claim and a run's never meet.
* ``held`` tells which runs a live process claims without taking any claim (``F_GETLK`` asks the kernel
  who holds a byte), so looking (``flujo lens list``) never makes a resume that starts at that moment fail.
  A claim is a lock of the process that took it, so a claim whose process is gone is never reported held,
  even when its pid has been given to another process since.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import struct
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

_OFFSETS = 2**62  # byte offsets a claim can take; off_t is 64-bit on the platforms flujo runs on

# ``struct flock`` as the kernel lays it out, and where its ``l_type`` is: (l_type, l_whence, l_start,
# l_len, l_pid) on Linux, (l_start, l_len, l_pid, l_type, l_whence) on macOS. Elsewhere ``held`` cannot
# ask, and says every claim it does not know of is held (as if the process were alive).
_FLOCK: tuple[str, int] | None = (
    ("@hhqqi4x", 0) if sys.platform.startswith("linux") else ("@qqihh", 3) if sys.platform == "darwin" else None
)


def process_label() -> str:
    """This process as a run's owner is shown to the user: ``pid 4242 on build-01``."""
    return f"pid {os.getpid()} on {socket.gethostname()}"


def thread_key(name: str) -> str:
    """The claim key of thread ``name`` (run ids and thread names hold no space)."""
    return f"thread {name}"


def _offset(run_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(run_id.encode("utf-8"), digest_size=8).digest(), "big") % _OFFSETS


@dataclass
class _LockFile:
    fd: int
    held: set[str] = field(default_factory=set)


_files: dict[str, _LockFile] = {}
_guard = threading.Lock()


def claim(lock_path: str, run_id: str) -> bool:
    """Claim ``run_id`` for this process; False when a live process (this one included) already holds it.

    Raises ``OSError`` when the lock file cannot be opened (the caller translates it)."""
    with _guard:
        entry = _files.get(lock_path)
        if entry is None:
            entry = _LockFile(os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600))
            _files[lock_path] = entry
        if run_id in entry.held:
            return False
        try:
            fcntl.lockf(entry.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _offset(run_id), os.SEEK_SET)
        except (BlockingIOError, PermissionError):  # EAGAIN / EACCES: another process holds it
            _close_if_unused(lock_path, entry)
            return False
        entry.held.add(run_id)
        return True


def held(lock_path: str, run_ids: Iterable[str]) -> set[str]:
    """The ids of ``run_ids`` that a live process (this one included) claims, found without claiming any.

    Raises ``OSError`` when the lock file exists but cannot be read (the caller translates it)."""
    wanted = list(dict.fromkeys(run_ids))
    with _guard:  # no claim of this process starts (or ends) while a descriptor of the file is open here
        entry = _files.get(lock_path)
        found = {run_id for run_id in wanted if entry is not None and run_id in entry.held}
        others = [run_id for run_id in wanted if run_id not in found]
        if not others:
            return found
        if _FLOCK is None:
            return found | set(others)
        if entry is not None:
            return found | {run_id for run_id in others if _locked(entry.fd, _offset(run_id))}
        try:
            fd = os.open(lock_path, os.O_RDONLY)
        except FileNotFoundError:
            return found  # no process has claimed anything in this database yet
        try:
            return found | {run_id for run_id in others if _locked(fd, _offset(run_id))}
        finally:
            os.close(fd)  # this process holds no lock on the file (no entry), so closing drops none


def _locked(fd: int, offset: int) -> bool:
    """Whether another process holds a lock on the byte at ``offset`` of the file ``fd`` is open on."""
    assert _FLOCK is not None
    layout, type_at = _FLOCK
    fields = [fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0]  # Linux's order; macOS starts with l_start
    request = struct.pack(layout, *(fields if type_at == 0 else [*fields[2:], *fields[:2]]))
    answer = struct.unpack(layout, fcntl.fcntl(fd, fcntl.F_GETLK, request))
    return bool(answer[type_at] != fcntl.F_UNLCK)


def release(lock_path: str, run_id: str) -> None:
    """Give up the claim on ``run_id`` (nothing happens when this process does not hold it)."""
    with _guard:
        entry = _files.get(lock_path)
        if entry is None or run_id not in entry.held:
            return
        entry.held.discard(run_id)
        fcntl.lockf(entry.fd, fcntl.LOCK_UN, 1, _offset(run_id), os.SEEK_SET)
        _close_if_unused(lock_path, entry)


def _close_if_unused(lock_path: str, entry: _LockFile) -> None:
    if not entry.held:
        os.close(entry.fd)
        del _files[lock_path]
