"""Helpers for the blueprint tests: findings as (line, column, code, message) rows."""

from __future__ import annotations

from pathlib import Path

from blueprints import Finding, validate_file

DATA = Path(__file__).parents[1] / "data" / "blueprints"

Row = tuple[int, int, str, str]


def rows(name: str, *, severity: str | None = None) -> list[Row]:
    """The findings of ``tests/data/blueprints/<name>.yaml`` as (line, column, code, message) rows."""
    return [row(f) for f in validate_file(DATA / f"{name}.yaml") if severity is None or f.severity == severity]


def row(finding: Finding) -> Row:
    assert finding.position is not None, finding
    return (finding.position.line, finding.position.column, finding.code, finding.message)
