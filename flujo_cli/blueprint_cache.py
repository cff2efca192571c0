"""What ``flujo worker`` reads for each run it takes, kept while the files it was read from are unchanged.

A worker executes many runs, mostly of the same few blueprints. Reading the settings (the user's file, the
project's flujo.toml, the environment), building their redactor, loading a blueprint (parsing its YAML,
validating it and every file it imports) and compiling its pipeline cost more than a one-step run itself
(docs/performance.md). ``BlueprintCache`` keeps them:

* the settings of a run's ``--set`` overrides (and the worker's ``--state``), with their redactor, while the
  settings files are unchanged: the user's settings file and the nearest flujo.toml, and the absence of one
  in each folder between it and the working directory (a new, nearer flujo.toml counts as a change);
* the validated blueprint (``blueprints.Blueprint``) of a file under those settings with a run's ``--model``
  overrides, while the file and every file it imports, at any depth, have the content it was loaded from;
* its compiled pipeline, shared by the runs of the blueprint while it is kept, when none of its agents keeps
  state from call to call that belongs to one run (``BaseAgent.keeps_run_state``: a scripted model, which
  gives each run its replies from the first); a pipeline holding one is compiled for each run, as
  ``flujo run`` compiles it.

Each file is checked at each run by its ``stat`` signature, and read and hashed again only when that changed
or cannot be trusted yet (``flujo_cli.file_stamps``): an edited file is loaded again for the next run, even an
edit that keeps its size and timestamp.

Invariants: an entry is used only after those checks; nothing is cached from a load that failed, so a broken
file fails each run that uses it, with its own message, until it is fixed; a shared pipeline holds only agents
built for no run in particular. At most ``KEPT`` settings and ``KEPT`` blueprints under each are kept, the
oldest dropped first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from flujo_cli.file_stamps import Stamp
from flujo_cli.redacting import command_redactor

if TYPE_CHECKING:
    from blueprints import Blueprint
    from core import Agent, Pipeline, Redactor, Settings
    from core.agents import AgentSpec

K = TypeVar("K")
V = TypeVar("V")

KEPT = 32
"""How many entries of each kind a cache keeps (a worker serving more blueprints than that reloads some)."""


@dataclass(frozen=True)
class Prepared:
    """What a run of a blueprint is executed with: the settings, their redactor, the validated blueprint and
    its compiled pipeline (shared with the blueprint's other runs, or compiled for this one)."""

    settings: Settings
    redactor: Redactor
    blueprint: Blueprint
    pipeline: Pipeline


@dataclass
class _Loaded:
    blueprint: Blueprint
    stamps: tuple[Stamp, ...]  # its file and every file it imports
    shared: Pipeline | None = None  # compiled once: none of its agents keeps run state
    per_run: bool = False  # one of its agents keeps run state: compiled for each run


@dataclass
class _SettingsEntry:
    where: tuple[str, str | None, str | None]  # the working directory, XDG_CONFIG_HOME, HOME: the files looked at
    stamps: tuple[Stamp, ...]  # the settings files looked at, each found or absent
    settings: Settings
    redactor: Redactor
    blueprints: dict[tuple[str, tuple[str, ...]], _Loaded] = field(default_factory=dict)


class BlueprintCache:
    """The settings, validated blueprints and pipelines of a worker's runs, each read again only when its files
    changed. ``loads`` counts the blueprints it loaded, ``compiles`` the pipelines it compiled (what a test
    watches to see one reused or made again)."""

    def __init__(self, state: str | None) -> None:
        self.state = state
        self.loads = 0
        self.compiles = 0
        self._settings: dict[tuple[str, ...], _SettingsEntry] = {}

    def prepared(self, source: Path, assignments: Sequence[str], models: Sequence[str]) -> Prepared:
        """The settings with the ``--set`` ``assignments`` a run was submitted with, their redactor, the
        blueprint at ``source`` validated against them, its agents running the models ``models`` gives them
        (``--model``), and its pipeline; each read again when its files changed."""
        from blueprints import ModelOverrides, load_blueprint

        entry = self._entry(tuple(assignments))
        key = (str(source), tuple(models))
        known = entry.blueprints.get(key)
        if known is None or not all(stamp.unchanged() for stamp in known.stamps):
            entry.blueprints.pop(key, None)
            read_ns = time.time_ns()  # before the files are read: stamps taken after are racy if they changed
            blueprint = load_blueprint(source, settings=entry.settings, models=ModelOverrides.parse(list(models)))
            self.loads += 1
            known = _Loaded(blueprint, _stamps(blueprint, read_ns))
            _keep(entry.blueprints, key, known)
        return Prepared(entry.settings, entry.redactor, known.blueprint, self._pipeline(known, entry.settings))

    def _pipeline(self, loaded: _Loaded, settings: Settings) -> Pipeline:
        """The pipeline of ``loaded``: the shared one, or one compiled now (kept when runs may share it)."""
        from blueprints import compile_pipeline
        from core.agents import build_agent, shareable_between_runs

        if loaded.shared is not None:
            return loaded.shared
        kept_state: list[Agent] = []

        def built(spec: AgentSpec, settings: Settings) -> Agent:
            agent = build_agent(spec, settings)
            if not shareable_between_runs(agent):
                kept_state.append(agent)
            return agent

        pipeline = compile_pipeline(loaded.blueprint, settings, agent_factory=None if loaded.per_run else built)
        self.compiles += 1
        if not loaded.per_run:
            loaded.per_run = bool(kept_state)
            loaded.shared = None if kept_state else pipeline
        return pipeline

    def _entry(self, assignments: tuple[str, ...]) -> _SettingsEntry:
        from core import overrides_from_assignments
        from flujo_cli.store_access import settings_with_state

        where = (os.getcwd(), os.environ.get("XDG_CONFIG_HOME"), os.environ.get("HOME"))
        known = self._settings.get(assignments)
        if known is not None and known.where == where and all(stamp.unchanged() for stamp in known.stamps):
            return known
        self._settings.pop(assignments, None)
        stamps = tuple(Stamp.read(path) for path in _settings_files(Path(where[0])))  # before they are loaded
        settings = settings_with_state(self.state, overrides_from_assignments(list(assignments)))
        redactor = command_redactor(settings)
        entry = _SettingsEntry(where, stamps, settings, redactor)
        _keep(self._settings, assignments, entry)
        return entry


def _keep(entries: dict[K, V], key: K, value: V) -> None:
    """Add ``value`` at ``key``, dropping the oldest entry when there are ``KEPT`` already."""
    if len(entries) >= KEPT:
        del entries[next(iter(entries))]
    entries[key] = value


def _settings_files(cwd: Path) -> list[str]:
    """The files ``core.load_settings`` looks at from ``cwd``: the user's settings file, and flujo.toml in each
    folder from ``cwd`` up to the nearest one that exists (or to the root)."""
    from core import project_file_candidates, user_config_path

    looked_at = []
    user = user_config_path(os.environ)
    if user is not None:
        looked_at.append(str(user))
    for candidate in project_file_candidates(cwd):
        looked_at.append(str(candidate))
        if candidate.is_file():
            break
    return looked_at


def _stamps(blueprint: Blueprint, read_ns: int) -> tuple[Stamp, ...]:
    """The stamps of ``blueprint``'s file and of every file it imports, with the digests it was loaded from (its
    ``source_hash``: the SHA-256 of the file's bytes), its files read after ``read_ns``."""
    return tuple(Stamp.taken(str(each.path), each.source_hash, read_ns) for each in blueprint.files())
