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

Entries are files in one folder (the command line's: ``flujo_cli.user_cache``), kept as
``core.KeptEntries`` keeps them: written whole, read only when they are the user's own and their checksum
matches (any other file, damaged or foreign, is a miss and is written again), at most ``KEPT``, the oldest
removed first. Nothing is kept of a file with errors: it is validated each time, so that it reports its own
findings.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from blueprints.checking.model_overrides import ModelOverrides
from blueprints.reading.findings import Finding
from blueprints.reading.positions import PositionIndex
from blueprints.schema import BlueprintModel
from core import BoundsSettings, KeptEntries, code_stamp, loaded_files

FORMAT = b"flujo validated blueprint 2\n"  # 2: the models are dataclasses (1: pydantic models)
KEPT = 256
MAX_BYTES = 16 * 1024 * 1024  # an entry larger than this is not kept (a blueprint is at most 5 MB of text)
_SUFFIX = ".validated"


@dataclass(frozen=True)
class Validated:
    """A blueprint file's structure, validated: the model, where each value is, the parse's findings (its
    warnings), and the agents that run the settings' ``default_model``."""

    model: BlueprintModel
    index: PositionIndex
    findings: tuple[Finding, ...]
    defaulted: frozenset[str]


def _code_stamp() -> bytes:
    """Python's and pydantic's versions and the stat of each loaded module of ``blueprints`` and ``core``, and
    of the modules that make an entry, which only a command that validates imports (``_VALIDATING``)."""
    package = Path(__file__).resolve().parent.parent  # blueprints/
    making = [str(package / part) for part in _VALIDATING]
    return code_stamp([*loaded_files(("blueprints", "core"), leave_out=_NOT_READING), *making])


# What decides an entry's content but is imported only where a file is validated (after its entry was looked
# for): the schema's constraints and the translation of an ensemble file. Counted whether loaded or not, so
# that an edit of one of them makes other keys.
_VALIDATING = ("schema/validating.py", "reading/ensemble_file.py")


# Loaded or not by a command whatever its blueprint: the settings' checks run only when the settings were not
# kept (core.settings.kept_settings), and a blueprint is read the same either way; the modules of
# ``_VALIDATING`` are counted by their files. Counted as loaded, a command that checked its settings (or
# validated a file before) and one that did not would not find each other's entries.
_NOT_READING = frozenset(
    {"core.settings.validating", "blueprints.schema.validating", "blueprints.reading.ensemble_file"}
)


class ValidatedFiles:
    """Validated blueprint files, kept in ``folder`` (made, for the user alone, when first written)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._stamp: bytes | None = None
        self._entries = KeptEntries(folder, head=FORMAT, suffix=_SUFFIX, kept=KEPT, max_bytes=MAX_BYTES)

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

    def recall(self, key: str) -> Validated | None:
        """The entry ``key``, or None: none kept, or one that is damaged, too large or not the user's."""
        validated = self._entries.recall(key)
        return validated if isinstance(validated, Validated) else None

    def keep(self, key: str, validated: Validated) -> None:
        """Write ``validated`` as the entry ``key``. Best effort: a folder that cannot be written keeps none."""
        self._entries.keep(key, validated)
