"""Names a template defines itself — a ``{% macro %}`` and its parameters, ``{% set %}``, ``{% for %}`` and
``{% with %}`` targets — are not reported as undefined: validate accepts the template and the run renders
it. Through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

TEMPLATES = {
    "macro": ("{% macro g(n) %}[{{ n }}]{% endmacro %}{{ g(1) }}", "[1]"),
    "macro-default": ("{% macro g(n, sep='-') %}{{ n }}{{ sep }}{% endmacro %}{{ g(2) }}", "2-"),
    "call-block": ("{% macro box() %}<{{ caller() }}>{% endmacro %}{% call box() %}x{% endcall %}", "<x>"),
    "set": ("{% set who = previous_step %}hi {{ who }}", "hi in"),
    "for": ("{% for c in ['a', 'b'] %}{{ c }}{% endfor %}", "ab"),
    "with": ("{% with w = 3 %}{{ w }}{% endwith %}", "3"),
}


def _blueprint(template: str) -> str:
    return (
        'version: "0.1"\nsteps:\n  - kind: step\n    name: s\n    agent: {id: flujo.builtins.passthrough}\n'
        f"    input: {json.dumps(template)}\n"
    )


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_a_name_the_template_defines_is_not_undefined(tmp_path: Path, state_db: Path, name: str) -> None:
    template, rendered = TEMPLATES[name]
    (tmp_path / "bp.yaml").write_text(_blueprint(template), encoding="utf-8")
    code, _, err = flujo(["validate", str(tmp_path / "bp.yaml")])
    assert code == exit_codes.OK and "not defined" not in err, err
    code, out, err = flujo(["run", str(tmp_path / "bp.yaml"), "--input", "in"])
    assert code == exit_codes.OK, err
    assert rendered in out


def test_a_name_used_outside_the_macro_that_defines_it_is_still_undefined(tmp_path: Path) -> None:
    (tmp_path / "bp.yaml").write_text(_blueprint("{% macro g(n) %}{{ n }}{% endmacro %}{{ g(1) }}{{ h }}"), "utf-8")
    code, _, err = flujo(["validate", str(tmp_path / "bp.yaml")])
    assert code == exit_codes.FAILED
    assert "bp.yaml:6:" in err and "template reads 'h', which is not defined" in err and "'g'" not in err
