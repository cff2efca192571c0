"""The words a loop's ``output`` takes (docs/loops.md): ``initial_prompt`` is the loop's own input (else the
run's), ``conversation_history`` outside a conversation is the ``scratchpad.history`` lines ``init`` wrote,
and where such a field can only come out empty, ``flujo validate`` says so at file:line:col
(``empty-output``). Run through the real ``flujo run --json`` with scripted agents and ``--answer``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

# The FSD-028 friendly loop as its users write it: the goal comes from a question step before the loop.
CLARIFY = """\
version: "0.1"
name: clarify
agents:
  asker:
    model: scripted
    replies: ["Which city?", "Which month?"]
steps:
  - kind: hitl
    name: get_goal
    message: "What is your goal?"
  - kind: loop
    name: clarification_loop
    loop:
      max_loops: 2{conversation}
      init:
        history:
          start_with:
            from_step: get_goal
            prefix: "User: "
      body:
        - {{kind: step, name: ask, uses: agents.asker}}
        - {{kind: hitl, name: answer, message: "{{{{ previous_step }}}}"}}
      output:
        fields:
          goal: initial_prompt
          clarifications: conversation_history
"""

ANSWERS = ("--answer", "Plan a trip", "--answer", "Lima", "--answer", "June")


def write(folder: Path, text: str, name: str = "flow.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def run_json(path: Path, *args: str) -> Any:
    code, out, err = flujo(["run", str(path), "--json", *args])
    assert code == exit_codes.OK, err
    return json.loads(out)["output"]


def validate_json(path: Path) -> list[dict[str, Any]]:
    code, out, _ = flujo(["validate", str(path), "--json"])
    assert code == exit_codes.OK, out
    findings: list[dict[str, Any]] = json.loads(out)["findings"]
    return findings


def test_outside_a_conversation_the_goal_is_the_answer_and_the_history_the_seeded_line(state_db: Path) -> None:
    """It gave ``{"goal": null, "clarifications": ""}``: the goal was the run's input (there is none) and
    ``init.history`` wrote nothing without ``conversation: true``."""
    path = write(state_db.parent.parent, CLARIFY.format(conversation=""))
    assert validate_json(path) == []  # init.history does something here: no "has no effect" warning
    output = run_json(path, *ANSWERS)
    assert output == {"goal": "Plan a trip", "clarifications": "User: Plan a trip"}


def test_in_a_conversation_the_goal_is_the_answer_and_the_history_the_transcript(state_db: Path) -> None:
    path = write(state_db.parent.parent, CLARIFY.format(conversation="\n      conversation: true"))
    assert validate_json(path) == []
    output = run_json(path, *ANSWERS)
    assert output == {
        "goal": "Plan a trip",
        "clarifications": "User: Plan a trip\nAssistant: Which city?\nUser: Lima\nAssistant: Which month?\nUser: June",
    }


def test_a_loop_that_comes_first_takes_the_runs_input(state_db: Path) -> None:
    text = CLARIFY.format(conversation="").replace("from_step: get_goal", "from_initial_input: true")
    first = text.replace('  - kind: hitl\n    name: get_goal\n    message: "What is your goal?"\n', "")
    path = write(state_db.parent.parent, first)
    output = run_json(path, "--input", "Plan a trip", "--answer", "Lima", "--answer", "June")
    assert output == {"goal": "Plan a trip", "clarifications": "User: Plan a trip"}
    # the template variable is not the word: {{ initial_prompt }} is always the run's input
    templated = CLARIFY.format(conversation="").replace("goal: initial_prompt", 'goal: "{{ initial_prompt }}"')
    output = run_json(write(state_db.parent.parent, templated, "templated.yaml"), "--input", "x", *ANSWERS)
    assert output["goal"] == "x"


def test_a_loop_given_the_context_falls_back_to_the_runs_input(state_db: Path) -> None:
    """Inside a conversation that propagates the context, an inner loop's input from iteration 2 is the
    context itself: its ``initial_prompt`` is then the run's input, never the context object."""
    text = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: ["one", "two"]}
steps:
  - kind: loop
    name: outer
    loop:
      conversation: true
      max_loops: 2
      exit_expression: "false"
      body:
        - kind: loop
          name: inner
          loop:
            max_loops: 1
            body: [{kind: step, name: reply, uses: agents.bot}]
            output: {goal: initial_prompt}
        - {kind: step, name: keep, agent: {id: flujo.builtins.passthrough}}
"""
    output = run_json(write(state_db.parent.parent, text), "--input", "the run's input")
    assert output == {"goal": "the run's input"}


def test_validate_warns_where_conversation_history_can_only_be_empty(state_db: Path) -> None:
    folder = state_db.parent.parent
    unfilled = CLARIFY.format(conversation="").replace(
        "      init:\n        history:\n          start_with:\n            from_step: get_goal\n"
        '            prefix: "User: "\n',
        "",
    )
    path = write(folder, unfilled)
    [finding] = validate_json(path)
    line = unfilled.splitlines().index("          clarifications: conversation_history") + 1
    assert (finding["code"], finding["severity"], finding["line"], finding["column"]) == (
        "empty-output", "warning", line, 27,
    )  # fmt: skip
    assert "not in a conversation" in finding["message"]
    assert "nothing in this blueprint writes context.scratchpad.history" in finding["message"]
    assert run_json(path, *ANSWERS)["clarifications"] == ""  # what the warning said
    code, _, err = flujo(["validate", str(path)])
    assert code == exit_codes.OK
    assert f"flow.yaml:{line}:27: warning: conversation_history is always empty here" in err


@pytest.mark.parametrize(
    "filled",
    [
        "      conversation: true\n",
        "      init:\n        - append: {target: context.scratchpad.history, value: 'User: {{ previous_step }}'}\n",
    ],
)
def test_no_warning_where_something_fills_the_history(state_db: Path, filled: str) -> None:
    text = CLARIFY.format(conversation="").replace(
        "      init:\n        history:\n          start_with:\n            from_step: get_goal\n"
        '            prefix: "User: "\n',
        filled,
    )
    path = write(state_db.parent.parent, text)
    assert validate_json(path) == []
    assert run_json(path, *ANSWERS)["clarifications"].startswith("User: Plan a trip")


def test_the_text_shape_warns_too_and_explain_says_what_the_goal_is(state_db: Path) -> None:
    folder = state_db.parent.parent
    text = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: ["hi"]}
steps:
  - {kind: hitl, name: get_goal, message: "Goal?"}
  - kind: loop
    name: talk
    loop:
      max_loops: 1
      body: [{kind: step, name: reply, uses: agents.bot}]
      output: {text: conversation_history}
"""
    [finding] = validate_json(write(folder, text))
    assert (finding["code"], finding["line"], finding["column"]) == ("empty-output", 11, 22)
    code, out, err = flujo(["explain", str(write(folder, CLARIFY.format(conversation=""), "clarify.yaml"))])
    assert code == exit_codes.OK, err
    said = " ".join(out.split())
    assert 'Appends get_goal\'s output prefixed "User:" to scratchpad.history' in said
    assert "goal = the loop's input (your answer at get_goal)" in said


def test_an_ensembles_output_takes_the_same_words(state_db: Path) -> None:
    text = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: ["hi"]}
steps:
  - {kind: hitl, name: get_goal, message: "Goal?"}
  - kind: ensemble
    name: chat
    ensemble:
      participants:
        - {name: bot, uses: agents.bot}
      output: {goal: initial_prompt, said: conversation_history}
"""
    path = write(state_db.parent.parent, text)
    [finding] = validate_json(path)
    assert (finding["code"], finding["line"], finding["column"]) == ("empty-output", 11, 44)
    assert "previous_step.history" in finding["hint"]
    assert run_json(path, "--answer", "Plan a trip") == {"goal": "Plan a trip", "said": ""}


@pytest.mark.parametrize(("seed", "where"), [("later", "after"), ("reply", "inside")])
def test_validate_warns_where_the_seed_step_has_not_run_yet(state_db: Path, seed: str, where: str) -> None:
    text = f"""\
version: "0.1"
agents:
  bot: {{model: scripted, replies: ["hi"]}}
steps:
  - kind: loop
    name: talk
    loop:
      max_loops: 1
      init: {{history: {{start_with: {{from_step: {seed}}}}}}}
      body: [{{kind: step, name: reply, uses: agents.bot}}]
      output: {{text: conversation_history}}
  - {{kind: hitl, name: later, message: "Goal?"}}
  - {{kind: step, name: result, agent: {{id: flujo.builtins.stringify}}, input: "[{{{{ steps.talk.output }}}}]"}}
"""
    path = write(state_db.parent.parent, text)
    [finding] = validate_json(path)
    assert (finding["code"], finding["line"], finding["column"]) == ("empty-output", 9, 48)
    assert finding["message"] == (
        f"from_step names {seed!r}, a step {where} loop 'talk': it has no output when the loop starts,"
        " so init.history adds nothing to context.scratchpad.history"
    )
    code, out, err = flujo(["run", str(path), "--json", "--answer", "x"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == "[]"  # the loop's output is empty, as the warning said
