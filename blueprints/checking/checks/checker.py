"""The state one validation pass shares: the model, where things are, the settings' history defaults
it is checked against, what the blueprint can write to the context (``Writes``), and the findings so far."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path as FilePath

from blueprints.reading.findings import Finding, FindingCode, Severity
from blueprints.reading.positions import Path, PositionIndex
from blueprints.schema import BlueprintModel
from core import BoundsSettings, HistorySettings, SourcePosition

# An agent's keys about its tools, which only an agent with ``tools:`` uses (``checks.tools`` warns of the others).
AGENT_TOOL_KEYS = ("max_tool_calls", "tool_mode", "tool_result_chars")


@dataclass(frozen=True)
class Writes:
    """The scratchpad keys a blueprint can write; ``any_key`` when some step can write keys not known
    before the run (then scratchpad reads are not checked)."""

    keys: frozenset[str]
    any_key: bool


class Checker:
    """Collects findings; places them at a path's key or value in the file."""

    def __init__(
        self,
        model: BlueprintModel,
        index: PositionIndex,
        folder: FilePath,
        *,
        history: HistorySettings | None = None,
        profiles: Collection[str] | None = None,
        bounds: BoundsSettings | None = None,
    ) -> None:
        self.model = model
        self.index = index
        self.folder = folder
        self.history = history or HistorySettings()  # the defaults a run would compile the loops with
        self.bounds = bounds or BoundsSettings()  # what a run may ask for (a loop's max_loops)
        self.findings: list[Finding] = []
        self.writes: Writes | None = None  # what the blueprint can write to the context (set by run_checks)
        # The model profiles the settings define ([profiles.NAME]); None when not known (never reported).
        self.profiles = profiles

    def at(self, path: Path) -> SourcePosition:
        """Where the value at ``path`` is (or its nearest written ancestor, for defaulted values)."""
        return self.index.value(path) or self.index.nearest(path)[1]

    def key_at(self, path: Path) -> SourcePosition:
        """Where the key of ``path`` is written."""
        return self.index.key(path) or self.at(path)

    def add(
        self,
        severity: Severity,
        code: FindingCode,
        message: str,
        position: SourcePosition | None,
        hint: str | None = None,
    ) -> None:
        self.findings.append(
            Finding(severity, message, position, hint, code, self.index.excerpt(position), self.index.file)
        )

    def error(self, code: FindingCode, message: str, position: SourcePosition | None, hint: str | None = None) -> None:
        self.add("error", code, message, position, hint)

    def warning(
        self, code: FindingCode, message: str, position: SourcePosition | None, hint: str | None = None
    ) -> None:
        self.add("warning", code, message, position, hint)

    def note(self, code: FindingCode, message: str, position: SourcePosition | None, hint: str | None = None) -> None:
        self.add("note", code, message, position, hint)

    def has_warning_at(self, position: SourcePosition) -> bool:
        return any(f.severity == "warning" and f.position == position for f in self.findings)

    def written(self, path: Path) -> bool:
        """Whether ``path`` is written in the file (rather than taking a default)."""
        return path in self.index
