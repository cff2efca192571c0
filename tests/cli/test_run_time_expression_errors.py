"""A template or expression that fails while a run executes names where the blueprint writes it, and an
expression the sandbox refuses is the same located error wherever it is written: in a step's template, a
loop's ``exit_expression``, a conditional's ``condition_expression``, an ensemble dependency's
``condition`` (it used to read as None there: silently false). Through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

UNSAFE = "'{0.__class__}'.format(previous_step)"
PASS = "{kind: step, name: %s, agent: {id: flujo.builtins.passthrough}}"

BLUEPRINTS = {
    "template": f"""\
version: "0.1"
steps:
  - {{kind: step, name: a, agent: {{id: flujo.builtins.passthrough}}, input: "{{{{ {UNSAFE} }}}}"}}
""",
    "exit_expression": f"""\
version: "0.1"
steps:
  - kind: loop
    name: again
    loop:
      max_loops: 3
      exit_expression: "{UNSAFE} == 'x'"
      body: [{PASS % "a"}]
""",
    "condition_expression": f"""\
version: "0.1"
steps:
  - kind: conditional
    name: pick
    condition_expression: "{UNSAFE}"
    branches:
      x: [{PASS % "b"}]
    default_branch: [{PASS % "d"}]
""",
    "ensemble condition": f"""\
version: "0.1"
agents:
  writer: {{model: scripted, replies: ["one", "two"]}}
  critic: {{model: scripted, replies: ["ok", "ok"]}}
steps:
  - kind: ensemble
    name: review
    ensemble:
      participants:
        - name: writer
          uses: agents.writer
          max_turns: 2
          triggers_conversation: true
        - name: critic
          uses: agents.critic
          max_turns: 2
          depends_on:
            - participant: writer
              condition: "{UNSAFE} == 'x'"
      max_total_turns: 4
""",
}
WHERE = {
    "template": (3, 75),
    "exit_expression": (7, 24),
    "condition_expression": (5, 27),
    "ensemble condition": (19, 26),
}


@pytest.mark.parametrize("place", list(BLUEPRINTS))
def test_an_unsafe_expression_fails_its_step_at_its_place(state_db: Path, tmp_path: Path, place: str) -> None:
    (tmp_path / "unsafe.yaml").write_text(BLUEPRINTS[place], encoding="utf-8")
    code, out, err = flujo(["run", "unsafe.yaml", "--input", "hi", "--json"])
    assert code == exit_codes.FAILED, err
    error = json.loads(out)["error"]
    line, column = WHERE[place]
    assert f"unsafe.yaml:{line}:{column}: " in error
    assert "tried something unsafe: access to attribute '__class__' of 'str' object is unsafe" in error


def test_a_run_time_template_error_names_the_blueprint_line(state_db: Path, tmp_path: Path) -> None:
    """An undefined key, in a step's input and in a loop's init value (compiled from nested YAML)."""
    (tmp_path / "missing.yaml").write_text(
        'version: "0.1"\nsteps:\n  - {kind: step, name: boom, agent: {id: flujo.builtins.passthrough},\n'
        '     input: "{{ previous_step.nope }}"}\n',
        encoding="utf-8",
    )
    code, out, _ = flujo(["run", "missing.yaml", "--input", "x", "--json"])
    assert code == exit_codes.FAILED
    assert json.loads(out)["error"].startswith(
        f"{tmp_path / 'missing.yaml'}:4:13: template '{{{{ previous_step.nope }}}}'"
    )
    (tmp_path / "init.yaml").write_text(
        'version: "0.1"\nsteps:\n  - kind: loop\n    name: again\n    loop:\n      max_loops: 1\n'
        "      init:\n        - set:\n            target: context.scratchpad.seen\n"
        '            value: {first: ["{{ previous_step.nope }}"]}\n'
        f"      body: [{PASS % 'a'}]\n",
        encoding="utf-8",
    )
    code, out, _ = flujo(["run", "init.yaml", "--input", "x", "--json"])
    assert code == exit_codes.FAILED
    assert ":10:29: template '{{ previous_step.nope }}'" in json.loads(out)["error"], out


def test_a_long_template_that_fails_is_quoted_shortened(state_db: Path, tmp_path: Path) -> None:
    """The error quotes the start and the end of a long template, not all of it (a 4.9 MB one was printed
    whole)."""
    template = "x" * 100_000 + "{{ previous_step.nope }}"
    step = f'{{kind: step, name: s, agent: {{id: flujo.builtins.passthrough}}, input: "{template}"}}'
    (tmp_path / "long.yaml").write_text(f'version: "0.1"\nsteps:\n  - {step}\n', encoding="utf-8")
    code, _, err = flujo(["run", "long.yaml", "--input", "x"])
    assert code == exit_codes.FAILED
    assert max(len(line) for line in err.splitlines()) < 300, err[:300]
    assert "long.yaml:3:75: template 'xxx" in err and "…" in err
    assert "{{ previous_step.nope }}': 'nope' is undefined (no such key)" in err
