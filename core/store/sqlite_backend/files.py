"""The SQLite store's files: where a state URI points, creating or refusing to create the file, its size,
and the one translation of sqlite3 errors into ``StoreError`` (one line and a hint) used by
``core.store.sqlite_backend.store``.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from core.model.errors import StoreError, StoreGone, StoreUnavailable
from core.store.rows.lookup import NO_RUN_HINT

MOVE_HINT = "point FLUJO_STATE_URI (or state_uri in flujo.toml) at another file"
_UNWRITABLE = (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_IOERR)


def path_from_uri(uri: str) -> str:
    path = uri.removeprefix("sqlite:///") if uri.startswith("sqlite:///") else uri
    if not path or "://" in path:
        raise StoreError(
            f"cannot use {uri!r} as a run store",
            hint="give a file path such as .flujo/flujo.db, sqlite:///path/to/flujo.db, or"
            " postgresql://user:password@host:port/database",
        )
    return path if path == ":memory:" else os.path.expanduser(path)


PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600
"""The modes of what flujo creates for a run store: the store keeps what users typed, as typed (answers,
replies, prompts), so only its owner may read it (docs/durability.md). Existing files and folders keep
theirs. SQLite creates the ``-wal`` and ``-shm`` files with the database file's mode."""


def make_parent(path: Path) -> None:
    """Create the store's folder (readable by its owner only) and the empty database file (the same), when
    missing."""
    if path.parent.exists() and not path.parent.is_dir():
        raise StoreError(f"cannot create the run store {path}: {path.parent} is not a directory", hint=MOVE_HINT)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIRECTORY)
    except OSError as exc:
        raise StoreError(
            f"cannot create the directory {path.parent} for the run store: {exc.strerror or exc}",
            hint=MOVE_HINT,
        ) from exc
    # An empty file is a valid SQLite database; created here, it has our mode rather than SQLite's 0644.
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except OSError:  # it exists (keeping its mode), or SQLite will fail to create it too and say why in one line
        return
    os.close(descriptor)


def emptiness(path: str) -> str:
    """How a database file that holds no table looks: an empty file, or an SQLite database with none."""
    try:
        empty = os.path.getsize(path) == 0
    except OSError:
        empty = False
    return "empty file" if empty else "a database with no tables"


def no_create_uri(path: str) -> str:
    """A URI that opens the existing file at ``path`` (read-write, or read-only if write-protected) and never
    creates it."""
    return Path(path).absolute().as_uri() + "?mode=rw"


def size(path: str) -> int | None:
    """Bytes of the database file and its write-ahead log; None for an in-memory database."""
    if path == ":memory:":
        return None
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)  # set by sqlite3 on errors reported by SQLite itself
    return code & 0xFF if isinstance(code, int) and code >= 0 else None


def store_error(label: str, action: str, exc: sqlite3.Error) -> StoreError:
    """The one translation of a sqlite3 error into a one-line ``StoreError`` with a hint. A lock still held
    when the store stopped waiting for it is ``StoreUnavailable``: the store is busy, nothing is wrong with
    what was being written."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = primary_code(exc)
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreUnavailable(
            f"cannot {action}: {label} is locked",
            hint="another process (a running flujo?) is holding a write lock on it; wait for it to finish"
            " (sqlite.busy_timeout_s says how long flujo waits)",
        )
    if primary == sqlite3.SQLITE_NOTADB:
        return StoreError(f"{label} is not a flujo database", hint=MOVE_HINT)
    if primary == sqlite3.SQLITE_CORRUPT:
        return StoreError(f"{label} is damaged: {exc}", hint="move it away, or restore a backup")
    folder = os.path.dirname(os.path.abspath(label))
    if primary in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR) and (primary == sqlite3.SQLITE_FULL or is_full(folder)):
        return StoreError(
            f"cannot {action}: the disk (or quota) holding {label} is full",
            hint=f"free some space on the disk of {folder}, or {MOVE_HINT}",
        )
    if primary in _UNWRITABLE:
        where = f"the directory {folder} is not writable" if not os.access(folder, os.W_OK) else str(exc)
        return StoreError(f"cannot {action}: {where} ({label})", hint=f"check permissions, or {MOVE_HINT}")
    if code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
        return StoreError(f"cannot {action}: no such run", hint=NO_RUN_HINT)
    return StoreError(f"cannot {action}: {exc} ({label})")


_ROOM = 64 * 1024
"""Free bytes below which a disk counts as full: SQLite needs a few pages for its journal and shared memory."""


def is_full(folder: str) -> bool:
    """Whether the disk holding ``folder`` (or its user's quota there) has no room left. SQLite reports a
    full disk as a plain "disk I/O error" when it cannot grow its write-ahead log or shared-memory file, so
    the error path asks the file system: free space first, then (for a quota, which free space does not
    show) a small write that fails with ``ENOSPC`` or ``EDQUOT``."""
    try:
        if shutil.disk_usage(folder).free < _ROOM:
            return True
        with tempfile.TemporaryFile(dir=folder) as probe:
            probe.write(b"\0" * _ROOM)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return False


def identity(path: str) -> tuple[int, int] | None:
    """Which file ``path`` is now (device and inode), or None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def gone(label: str, action: str) -> StoreGone:
    """The store's file was deleted or replaced under this process (``identity`` changed)."""
    return StoreGone(
        f"cannot {action}: the run store {label} was deleted or replaced while this process was using it",
        hint="what was written to it is gone with the file; runs started from now on go to a new store",
    )
