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
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import socket
import threading
from dataclasses import dataclass, field

_OFFSETS = 2**62  # byte offsets a claim can take; off_t is 64-bit on the platforms flujo runs on


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
