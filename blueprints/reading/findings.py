"""Findings: what validating a blueprint reports (errors, warnings, notes), and their JSON form.

A finding is one problem at one place. ``code`` is stable (tools and tests match on it); ``message`` is
one plain line; ``hint`` says what to do; ``excerpt`` is the source line with a caret under the column,
for renderers that want to show it. The JSON form (``findings_to_json``) is a stable machine format: its
keys do not change between releases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from core import SourcePosition

Severity = Literal["error", "warning", "note"]

# The stable codes. Add new ones at the end; never rename one.
FindingCode = Literal[
    "file-unreadable",
    "yaml-syntax",
    "duplicate-key",
    "unknown-key",
    "bad-value",
    "missing-field",
    "unknown-kind",
    "unknown-reference",
    "duplicate-name",
    "template-syntax",
    "passthrough-step",
    "ignored-key",
    "import-failed",
    "context-in-prompt",
    "history-not-sent",
    "import-cycle",
    "silent-conversation",
    "never-written",
    "never-runs",
    "unreachable-limit",
    "over-limit",
    "model-file",
    "program-not-found",
    "default-question",
    "empty-output",
    "endless-loop",
]


@dataclass(frozen=True)
class Finding:
    """One problem found in a blueprint, located to file:line:col when the place is known."""

    severity: Severity
    message: str
    position: SourcePosition | None
    hint: str | None
    code: FindingCode
    excerpt: str | None = None
    file: str | None = None

    @property
    def source_file(self) -> str | None:
        """The blueprint file this finding is about (also known when the position is not)."""
        return self.position.file if self.position is not None else self.file

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        where = f"{self.position}: " if self.position else ""
        return f"{where}{self.severity}: {self.message}"


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in reading order: file-level ones first, then by line and column."""

    def key(finding: Finding) -> tuple[int, int, int]:
        if finding.position is None:
            return (0, 0, 0)
        return (1, finding.position.line, finding.position.column)

    return sorted(findings, key=key)


def findings_to_json(findings: Sequence[Finding], *, file: str | None = None) -> dict[str, Any]:
    """The stable machine form: ``{"file", "valid", "errors", "warnings", "findings": [...]}``.

    Each finding is ``{"severity", "code", "message", "file", "line", "column", "hint"}``; ``file`` at
    the top is ``file`` when given, else the file of the first finding that knows it.
    """
    if file is None:
        file = next((f.source_file for f in findings if f.source_file is not None), None)
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    return {
        "file": file,
        "valid": errors == 0,
        "errors": errors,
        "warnings": warnings,
        "findings": [
            {
                "severity": f.severity,
                "code": f.code,
                "message": f.message,
                "file": f.source_file or file,
                "line": f.position.line if f.position else None,
                "column": f.position.column if f.position else None,
                "hint": f.hint,
            }
            for f in findings
        ],
    }
