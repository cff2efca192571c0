"""Loading a blueprint file: read once, parse with positions, validate, check, and report findings.

``validate_file`` never raises for an author's mistake (a missing file is a finding too);
``load_blueprint`` returns a ``Blueprint`` or raises ``InvalidBlueprint`` (a BlueprintError located at the
first error, carrying every finding).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from blueprints.checks import run_checks
from blueprints.findings import Finding, sort_findings
from blueprints.positions import Path as DataPath
from blueprints.positions import PositionIndex
from blueprints.schema import BlueprintModel
from blueprints.validation import validation_findings
from blueprints.yaml_source import parse_yaml
from core.errors import BlueprintError, SourcePosition


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
    """A validated blueprint: the model, where each value is in the file, and its warnings."""

    model: BlueprintModel
    positions: PositionIndex
    path: Path
    source_hash: str
    findings: tuple[Finding, ...] = ()

    def position(self, path: DataPath) -> SourcePosition:
        """Where the value at data ``path`` is written (or its nearest written ancestor)."""
        return self.positions.value(path) or self.positions.nearest(path)[1]

    def key_position(self, path: DataPath) -> SourcePosition:
        """Where the key of data ``path`` is written."""
        return self.positions.key(path) or self.position(path)

    @property
    def name(self) -> str:
        return self.model.name or self.path.stem


@dataclass(frozen=True)
class _Analysis:
    findings: list[Finding]
    model: BlueprintModel | None = None
    index: PositionIndex | None = None
    source_hash: str | None = None


def _unreadable(file: str, reason: str, hint: str | None = None) -> _Analysis:
    return _Analysis([Finding("error", reason, None, hint, "file-unreadable", None, file)])


def _analyse(path: Path) -> _Analysis:
    file = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return _unreadable(file, f"no such file: {file}", "check the path")
    except IsADirectoryError:
        return _unreadable(file, f"{file} is a folder, not a blueprint file")
    except OSError as exc:
        return _unreadable(file, f"cannot read {file}: {exc.strerror or exc}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _unreadable(file, f"{file} is not UTF-8 text (byte {exc.start})", "save the file as UTF-8")
    source_hash = hashlib.sha256(raw).hexdigest()
    parsed = parse_yaml(text.removeprefix("\ufeff"), file)
    if not parsed.ok:
        return _Analysis(parsed.findings)
    index = parsed.index
    if parsed.data is None:
        at = SourcePosition(file, 1, 1)
        empty = Finding(
            "error", "the blueprint is empty", at, 'start with version: "0.1" and a list of steps:', "missing-field",
            index.excerpt(at), file,
        )  # fmt: skip
        return _Analysis([empty])
    try:
        model = BlueprintModel.model_validate(parsed.data)
    except ValidationError as exc:
        return _Analysis(sort_findings([*parsed.findings, *validation_findings(exc, parsed.data, index)]))
    findings = [*parsed.findings, *run_checks(model, index, path.parent)]
    return _Analysis(sort_findings(findings), model, index, source_hash)


def validate_file(path: str | Path) -> list[Finding]:
    """Every finding for the blueprint at ``path``, in reading order. Never raises for author mistakes."""
    return _analyse(Path(path)).findings


def load_blueprint(path: str | Path) -> Blueprint:
    """The validated blueprint at ``path``; InvalidBlueprint (a BlueprintError) if it has any error."""
    file_path = Path(path)
    analysis = _analyse(file_path)
    if any(f.is_error for f in analysis.findings):
        raise InvalidBlueprint(analysis.findings)
    assert analysis.model is not None and analysis.index is not None and analysis.source_hash is not None
    return Blueprint(analysis.model, analysis.index, file_path, analysis.source_hash, tuple(analysis.findings))
