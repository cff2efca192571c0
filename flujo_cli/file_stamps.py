"""Whether a file still has the content it was read with, told from its ``stat`` when that is enough.

``flujo worker`` checks before each run that the files it keeps a blueprint and settings from are unchanged
(``flujo_cli.blueprint_cache``). Reading and hashing each file every time costs more than a short run; a
``stat`` costs a few microseconds. A ``Stamp`` holds what a file was read with: the SHA-256 of its bytes
(``digest``; None for a file that was absent) and its stat signature (modification and change times in ns,
size, inode). ``Stamp.unchanged`` tells, as git's index does:

* a different signature (or a file that appeared, disappeared or is no longer a regular file): the file is
  read and hashed again, and it is unchanged when its content is (a file touched, or rewritten with the same
  bytes, is still the same); the stamp then takes the new signature;
* an equal signature: unchanged, unless the stamp is *racy*: the file last changed (its modification or change
  time) less than ``RACY_NS`` before it was read. File times come from a clock that ticks coarsely (a timer
  tick on Linux, 2 s on FAT, the server's clock on a network file system), so a file rewritten at the same
  size soon after it was read can keep its signature; a racy stamp is read and hashed at each check, until a
  check finds its last change ``RACY_NS`` older than that read.

Invariant: a stamp's ``read_ns`` is the clock before both the read its digest comes from and the ``stat`` its
signature comes from, so that a write after either gives the file another signature or a last change after
``read_ns`` (a racy stamp): it is read again at the next check.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass

RACY_NS = 3_000_000_000
"""How close to the read a file's last change makes its stamp racy: above the coarsest file clock flujo
expects (FAT's 2 s), with room for a network file system's clock running a little ahead."""

Signature = tuple[int, int, int, int]
"""st_mtime_ns, st_ctime_ns, st_size, st_ino."""


@dataclass
class Stamp:
    """What the file at ``path`` was read with (module docstring); ``hashes`` counts its reads for a check."""

    path: str
    digest: str | None
    signature: Signature | None
    read_ns: int
    hashes: int = 0

    @classmethod
    def taken(cls, path: str, digest: str | None, read_ns: int) -> Stamp:
        """The stamp of ``path`` read (starting at ``read_ns``, before this call) with content of ``digest``
        (None: absent). Its signature is taken now, after that read: if the file changed in between, its
        change time is after ``read_ns`` and the stamp is racy, so the next check reads it again."""
        return cls(path, digest, _signature(path), read_ns)

    @classmethod
    def read(cls, path: str) -> Stamp:
        """The stamp of ``path`` read now (absent, when it is not a regular file)."""
        read_ns = time.time_ns()
        signature = _signature(path)
        return cls(path, _digest(_content(path)) if signature is not None else None, signature, read_ns)

    def unchanged(self) -> bool:
        """Whether the file still has the content (or absence) it was read with (module docstring)."""
        now = time.time_ns()
        signature = _signature(self.path)
        if signature == self.signature and not self._racy():
            return True
        if signature is None or self.digest is None:  # absent now, or absent then and here now
            return signature is None and self.digest is None
        self.hashes += 1
        if _digest(_content(self.path)) != self.digest:
            return False
        # The same content: the signature read before it, and the time before both, for the next check.
        self.signature, self.read_ns = signature, now
        return True

    def _racy(self) -> bool:
        if self.signature is None:
            return False
        mtime_ns, ctime_ns = self.signature[0], self.signature[1]
        return max(mtime_ns, ctime_ns) > self.read_ns - RACY_NS


def _signature(path: str) -> Signature | None:
    """The stat signature of the regular file at ``path``; None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    return (found.st_mtime_ns, found.st_ctime_ns, found.st_size, found.st_ino)


def _content(path: str) -> bytes | None:
    try:
        with open(path, "rb") as file:  # Path.read_bytes, with less around it
            return file.read()
    except OSError:
        return None


def _digest(content: bytes | None) -> str | None:
    return None if content is None else hashlib.sha256(content).hexdigest()
