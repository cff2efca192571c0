"""A step may share its name with a loop, map or parallel step it is inside (no other duplicate): inside that
body ``steps.NAME`` and the name-keyed loop fields mean the body step, outside it the enclosing step; what
takes a step name (``--answers`` keys, ``lens trace --step/--expand``) also takes a step path
(``clarify/clarify``), and a bare name that several steps have is exit 2, listing their paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blueprints import compile_pipeline, load_blueprint, validate_file
from core import Settings, StepPaths
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

SHARED = """\
version: "0.1"
agents:
  bot:
    model: scripted
    replies: ["Who is it for?", {action: finish}]
steps:
  - kind: loop
    name: clarify
    loop:
      conversation: true
      ai_turn_source: named_steps
      named_steps: [clarify]
      user_turn_sources: [hitl, answer]
      output: {text: conversation_history}
      body:
        - kind: step
          name: clarify
          uses: agents.bot
        - kind: hitl
          name: answer
          message: "inside: {{ steps.clarify.output }}"
  - kind: hitl
    name: after
    message: "outside: {{ steps.clarify.output | replace('\\n', ' | ') }}"
"""


def write(tmp_path: Path, text: str, name: str = "flow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def errors(path: Path) -> list[tuple[int, int, str]]:
    return [(f.position.line, f.position.column, f.message) for f in validate_file(path) if f.is_error and f.position]


def test_a_body_step_may_take_the_name_of_the_loop_map_or_parallel_around_it(tmp_path: Path) -> None:
    assert errors(write(tmp_path, SHARED)) == []
    nested = """\
version: "0.1"
steps:
  - kind: map
    name: each
    map:
      over: "previous_step"
      body:
        - kind: parallel
          name: each
          parallel:
            branches:
              one:
                - {kind: step, name: each, agent: {id: flujo.builtins.stringify}}
"""
    assert errors(write(tmp_path, nested)) == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # two steps of one body
        (
            'version: "0.1"\nsteps:\n  - kind: loop\n    name: l\n    loop:\n      body:\n'
            "        - {kind: step, name: l}\n        - {kind: step, name: l}\n",
            (8, 30, 7, 30),
        ),
        # a conditional is not a loop, map or parallel step
        (
            'version: "0.1"\nsteps:\n  - kind: conditional\n    name: c\n    condition_expression: "true"\n'
            "    branches:\n      'true':\n        - {kind: step, name: c}\n",
            (8, 30, 4, 11),
        ),
        # a step after the loop, not inside it
        (
            'version: "0.1"\nsteps:\n  - kind: loop\n    name: l\n    loop:\n      body:\n'
            "        - {kind: step, name: l}\n  - {kind: step, name: l}\n",
            (8, 24, 4, 11),
        ),
    ],
)
def test_any_other_duplicate_name_stays_an_error(tmp_path: Path, text: str, where: tuple[int, int, int, int]) -> None:
    path = write(tmp_path, text)
    line, column, first_line, first_column = where
    [(found_line, found_column, message)] = errors(path)
    assert (found_line, found_column) == (line, column)
    assert (
        message
        == f"step name {message.split(chr(39))[1]!r} is already used (first at {path}:{first_line}:{first_column})"
    )


def test_steps_name_means_the_body_step_inside_and_the_loop_outside(state_db: Path, tmp_path: Path) -> None:
    path = write(tmp_path, SHARED)
    code, out, err = flujo(["run", str(path), "--input", "a gift", "--answer", "my sister", "--answer", "ok", "--json"])
    assert code == exit_codes.OK, err
    flat = " ".join(err.split())
    assert "? inside: Who is it for? (answered) my sister" in flat  # the body step's reply
    # the loop's output: its conversation
    assert (
        '? outside: User: a gift | Assistant: Who is it for? | User: my sister | Assistant: {"action": "finish"}'
        in flat
    )
    assert json.loads(out)["output"] == "ok"


def test_step_paths_of_a_pipeline(tmp_path: Path) -> None:
    blueprint = load_blueprint(write(tmp_path, SHARED))
    paths = StepPaths(compile_pipeline(blueprint, Settings()))
    assert paths.named("clarify") == paths.ambiguous("clarify") == ["clarify", "clarify/clarify"]
    assert paths.named("answer") == ["clarify/answer"] and paths.ambiguous("answer") == []
    assert paths.of("clarify") == "clarify"
    assert paths.of("clarify/2/clarify") == "clarify/clarify"
    assert paths.of("clarify/2/answer") == "clarify/answer"
    assert paths.of("clarify/2/clarify/tool/1/approve") is None
    assert paths.of("nowhere") is None


def test_answers_keyed_by_a_step_path(state_db: Path, tmp_path: Path) -> None:
    path = write(tmp_path, SHARED)
    answers = write(tmp_path, "clarify/answer: my sister\nafter: ok\n", "answers.yaml")
    code, out, err = flujo(["run", str(path), "--input", "a gift", "--answers", str(answers), "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == "ok"
    assert "? inside: Who is it for? (answered) my sister" in " ".join(err.split())


def test_an_answers_key_that_several_steps_have_is_a_usage_error(state_db: Path, tmp_path: Path) -> None:
    path = write(tmp_path, SHARED)
    answers = write(tmp_path, "clarify: [x]\n", "answers.yaml")
    code, _, err = flujo(["run", str(path), "--input", "a gift", "--answers", str(answers)])
    assert code == exit_codes.USAGE
    flat = " ".join(err.split())
    assert f"error: the answers key 'clarify' names 2 steps of {path}: clarify, clarify/clarify" in flat
    assert "hint: key the answers by a step's path instead, e.g. clarify/clarify: ..." in flat
    assert "completed" not in flat and "paused" not in flat  # nothing ran


def test_lens_trace_takes_step_paths_and_refuses_a_name_several_steps_have(state_db: Path, tmp_path: Path) -> None:
    path = write(tmp_path, SHARED)
    long_input = "\n".join(f"line {number}" for number in range(40))  # long prompts are shown collapsed
    code, out, err = flujo(["run", str(path), "--input", long_input, "-a", "my sister", "-a", "ok", "--json"])
    assert code == exit_codes.OK, err
    run_id = json.loads(out)["run_id"]
    for option in ("--step", "--expand"):
        code, out, err = flujo(["lens", "trace", run_id, option, "clarify", "--plain"])
        assert code == exit_codes.USAGE and out == ""
        flat = " ".join(err.split())
        assert f"error: {option} clarify: 2 steps of run {run_id} are named 'clarify': clarify, clarify/clarify" in flat
        assert f"hint: give one of them as a path, e.g. {option} clarify/clarify" in flat
    code, out, err = flujo(["lens", "trace", run_id, "--step", "clarify/clarify", "--json"])
    assert code == exit_codes.OK, err
    shown = json.dumps(json.loads(out))
    assert '"clarify/1/clarify"' in shown and '"clarify/2/clarify"' in shown
    assert '"clarify/1/answer"' not in shown and '"after"' not in shown
    code, out, err = flujo(["lens", "trace", run_id, "--plain"])
    assert code == exit_codes.OK and out.count("shows it whole") == 2, err  # both calls collapsed
    code, out, err = flujo(["lens", "trace", run_id, "--expand", "clarify/clarify", "--plain"])
    assert code == exit_codes.OK, err
    assert "shows it whole" not in out and out.count("line 39") == 2  # the body step's calls, whole
    # a run path and a name only one step has work as before
    code, out, _ = flujo(["lens", "trace", run_id, "--step", "clarify/2/clarify", "--json"])
    assert code == exit_codes.OK and '"clarify/1/clarify"' not in out
    code, out, _ = flujo(["lens", "trace", run_id, "--step", "answer", "--json"])
    assert code == exit_codes.OK and '"clarify/1/answer"' in out


def test_answers_keyed_by_the_path_of_a_question_inside_a_sub_workflow(state_db: Path, tmp_path: Path) -> None:
    write(tmp_path, 'version: "0.1"\nsteps:\n  - {kind: hitl, name: ask, message: "child?"}\n', "child.yaml")
    path = write(
        tmp_path,
        'version: "0.1"\nimports: {child: child.yaml}\nsteps:\n'
        '  - {kind: hitl, name: ask, message: "parent?"}\n  - {name: review, uses: imports.child}\n',
    )
    # Names are unique per blueprint: the name answers both questions, as it always did.
    answers = write(tmp_path, "ask: [first, second]\n", "answers.yaml")
    code, _, err = flujo(["run", str(path), "--answers", str(answers)])
    assert code == exit_codes.OK, err
    assert "? parent? (answered) first" in err and "? child? (answered) second" in err
    # The child's question by its step path; its path's entries come before the name's.
    answers = write(tmp_path, "review/ask: from the child\nask: from the parent\n", "answers.yaml")
    code, out, err = flujo(["run", str(path), "--answers", str(answers), "--json"])
    assert code == exit_codes.OK, err
    assert "? parent? (answered) from the parent" in err and "? child? (answered) from the child" in err
    assert json.loads(out)["output"] == "from the child"


def test_submit_refuses_an_answers_key_that_several_steps_have(state_db: Path, tmp_path: Path) -> None:
    path = write(tmp_path, SHARED)
    answers = write(tmp_path, "clarify: [x]\n", "answers.yaml")
    code, out, err = flujo(["submit", str(path), "--input", "a gift", "--answers", str(answers)])
    assert code == exit_codes.USAGE and out == ""
    assert f"the answers key 'clarify' names 2 steps of {path}: clarify, clarify/clarify" in " ".join(err.split())
    answers = write(tmp_path, "clarify/answer: my sister\n", "answers.yaml")
    code, out, err = flujo(["submit", str(path), "--input", "a gift", "--answers", str(answers)])
    assert code == exit_codes.OK, err
