"""Values kept on disk between commands, so that the next command can skip the work that made them: the
blueprint files validated before (``blueprints.checking.validated``) and the settings checked before
(``core.settings.kept_settings``). This module is the part they share: how an entry is written and read.

Invariants: an entry is a file of ``folder`` (made for the user alone, mode 700; each file mode 600), written
whole (a temporary file renamed over it) and read only when it is the user's own, no larger than
``max_bytes``, and its checksum and key match: any other file, damaged or foreign, is a miss, never an
error, and is written again. What an entry holds is pickled, so it is read back only from such a file. At
most ``kept`` entries stay, the oldest removed first. A key is made by the caller from everything the value
depends on, the code that made it included (``code_stamp``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import time
from collections.abc import Iterable
from pathlib import Path

_WRITING = ".writing-"


def code_stamp(files: Iterable[str]) -> bytes:
    """Python's and pydantic's versions and the size and modification time of each of ``files`` (the code a
    kept value depends on): an edited or upgraded flujo makes other keys."""
    import pydantic  # its version only: importing pydantic itself imports none of its models (lazy)

    parts = [sys.version, pydantic.VERSION]
    for file in files:
        try:
            found = os.stat(file)
        except OSError:
            parts.append(f"{file}:-")
            continue
        parts.append(f"{file}:{found.st_size}:{found.st_mtime_ns}")
    return "\0".join(parts).encode()


def loaded_files(packages: tuple[str, ...], *, leave_out: frozenset[str] = frozenset()) -> list[str]:
    """The files of the modules of ``packages`` loaded in this process, by module name, but those named in
    ``leave_out``."""
    found = []
    for name in sorted(sys.modules):
        if name not in packages and not name.startswith(tuple(f"{package}." for package in packages)):
            continue
        if name in leave_out:
            continue
        file = getattr(sys.modules[name], "__file__", None)
        if file:
            found.append(file)
    return found


class KeptEntries:
    """Entries kept in ``folder``, each a file named by its key with ``suffix``, starting with ``head``."""

    def __init__(self, folder: Path, *, head: bytes, suffix: str, kept: int = 256, max_bytes: int = 16 << 20) -> None:
        self.folder = folder
        self.head = head
        self.suffix = suffix
        self.kept = kept
        self.max_bytes = max_bytes

    def _path(self, key: str) -> Path:
        return self.folder / f"{key[:40]}{self.suffix}"

    def recall(self, key: str) -> object | None:
        """The value kept as ``key``, or None: none kept, or one that is damaged, too large or not the user's."""
        try:
            with open(self._path(key), "rb") as entry:
                found = os.fstat(entry.fileno())
                if found.st_uid != os.geteuid() or found.st_size > self.max_bytes:
                    return None
                data = entry.read()
        except OSError:
            return None
        head = len(self.head)
        if not data.startswith(self.head) or hashlib.sha256(data[head + 32 :]).digest() != data[head : head + 32]:
            return None
        try:
            loaded = pickle.loads(data[head + 32 :])
        except Exception:  # a file of an older flujo that slipped past the key: a miss, written again
            return None
        if not isinstance(loaded, tuple) or len(loaded) != 2 or loaded[0] != key:
            return None
        value: object = loaded[1]
        return value

    def keep(self, key: str, value: object) -> None:
        """Write ``value`` as the entry ``key``. Best effort: a folder that cannot be written keeps none."""
        try:
            payload = pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # a value pickle cannot write: nothing kept, made again next time
            return
        if len(payload) + len(self.head) + 32 > self.max_bytes:
            return
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary = self.folder / f"{_WRITING}{os.getpid()}-{os.urandom(6).hex()}"
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(self.head + hashlib.sha256(payload).digest() + payload)
                os.replace(temporary, self._path(key))
            except BaseException:
                os.unlink(temporary)
                raise
            self._prune()
        except OSError:
            return

    def _prune(self) -> None:
        """Remove the oldest entries while there are more than ``kept``, and what a process that was killed as
        it wrote an entry left (an hour old)."""
        with os.scandir(self.folder) as found:
            listed = list(found)
        entries = [entry for entry in listed if entry.name.endswith(self.suffix)]
        for entry in listed:
            if entry.name.startswith(_WRITING) and entry.stat().st_mtime < time.time() - 3600:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        if len(entries) <= self.kept:
            return
        entries.sort(key=lambda entry: entry.stat().st_mtime_ns)
        for entry in entries[: len(entries) - self.kept * 3 // 4]:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
