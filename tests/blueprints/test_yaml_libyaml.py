"""Answers files are read with libyaml (``parse_yaml(..., fast=True)``): the same data, positions and
findings as the Python loader, within the same bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from blueprints.reading.positions import PositionIndex
from blueprints.reading.yaml_source import _parse_with_libyaml, parse_yaml
from core.text.bounds import BoundsSettings

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [
    *(path.read_text(encoding="utf-8") for path in sorted((ROOT / "blueprints" / "examples").glob("*.yaml"))),
    '["first answer", "second", {"city": "Zürich"}, 3, 2.5, null, true]',
    "get_goal: plan a trip\nanswer:\n  - 'yes'\n  - \"done\"\n  - |\n    two\n    lines\n",
    "base: &base {a: 1}\nmerged:\n  <<: *base\n  b: 2\nwhen: 2026-11-25\n",
    "\ufeff- one\n- two\n",
    "",
]
TROUBLE = [
    "yes: 1",  # a warning: YAML reads the key as true
    "get_goal: one\nget_goal: two\n",
    "a: &a [*a]\n",
    "[1, 2",
    "a: b: c",
    "x\x00",
    "- \u2028x",
    "[" * 100 + "x" + "]" * 100,  # the scalar is level 101
    "[" * 30000 + "]" * 30000,
    "a0: &a0 [x]\n" + "".join(f"a{n}: &a{n} [*a{n - 1}]\n" for n in range(1, 300)),
    "n: " + "9" * 5000,
    "n: 0x" + "f" * 5000,
]


def _same(text: str) -> None:
    pure, fast = parse_yaml(text, "f.yaml"), parse_yaml(text, "f.yaml", fast=True)
    assert (fast.data, fast.findings, fast.ok) == (pure.data, pure.findings, pure.ok)
    assert fast.index.__dict__ == pure.index.__dict__


@pytest.mark.parametrize("text", DOCUMENTS)
def test_libyaml_reads_an_ordinary_document_itself_as_the_python_loader_does(text: str) -> None:
    _same(text)
    assert _parse_with_libyaml(text, PositionIndex("f.yaml", text.splitlines()), BoundsSettings()) is not None


@pytest.mark.parametrize("text", TROUBLE)
def test_whatever_is_reported_is_worded_by_the_python_loader(text: str) -> None:
    _same(text)
    assert _parse_with_libyaml(text, PositionIndex("f.yaml", text.splitlines()), BoundsSettings()) is None


def test_the_depth_bound_is_checked_before_libyaml_composes() -> None:
    # Level 100 is allowed, 101 is not, counted as the Python loader counts (scalars are a level).
    inside = "[" * 99 + "x" + "]" * 99
    assert parse_yaml(inside, "f.yaml", fast=True).data is not None
    refused = parse_yaml("[" * 30000 + "]" * 30000, "f.yaml", fast=True)
    assert [f.message for f in refused.findings] == ["the YAML nests more than 100 levels deep"]
