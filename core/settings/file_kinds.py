"""What is at a path given as a file to read (a blueprint, an import, an answers file), in words.

A folder, ``/dev/null`` or a FIFO is not "no such file": the person gave a path that exists, and is told
what it is. Told apart with ``os.stat`` before anything opens the path, because opening a FIFO waits for
a writer that may never come.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def not_a_file(path: Path) -> str | None:
    """None when ``path`` is a regular file (or a link to one); otherwise what is there instead, to follow
    "PATH is": ``"nothing"`` (no such path, or a broken link), ``"a folder"``, ``"a device"``,
    ``"a FIFO (named pipe)"``, ``"a socket"``, ``"a symlink loop"`` (links that lead back to themselves: no
    path can be resolved through them). None too when the path cannot be looked at (a folder on the
    way that cannot be searched): reading it then reports the reason."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # NotADirectoryError: a part of the path is a file
        return "nothing"
    except OSError as exc:
        return "a symlink loop" if exc.errno == errno.ELOOP else None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
