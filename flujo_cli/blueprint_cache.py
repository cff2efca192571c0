"""What ``flujo worker`` reads for each run it takes, kept while the files it was read from are unchanged.

A worker executes many runs, mostly of the same few blueprints. Reading the settings (the user's file, the
project's flujo.toml, the environment), building their redactor and loading a blueprint (parsing its YAML,
validating it and every file it imports) cost a few milliseconds each time: more than a one-step run itself
(docs/performance.md). ``BlueprintCache`` keeps them:

* the settings of a run's ``--set`` overrides (and the worker's ``--state``), with their redactor, while the
  settings files are unchanged: the user's settings file and the nearest flujo.toml, looked for again and
  compared by content at each run (a new flujo.toml counts as a change);
* the validated blueprint (``blueprints.Blueprint``) of a file under those settings with a run's ``--model``
  overrides, while the file and every file it imports, at any depth, have the content it was loaded from:
  each is read again and its SHA-256 compared with the ``source_hash`` the blueprint recorded, so an
  edited file is loaded again for the next run (an edit that keeps the size and the timestamp too).

Invariants: an entry is used only after those checks; nothing is cached from a load that failed, so a broken
file fails each run that uses it, with its own message, until it is fixed. The pipeline is compiled from the
blueprint for each run (a fraction of a millisecond): compiled agents keep state from call to call (a
scripted model takes its replies in turn), and each run starts with agents of its own, as before. At most
``KEPT`` settings and ``KEPT`` blueprints under each are kept, the oldest dropped first.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from blueprints import Blueprint
    from core import Redactor, Settings

K = TypeVar("K")
V = TypeVar("V")

KEPT = 32
"""How many entries of each kind a cache keeps (a worker serving more blueprints than that reloads some)."""


@dataclass(frozen=True)
class Prepared:
    """What a run of a blueprint is executed with: the settings, their redactor, the validated blueprint."""

    settings: Settings
    redactor: Redactor
    blueprint: Blueprint


@dataclass
class _SettingsEntry:
    files: tuple[tuple[str, bytes | None], ...]  # the settings files looked at, and their content (None: none)
    settings: Settings
    redactor: Redactor
    blueprints: dict[tuple[str, tuple[str, ...]], Blueprint] = field(default_factory=dict)


class BlueprintCache:
    """The settings and validated blueprints of a worker's runs, each read again only when its files changed.
    ``loads`` counts the blueprints it loaded (what a test watches to see one reused or read again)."""

    def __init__(self, state: str | None) -> None:
        self.state = state
        self.loads = 0
        self._settings: dict[tuple[str, ...], _SettingsEntry] = {}

    def prepared(self, source: Path, assignments: Sequence[str], models: Sequence[str]) -> Prepared:
        """The settings with the ``--set`` ``assignments`` a run was submitted with, their redactor, and the
        blueprint at ``source`` validated against them, its agents running the models ``models`` gives them
        (``--model``); each read again when its files changed."""
        from blueprints import ModelOverrides, load_blueprint

        entry = self._entry(tuple(assignments))
        key = (str(source), tuple(models))
        known = entry.blueprints.get(key)
        if known is None or not _unchanged(known):
            entry.blueprints.pop(key, None)
            known = load_blueprint(source, settings=entry.settings, models=ModelOverrides.parse(list(models)))
            self.loads += 1
            _keep(entry.blueprints, key, known)
        return Prepared(entry.settings, entry.redactor, known)

    def _entry(self, assignments: tuple[str, ...]) -> _SettingsEntry:
        from core import Redactor, overrides_from_assignments, secret_values
        from flujo_cli.store_access import settings_with_state

        files = _settings_files()
        known = self._settings.get(assignments)
        if known is not None and known.files == files:
            return known
        self._settings.pop(assignments, None)
        settings = settings_with_state(self.state, overrides_from_assignments(list(assignments)))
        redactor = Redactor(extra_patterns=settings.redact_patterns, secret_values=secret_values(settings))
        entry = _SettingsEntry(files, settings, redactor)
        _keep(self._settings, assignments, entry)
        return entry


def _keep(entries: dict[K, V], key: K, value: V) -> None:
    """Add ``value`` at ``key``, dropping the oldest entry when there are ``KEPT`` already."""
    if len(entries) >= KEPT:
        del entries[next(iter(entries))]
    entries[key] = value


def _settings_files() -> tuple[tuple[str, bytes | None], ...]:
    """The files settings are read from (``core.load_settings``), each with its content, None when absent."""
    from core import find_project_file, user_config_path

    found = []
    for path in (user_config_path(os.environ), find_project_file(Path.cwd())):
        if path is not None:
            found.append((str(path), _content(path)))
    return tuple(found)


def _content(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as file:  # Path.read_bytes, with less around it
            return file.read()
    except OSError:
        return None


def _unchanged(blueprint: Blueprint) -> bool:
    """Whether every file of ``blueprint`` (its own and those it imports) still has the content it was loaded
    from (its ``source_hash``: the SHA-256 of the file's bytes)."""
    seen: set[Path] = set()
    waiting = [blueprint]
    while waiting:
        current = waiting.pop()
        if current.path in seen:
            continue
        seen.add(current.path)
        content = _content(current.path)
        if content is None or hashlib.sha256(content).hexdigest() != current.source_hash:
            return False
        waiting.extend(current.imports.values())
    return True
