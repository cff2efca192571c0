"""``flujo validate`` warns where an expression or template reads a context key nothing writes
(``never-written``), at file:line:col with a did-you-mean; ``.get(key, default)`` works in expressions."""

from __future__ import annotations

from pathlib import Path

import pytest

from blueprints import Finding, validate_file
from tests.support.cli_helpers import EXAMPLES, ROOT, flujo

ROUTE = """\
version: "0.1"
agents:
  judge:
    model: scripted
    replies: [{needs_clarification: true}]
    output_schema: {type: object, properties: {needs_clarification: {type: boolean}}}
steps:
  - {kind: step, name: judge, uses: agents.judge, updates_context: true}
  - kind: conditional
    name: route
    condition_expression: "%s"
    branches:
      true: [{kind: step, name: ask, agent: {id: flujo.builtins.stringify}, input: "clarify"}]
      false: [{kind: step, name: go, agent: {id: flujo.builtins.stringify}, input: "go"}]
"""


def never_written(path: Path) -> list[Finding]:
    return [f for f in validate_file(path) if f.code == "never-written"]


def write(tmp_path: Path, text: str, name: str = "flow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_key_read_at_the_top_of_the_context_is_found_with_its_place_and_a_did_you_mean(tmp_path: Path) -> None:
    for source in ("context.get('needs_clarification', False)", "context.needs_clarification"):
        [finding] = never_written(write(tmp_path, ROUTE % source))
        assert finding.severity == "warning" and finding.position is not None
        assert (finding.position.line, finding.position.column) == (11, 28)
        assert finding.message == (
            "expression reads context.needs_clarification, which nothing in this blueprint writes, so it is always"
            " missing — did you mean context.scratchpad.needs_clarification?"
        )


def test_reads_of_what_the_blueprint_writes_are_not_warned_about(tmp_path: Path) -> None:
    for source in (
        "context.scratchpad.get('needs_clarification', False)",
        "context.scratchpad.needs_clarification",
        "context.scratchpad['needs_clarification'] and context.scratchpad.last_agent_command",
        "context.steps and context.initial_prompt and context.scratchpad.items()",
    ):
        assert never_written(write(tmp_path, ROUTE % source)) == [], source


def test_a_misspelt_scratchpad_key_in_a_template_gets_the_written_key(tmp_path: Path) -> None:
    text = ROUTE % "context.scratchpad.needs_clarification"
    text = text.replace('input: "clarify"', 'input: "{{ context.scratchpad.need_clarification }}"')
    [finding] = never_written(write(tmp_path, text))
    assert finding.position is not None and (finding.position.line, finding.position.column) == (13, 88)
    assert finding.message.startswith("template reads context.scratchpad.need_clarification, which nothing")
    assert finding.message.endswith("did you mean context.scratchpad.needs_clarification?")


EVERY_WRITER = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [{action: finish}]}
steps:
  - {kind: hitl, name: goal, message: "Goal?", sink_to: scratchpad.goal}
  - {kind: step, name: shout, agent: {id: flujo.builtins.stringify}, sink_to: context.loud}
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 1
      init:
        - set: {target: context.scratchpad.counter, value: 0}
        - append: {target: context.scratchpad.log, value: start}
      body: [{kind: step, name: talk, uses: agents.bot}]
  - kind: loop
    name: noted
    loop: {max_loops: 1, init: {notes: {set: "n"}}, body: [{kind: step, name: note, uses: agents.bot}]}
  - kind: map
    name: each
    map:
      over: "context.scratchpad.log"
      init: [{set: {target: context.scratchpad.seen, value: []}}]
      body: [{kind: step, name: one, uses: agents.bot}]
  - kind: step
    name: report
    agent: {id: flujo.builtins.stringify}
    input: >-
      {{ context.scratchpad.goal }} {{ context.scratchpad.loud }} {{ context.scratchpad.counter }}
      {{ context.scratchpad.log }} {{ context.scratchpad.notes }} {{ context.scratchpad.seen }}
      {{ context.scratchpad.history }} {{ context.scratchpad.last_agent_command }} {{ context.scratchpad.typo }}
"""


def test_every_kind_of_write_is_known(tmp_path: Path) -> None:
    found = never_written(write(tmp_path, EVERY_WRITER))
    assert [f.message.split(",")[0] for f in found] == ["template reads context.scratchpad.typo"]


def test_a_step_whose_output_no_schema_fixes_can_write_any_scratchpad_key(tmp_path: Path) -> None:
    script = EVERY_WRITER.replace(
        "  - kind: step\n    name: report",
        "  - {kind: step, name: free, agent: 'tests.support.context_key_agents:decide', updates_context: true}\n"
        "  - kind: step\n    name: report",
    ).replace("{{ context.scratchpad.typo }}", "{{ context.scratchpad.typo }} {{ context.typo }}")
    found = never_written(write(tmp_path, script))
    # The scratchpad may hold any key now; the top of the context still holds only its own five.
    assert [f.message.split(",")[0] for f in found] == ["template reads context.typo"]
    assert found[0].message.endswith("did you mean context.scratchpad.typo?")


def test_the_examples_read_only_what_they_write() -> None:
    files = sorted([*EXAMPLES.glob("*.yaml"), *(ROOT / "docs" / "examples").glob("*.yaml")])
    assert files
    assert [str(f) for path in files for f in never_written(path)] == []


@pytest.mark.parametrize(
    ("source", "taken"),
    [
        ("context.scratchpad.get('needs_clarification', False)", "clarify"),
        ("context.scratchpad.get('no_such_key', True)", "clarify"),  # the default, when the key is missing
        ("context.scratchpad.get('no_such_key', False)", "go"),
    ],
)
def test_get_with_a_default_works_in_expressions(tmp_path: Path, state_db: Path, source: str, taken: str) -> None:
    code, out, err = flujo(["run", str(write(tmp_path, ROUTE % source)), "--input", "x"])
    assert code == 0, err
    assert out.strip() == taken
