"""Loading a blueprint file and the blueprints it imports, and reporting their findings.

``validate_file`` never raises for an author's mistake (a missing file is a finding too); its findings
are the loaded file's, then each imported file's, every one at its own file:line:col. ``load_blueprint``
returns a ``Blueprint`` (with its imported blueprints) or raises ``InvalidBlueprint`` (a BlueprintError
located at the first error, carrying every finding). Reading one file is ``blueprints.checking.analysis``;
following imports is ``blueprints.checking.import_graph``. Both take the settings a run would compile the
blueprint with (``flujo validate`` and ``flujo run`` pass the same ones), because whether a blueprint is
valid can depend on them: a ``summarize`` loop needs a summarizer, its own or the settings' default, and an
agent that names no model needs the settings' ``default_model`` (``blueprints.checking.default_model``). This
layer never reads settings itself; without them, the built-in defaults apply.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from blueprints.checking.checks.sites import step_kinds
from blueprints.checking.import_graph import ImportedFile, ImportGraph
from blueprints.checking.model_overrides import NO_MODEL_OVERRIDES, ModelOverrides
from blueprints.checking.validated import ValidatedFiles
from blueprints.reading.findings import Finding
from blueprints.reading.positions import Path as DataPath
from blueprints.reading.positions import PositionIndex
from blueprints.schema import BlueprintModel
from core import BlueprintError, Settings, SourcePosition


class InvalidBlueprint(BlueprintError):
    """A blueprint with errors: the message and position are the first error's; ``findings`` has all."""

    def __init__(self, findings: list[Finding]) -> None:
        errors = [f for f in findings if f.is_error]
        first = errors[0]
        more = len(errors) - 1
        message = first.message + (f" (and {more} more error{'s' if more > 1 else ''})" if more else "")
        super().__init__(message, position=first.position, hint=first.hint)
        self.findings = findings


@dataclass(frozen=True)
class Blueprint:
    """A validated blueprint: the model, where each value is in the file, its warnings, and the
    blueprints it imports by alias (a file imported twice is one ``Blueprint``)."""

    model: BlueprintModel
    positions: PositionIndex
    path: Path
    source_hash: str
    findings: tuple[Finding, ...] = ()
    imports: Mapping[str, Blueprint] = field(default_factory=dict)
    defaulted: frozenset[str] = frozenset()  # the agents that run the settings' default_model

    def position(self, path: DataPath) -> SourcePosition:
        """Where the value at data ``path`` is written (or its nearest written ancestor)."""
        return self.positions.value(path) or self.positions.nearest(path)[1]

    def key_position(self, path: DataPath) -> SourcePosition:
        """Where the key of data ``path`` is written."""
        return self.positions.key(path) or self.position(path)

    @property
    def name(self) -> str:
        return self.model.name or self.path.stem

    def step_kinds(self) -> dict[str, str]:
        """The kind of each of its steps by step path (``chat/clarify``: no iteration numbers), as a run records
        them: what tells lens a loop's iterations before the loop records itself."""
        return step_kinds(self.model.steps)

    def files(self) -> Iterator[Blueprint]:
        """This blueprint, then each file it imports at any depth, once per file (a file imported twice, by
        two blueprints, is given once)."""
        seen: set[Path] = set()
        waiting: list[Blueprint] = [self]
        while waiting:
            current = waiting.pop()
            if current.path not in seen:
                seen.add(current.path)
                yield current
                waiting.extend(current.imports.values())

    @property
    def takes_default_model(self) -> bool:
        """Whether an agent of this blueprint, or of one it imports at any depth, runs the settings'
        ``default_model``."""
        return bool(self.defaulted) or any(child.takes_default_model for child in self.imports.values())

    @property
    def tree_hash(self) -> str:
        """A hash of this file and of every file it imports, at any depth: what ``flujo resume`` compares to
        tell whether the blueprint a run started with has changed. Without imports, the file's own hash."""
        if not self.imports:
            return self.source_hash
        digest = hashlib.sha256(self.source_hash.encode("ascii"))
        for alias in sorted(self.imports):  # import cycles are validation errors, so this ends
            digest.update(f"\0{alias}\0{self.imports[alias].tree_hash}".encode())
        return digest.hexdigest()


def _load(
    path: Path, settings: Settings | None, models: ModelOverrides, kept: ValidatedFiles | None = None
) -> tuple[list[Finding], ImportedFile]:
    graph = ImportGraph(
        history=settings.history if settings is not None else None,
        profiles=list(settings.profiles) if settings is not None else None,
        bounds=settings.bounds if settings is not None else None,
        models=models,
        default_model=settings.default_model if settings is not None else None,
        kept=kept,
    )
    root = graph.load(path)
    return [finding for file in graph.files for finding in file.findings], root


def validate_file(
    path: str | Path, *, settings: Settings | None = None, models: ModelOverrides = NO_MODEL_OVERRIDES
) -> list[Finding]:
    """Every finding for the blueprint at ``path`` and the files it imports, checked against ``settings``
    (the built-in defaults when None) with the models ``models`` gives its agents (``--model``). Never
    raises for author mistakes; ModelOverrideError when ``models`` names an agent the blueprint lacks."""
    return _load(Path(path), settings, models)[0]


def load_blueprint(
    path: str | Path,
    *,
    settings: Settings | None = None,
    models: ModelOverrides = NO_MODEL_OVERRIDES,
    kept: ValidatedFiles | None = None,
) -> Blueprint:
    """The blueprint at ``path``, validated against ``settings`` (the built-in defaults when None), its
    agents running the models ``models`` gives them (``--model``); InvalidBlueprint (a BlueprintError) if it
    or an import has an error, ModelOverrideError when ``models`` names an agent it lacks. With ``kept``,
    files validated before are taken from there (``blueprints.checking.validated``); their checks run."""
    findings, root = _load(Path(path), settings, models, kept)
    # A damaged model file is the machine's problem, not the blueprint's: the run reports it when it builds
    # the agent, as a configuration error (blueprints.checking.checks.agents).
    if any(f.is_error and f.code != "model-file" for f in findings):
        raise InvalidBlueprint(findings)
    return _blueprint(root, {})


def _blueprint(node: ImportedFile, built: dict[Path, Blueprint]) -> Blueprint:
    key = node.path.resolve()
    known = built.get(key)
    if known is not None:
        return known
    analysis = node.analysis
    assert analysis.model is not None and analysis.index is not None and analysis.source_hash is not None
    imports = {alias: _blueprint(child, built) for alias, child in node.imports.items()}
    blueprint = Blueprint(
        analysis.model,
        analysis.index,
        node.path,
        analysis.source_hash,
        tuple(node.findings),
        imports,
        analysis.defaulted,
    )
    built[key] = blueprint
    return blueprint
