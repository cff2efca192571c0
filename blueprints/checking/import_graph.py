"""Following ``imports:``: every imported blueprint analysed once; missing files and cycles refused.

Paths are relative to the folder of the importing file. A missing file and an import cycle are errors
at the ``imports:`` entry (its value) in the importing file; for a cycle, the entry that leads back to a
file already on the way from the blueprint being loaded; a chain of imports longer than the setting
``bounds.import_max_depth`` is an error at the entry that would pass it. Every finding of an imported file keeps that
file's own positions. Each file is analysed once per load, however many blueprints import it (a diamond
is not a cycle). Across files, an ``outputs`` path ``steps.<name>`` must name a step of the imported
blueprint.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from blueprints.checking.analysis import FileAnalysis, analyse_file
from blueprints.checking.checks.sites import names_under, walk
from blueprints.checking.model_overrides import NO_MODEL_OVERRIDES, ModelOverrides
from blueprints.checking.validated import ValidatedFiles
from blueprints.reading.findings import Finding, FindingCode, sort_findings
from blueprints.reading.positions import Path as DataPath
from blueprints.reading.suggestions import did_you_mean
from blueprints.schema import AgentStepModel
from core import BoundsSettings, HistorySettings, not_a_file


@dataclass
class ImportedFile:
    """One blueprint file of a load: its analysis, its findings (import errors included) and its imports."""

    path: Path
    analysis: FileAnalysis
    findings: list[Finding]
    imports: dict[str, ImportedFile] = field(default_factory=dict)


class ImportGraph:
    """The files a load reaches, in the order they were found (the loaded file first), each checked
    against the same settings' ``history`` defaults, its agents that name no model running ``default_model``,
    with the agents' models ``models`` gives them over any."""

    def __init__(
        self,
        *,
        history: HistorySettings | None = None,
        profiles: Collection[str] | None = None,
        bounds: BoundsSettings | None = None,
        models: ModelOverrides = NO_MODEL_OVERRIDES,
        default_model: str | None = None,
        kept: ValidatedFiles | None = None,
    ) -> None:
        self._files: dict[Path, ImportedFile] = {}
        self._kept = kept
        self._models = models
        self._default_model = default_model
        self._history = history
        self._profiles = profiles
        self._bounds = bounds or BoundsSettings()

    @property
    def files(self) -> list[ImportedFile]:
        return list(self._files.values())

    def load(self, path: Path) -> ImportedFile:
        """Analyse ``path`` and, when its structure is valid, everything it imports."""
        return self._visit(path, ())

    def _visit(self, path: Path, chain: tuple[Path, ...]) -> ImportedFile:
        key = Path(os.path.realpath(path))  # not path.resolve(): it raises for a symlink loop, which analysis reports
        known = self._files.get(key)
        if known is not None:
            return known
        # ``--model agents.NAME`` names an agent of the loaded file; ``--model '*=...'`` reaches its imports too.
        models = self._models if not chain else self._models.for_imports()
        analysis = analyse_file(
            path,
            history=self._history,
            profiles=self._profiles,
            bounds=self._bounds,
            models=models,
            default_model=self._default_model,
            kept=self._kept,
        )
        node = ImportedFile(path, analysis, list(analysis.findings))
        self._files[key] = node
        if analysis.model is None:
            return node
        here = (*chain, key)
        for alias, target in analysis.model.imports.items():
            file = Path(os.path.normpath(path.parent / target))
            if "\0" in target:  # checked first: the OS refuses to look such a path up
                _error(
                    node, "unknown-reference", ("imports", alias),
                    f"imports.{alias}: {target!r} holds a NUL byte, which no file name can",
                    "name the .yaml file of the blueprint to import",
                )  # fmt: skip
            elif (found := not_a_file(file)) == "nothing":
                _error(
                    node, "unknown-reference", ("imports", alias),
                    f"imports.{alias}: file {target!r} not found (looked for {file})",
                    f"paths are relative to the folder of {path.name}",
                )  # fmt: skip
            elif found is not None:
                _error(
                    node, "unknown-reference", ("imports", alias),
                    f"imports.{alias}: {target!r} is {found}, not a blueprint file (looked at {file})",
                    "name the .yaml file of the blueprint to import",
                )  # fmt: skip
            elif file.resolve() in here:
                loop = [*here[here.index(file.resolve()) :], file.resolve()]
                _error(
                    node, "import-cycle", ("imports", alias),
                    f"imports.{alias}: import cycle {' → '.join(p.name for p in loop)}",
                    "a blueprint cannot import itself, directly or through the blueprints it imports",
                )  # fmt: skip
            elif len(here) >= self._bounds.import_max_depth:
                _error(
                    node, "over-limit", ("imports", alias),
                    f"imports.{alias}: imports nest more than {self._bounds.import_max_depth} blueprints deep",
                    "import fewer levels deep (the limit is the setting bounds.import_max_depth)",
                )  # fmt: skip
            else:
                node.imports[alias] = self._visit(file, here)
        _check_outputs(node)
        node.findings = sort_findings(node.findings)
        return node


def _error(
    node: ImportedFile, code: FindingCode, path: DataPath, message: str, hint: str, *, at_key: bool = False
) -> None:
    index = node.analysis.index
    assert index is not None
    position = (index.key(path) if at_key else index.value(path)) or index.nearest(path)[1]
    node.findings.append(Finding("error", message, position, hint, code, index.excerpt(position), str(node.path)))


def _check_outputs(node: ImportedFile) -> None:
    """``outputs`` paths ``steps.<name>`` name a step of the imported blueprint."""
    model = node.analysis.model
    assert model is not None
    for site in walk(model.steps, ("steps",)):
        step = site.step
        if not isinstance(step, AgentStepModel) or step.config is None or step.config.outputs is None:
            continue
        child = node.imports.get((step.uses or "").removeprefix("imports."))
        if child is None or child.analysis.model is None:
            continue
        names = names_under(child.analysis.model.steps)
        outputs = step.config.outputs
        entries = (
            [(m.child, (number, "child")) for number, m in enumerate(outputs)]
            if isinstance(outputs, list)
            else [(path, (path,)) for path in outputs]
        )
        for child_path, where in entries:
            parts = child_path.removeprefix("context.").split(".")
            if parts[0] == "steps" and len(parts) > 1 and parts[1] not in names:
                _error(
                    node, "unknown-reference", (*site.path, "config", "outputs", *where),
                    f"outputs: {child_path!r} names step {parts[1]!r}, which {child.path.name} does not have"
                    f"{did_you_mean(parts[1], names)}",
                    f"steps of {child.path.name}: {', '.join(names)}", at_key=isinstance(outputs, dict),
                )  # fmt: skip
