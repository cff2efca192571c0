"""Blueprint files validated before, kept on disk so that the next command reading one skips its validation.

Reading a blueprint file parses its YAML with positions and validates the data against the schema's models.
For a small blueprint the reading is a few milliseconds, but the models' validator must first be built, and
building it was the largest part of a ``flujo run``'s start-up (docs/performance.md, "Start-up round 3"). The
models are plain frozen dataclasses that import nothing of pydantic (``blueprints.schema``; pydantic comes in
with ``blueprints.schema.validating``), so a command whose files all come from here builds no validator and
loads none of pydantic's model machinery.

``ValidatedFiles`` keeps, for a file whose structure validated, what ``blueprints.checking.analysis`` made of
it before its checks: the model, the position index and the parse's findings (warnings). The checks, which
can look at other files (a prompt file, a model file), run again every time, as do the imports' checks.

An entry is found by a key made of everything the result depends on:

* the file's bytes (their SHA-256) and its name as given (positions name it);
* the reading's bounds, the ``--model`` overrides and the settings' ``default_model`` (applied before
  validating);
* the code that reads and validates: Python's and pydantic's versions, and the size and modification time
  of every loaded module of the ``blueprints`` and ``core`` packages (an edited or upgraded flujo misses).

Entries are files in one folder (the command line's: ``flujo_cli.user_cache``), written whole (a temporary
file renamed) and read only when they are the user's own and their checksum matches; any other file, damaged
or foreign, is a miss and is written again. Nothing is kept of a file with errors: it is validated each time,
so that it reports its own findings. At most ``KEPT`` entries are kept, the oldest removed first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from blueprints.checking.model_overrides import ModelOverrides
from blueprints.reading.findings import Finding
from blueprints.reading.positions import PositionIndex
from blueprints.schema import BlueprintModel
from core import BoundsSettings

FORMAT = b"flujo validated blueprint 2\n"  # 2: the models are dataclasses (1: pydantic models)
KEPT = 256
MAX_BYTES = 16 * 1024 * 1024  # an entry larger than this is not kept (a blueprint is at most 5 MB of text)
_SUFFIX = ".validated"
_WRITING = ".writing-"


@dataclass(frozen=True)
class Validated:
    """A blueprint file's structure, validated: the model, where each value is, the parse's findings (its
    warnings), and the agents that run the settings' ``default_model``."""

    model: BlueprintModel
    index: PositionIndex
    findings: tuple[Finding, ...]
    defaulted: frozenset[str]


def _code_stamp() -> bytes:
    """Python's and pydantic's versions and the stat of each loaded module of ``blueprints`` and ``core``."""
    import pydantic

    parts = [sys.version, pydantic.VERSION]
    for name in sorted(sys.modules):
        if not name.startswith(("blueprints.", "core.")) and name not in ("blueprints", "core"):
            continue
        file = getattr(sys.modules[name], "__file__", None)
        if not file:
            continue
        try:
            found = os.stat(file)
        except OSError:
            parts.append(f"{name}:-")
            continue
        parts.append(f"{name}:{found.st_size}:{found.st_mtime_ns}")
    return "\0".join(parts).encode()


class ValidatedFiles:
    """Validated blueprint files, kept in ``folder`` (made, for the user alone, when first written)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._stamp: bytes | None = None

    def key(
        self,
        file: str,
        source_hash: str,
        *,
        bounds: BoundsSettings,
        models: ModelOverrides,
        default_model: str | None,
    ) -> str:
        """The name of the entry of ``file`` (named as given) whose bytes hash to ``source_hash``, read
        within ``bounds``, with ``models`` and ``default_model`` applied, by this code."""
        if self._stamp is None:
            self._stamp = _code_stamp()
        digest = hashlib.sha256(FORMAT + self._stamp)
        for part in (file, source_hash, repr(bounds), "\0".join(models.assignments()), default_model or ""):
            digest.update(b"\0" + part.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / f"{key[:40]}{_SUFFIX}"

    def recall(self, key: str) -> Validated | None:
        """The entry ``key``, or None: none kept, or one that is damaged, too large or not the user's."""
        try:
            with open(self._path(key), "rb") as entry:
                found = os.fstat(entry.fileno())
                if found.st_uid != os.geteuid() or found.st_size > MAX_BYTES:
                    return None
                data = entry.read()
        except OSError:
            return None
        head = len(FORMAT)
        if not data.startswith(FORMAT) or hashlib.sha256(data[head + 32 :]).digest() != data[head : head + 32]:
            return None
        try:
            loaded = pickle.loads(data[head + 32 :])
        except Exception:  # a file of an older flujo that slipped past the key: a miss, written again
            return None
        if not isinstance(loaded, tuple) or len(loaded) != 2 or loaded[0] != key:
            return None
        validated = loaded[1]
        return validated if isinstance(validated, Validated) else None

    def keep(self, key: str, validated: Validated) -> None:
        """Write ``validated`` as the entry ``key``. Best effort: a folder that cannot be written keeps none."""
        try:
            payload = pickle.dumps((key, validated), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # a value pickle cannot write: nothing kept, validated again next time
            return
        if len(payload) + len(FORMAT) + 32 > MAX_BYTES:
            return
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary = self.folder / f"{_WRITING}{os.getpid()}-{os.urandom(6).hex()}"
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(FORMAT + hashlib.sha256(payload).digest() + payload)
                os.replace(temporary, self._path(key))
            except BaseException:
                os.unlink(temporary)
                raise
            self._prune()
        except OSError:
            return

    def _prune(self) -> None:
        """Remove the oldest entries while there are more than ``KEPT``, and what a process that was killed as
        it wrote an entry left (an hour old)."""
        with os.scandir(self.folder) as found:
            listed = list(found)
        entries = [entry for entry in listed if entry.name.endswith(_SUFFIX)]
        for entry in listed:
            if entry.name.startswith(_WRITING) and entry.stat().st_mtime < time.time() - 3600:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        if len(entries) <= KEPT:
            return
        entries.sort(key=lambda entry: entry.stat().st_mtime_ns)
        for entry in entries[: len(entries) - KEPT * 3 // 4]:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
