"""Analysing one blueprint file: read it once, parse with positions, validate, check; never raise.

The result holds every finding of that file and, when its structure is valid, the model and the
position index. When the structure has errors, the later checks still run on the parts that validate
(``blueprints.checking.salvage``), so one pass reports both; the model is then the salvaged one, and the findings
say the file is invalid. Imports are not followed here (``blueprints.checking.import_graph`` does that).
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from blueprints.checking.checks import run_checks
from blueprints.checking.default_model import with_default_model
from blueprints.checking.model_overrides import NO_MODEL_OVERRIDES, ModelOverrideError, ModelOverrides
from blueprints.checking.validated import Validated, ValidatedFiles
from blueprints.reading.findings import Finding, sort_findings
from blueprints.reading.positions import PositionIndex
from blueprints.reading.yaml_source import parse_yaml
from blueprints.schema import BlueprintModel
from core import BoundsSettings, HistorySettings, SourcePosition, not_a_file


@dataclass(frozen=True)
class FileAnalysis:
    """The findings of one file, in reading order; the model and index when the structure is valid, or
    when the parts that validate could be salvaged (then the findings hold errors)."""

    findings: list[Finding]
    model: BlueprintModel | None = None
    index: PositionIndex | None = None
    source_hash: str | None = None
    defaulted: frozenset[str] = frozenset()  # the agents that run the settings' default_model


def _unreadable(file: str, reason: str, hint: str | None = None) -> FileAnalysis:
    return FileAnalysis([Finding("error", reason, None, hint, "file-unreadable", None, file)])


def _excerpt(raw: bytes, at: SourcePosition) -> str | None:
    """The line of ``at`` as the findings show it (a bad byte as U+FFFD), with its caret."""
    return PositionIndex(at.file, raw.decode("utf-8", errors="replace").split("\n")).excerpt(at)


def analyse_file(
    path: Path,
    *,
    history: HistorySettings | None = None,
    profiles: Collection[str] | None = None,
    bounds: BoundsSettings | None = None,
    models: ModelOverrides = NO_MODEL_OVERRIDES,
    default_model: str | None = None,
    kept: ValidatedFiles | None = None,
) -> FileAnalysis:
    """Every finding of the blueprint file at ``path`` (named as given in positions), its loops checked
    against the settings' ``history`` defaults and its YAML read within ``bounds`` (the built-in ones
    when None), its agents that name no model running ``default_model`` (the settings'), and the models
    ``models`` gives them (``--model``) over any. ModelOverrideError when ``models`` names an agent the file
    does not define: the command line's mistake, not the file's. With ``kept``, a file whose structure
    validated before is not parsed nor validated again (``blueprints.checking.validated``); its checks run."""
    file = str(path)
    found = not_a_file(path)  # before opening it: a FIFO would wait for a writer
    if found == "nothing":
        return _unreadable(file, f"no such file: {file}", "check the path")
    if found is not None:
        return _unreadable(file, f"{file} is {found}, not a blueprint file", "give the path of a blueprint file")
    limit = (bounds or BoundsSettings()).blueprint_max_bytes
    try:
        size = path.stat().st_size
        raw = b"" if size > limit else path.read_bytes()  # refused before it is read, let alone parsed
    except OSError as exc:
        return _unreadable(file, f"cannot read {file}: {exc.strerror or exc}")
    if max(size, len(raw)) > limit:
        return _unreadable(
            file,
            f"{file} is {max(size, len(raw)):,} bytes, more than the {limit:,} a blueprint may be",
            "split it into blueprints that import each other (imports:), or raise the setting "
            "bounds.blueprint_max_bytes",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = SourcePosition.of_byte(file, raw, exc.start)
        bad = Finding(
            "error", f"{file} is not UTF-8 text (byte {exc.start})", at, "save the file as UTF-8", "file-unreadable",
            _excerpt(raw, at), file,
        )  # fmt: skip
        return FileAnalysis([bad])
    source_hash = hashlib.sha256(raw).hexdigest()

    def checks(model: BlueprintModel, index: PositionIndex) -> list[Finding]:
        return run_checks(model, index, path.parent, history=history, profiles=profiles, bounds=bounds)

    key = ""
    known = None
    if kept is not None:
        key = kept.key(file, source_hash, bounds=bounds or BoundsSettings(), models=models, default_model=default_model)
        known = kept.recall(key)
    if known is None:
        made = _validate(
            text, file, source_hash, bounds=bounds, models=models, default_model=default_model, checks=checks
        )
        if isinstance(made, FileAnalysis):  # errors: reported, and nothing kept
            return made
        known = made
        if kept is not None:
            kept.keep(key, known)
    findings = sort_findings([*known.findings, *checks(known.model, known.index)])
    return FileAnalysis(findings, known.model, known.index, source_hash, known.defaulted)


def _case_file_finding(data: dict[str, Any], index: PositionIndex, file: str) -> Finding:
    """The one finding for a case file (``flujo_case:``, docs/testing-conversations.md) given where a blueprint
    is read: not a dozen about its missing ``steps:`` and its unknown keys."""
    at = index.key(("flujo_case",)) or SourcePosition(file, 1, 1)
    blueprint = data.get("blueprint")
    named = f" (its blueprint: {blueprint})" if isinstance(blueprint, str) else ""
    return Finding(
        "error", f"this is a flujo test case file{named}, not a blueprint", at,
        f"replay it with: flujo test {shlex.quote(file)}", "unknown-key", index.excerpt(at), file,
    )  # fmt: skip


def _validate(
    text: str,
    file: str,
    source_hash: str,
    *,
    bounds: BoundsSettings | None,
    models: ModelOverrides,
    default_model: str | None,
    checks: Callable[[BlueprintModel, PositionIndex], list[Finding]],
) -> Validated | FileAnalysis:
    """The structure of the file ``text``, validated (its model, positions and YAML warnings); or, when it has
    errors, the file's whole analysis (``checks`` run on the parts salvaged)."""
    parsed = parse_yaml(text.removeprefix("\ufeff"), file, bounds=bounds)
    if not parsed.ok:
        return FileAnalysis(parsed.findings)
    index = parsed.index
    if parsed.data is None:
        at = SourcePosition(file, 1, 1)
        empty = Finding(
            "error", "the blueprint is empty", at, 'start with version: "0.1" and a list of steps:', "missing-field",
            index.excerpt(at), file,
        )  # fmt: skip
        return FileAnalysis([empty])
    if isinstance(parsed.data, dict) and "flujo_case" in parsed.data:  # a case file given as a blueprint
        return FileAnalysis([_case_file_finding(parsed.data, index, file)])
    # Here, not at the top, as the validation below: a file kept checked is not read again.
    from blueprints.reading.ensemble_file import is_ensemble_file, reword, translate, translate_index

    ensemble_file = is_ensemble_file(parsed.data)
    if ensemble_file:  # the ensemble file format: one ensemble step
        if models:  # its participants name no model of their own: --model has nothing to replace
            raise ModelOverrideError(
                f"--model {models.given[0]}: {Path(file).name} is an ensemble file; its participants run the"
                " model of their model_profile (or their script), which --model does not replace",
                hint="change the profile's model in flujo.toml ([profiles.NAME] model = ...), or with"
                " FLUJO_PROFILES__NAME__MODEL",
            )
        parsed.data, index = translate(parsed.data), translate_index(index)
    parsed.data, defaulted = with_default_model(parsed.data, default_model)
    if models:
        parsed.data = models.apply(parsed.data, file=file)
        defaulted = frozenset(name for name in defaulted if models.model_for(name) is None)
    # Here, not at the top: a command whose files all come from ``kept`` imports none of pydantic's validation.
    from blueprints.checking.validation import validation_findings
    from blueprints.schema.validating import validate_blueprint

    try:
        model = validate_blueprint(parsed.data)  # its first validation builds its validator
    except ValidationError as exc:
        invalid = validation_findings(exc, parsed.data, index)
        schema = [*parsed.findings, *(reword(invalid) if ensemble_file else invalid)]
        from blueprints.checking.salvage import salvage  # here: only a blueprint with errors is salvaged

        rescued = salvage(parsed.data, exc, index)
        if rescued is None:
            return FileAnalysis(sort_findings(schema))
        findings = [*schema, *rescued.later_findings(checks(rescued.model, index), index)]
        return FileAnalysis(sort_findings(findings), rescued.model, index, source_hash, defaulted)
    return Validated(model, index, tuple(parsed.findings), defaulted)
