"""``blueprints.scaffold``: every combination of the wizard's main answers writes a blueprint that validates
without a finding and runs offline to completion; defaults follow earlier answers."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from blueprints import validate_file
from blueprints.scaffold import QUESTIONS, ScaffoldError, parse_answer, render_blueprint, resolve, slug
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo


def _combinations() -> list[dict[str, Any]]:
    combos: list[dict[str, Any]] = []
    for human, conversation in itertools.product((True, False), repeat=2):
        stops = ("finish", "rounds", "expression") if human else ("finish", "rounds", "score", "expression")
        histories = ("truncate_tokens", "truncate_turns", "summarize") if conversation else (None,)
        returns = ("conversation", "fields", "last") if conversation else ("fields", "last")
        for stop, history in itertools.product(stops, histories):
            combos.append({"human": human, "conversation": conversation, "stop": stop, "history": history})
        for kind in returns:
            combos.append({"human": human, "conversation": conversation, "returns": kind, "extra_agents": ("notes",)})
    for combo in combos:
        if combo.get("stop") == "expression":
            combo["exit_expression"] = "iteration >= 2"
        combo["max_loops"] = 3
    return combos


def _label(combo: dict[str, Any]) -> str:
    return "-".join(f"{key}={value}" for key, value in combo.items() if key not in ("max_loops", "exit_expression"))


@pytest.mark.parametrize("given", _combinations(), ids=_label)
def test_every_combination_validates_and_runs_offline(given: dict[str, Any], state_db: Path) -> None:
    answers = resolve({key: value for key, value in given.items() if value is not None})
    path = state_db.parent.parent / "flow.yaml"
    path.write_text(render_blueprint(answers, file="flow.yaml"), encoding="utf-8")
    findings = validate_file(path)
    assert findings == [], [str(f) for f in findings]
    args = ["run", str(path), "--json", "--no-input", "--input", "a goal"]
    for answer in ("first", "second", "third", "fourth"):
        args += ["--answer", answer]
    code, out, err = flujo(args)
    assert code == exit_codes.OK, err
    assert json.loads(out)["status"] == "completed"


def test_defaults_follow_the_earlier_answers() -> None:
    person = resolve({})
    assert (person.step, person.start, person.returns, person.ai_turn_source) == ("ask", "ask", "conversation", "last")
    assert (person.history, person.history_limit, person.model, person.max_loops) == (
        "truncate_tokens",
        4096,
        "scripted",
        5,
    )
    alone = resolve({"human": False, "conversation": False})
    assert (alone.step, alone.start, alone.returns) == ("draft", "input", "last")
    helpers = resolve({"extra_agents": ("notes",)})
    assert (helpers.ai_turn_source, helpers.named_steps) == ("named_steps", ("ask",))
    assert resolve({"history": "truncate_turns"}).history_limit == 20
    assert resolve({"history": "summarize"}).history_limit == 10
    assert resolve({"purpose": "Plan a trip!"}).name == "plan_a_trip"


def test_slugs_are_names() -> None:
    assert slug("clarify a goal") == "clarify_a_goal"
    assert slug("3 ideas") == "loop_3_ideas"
    assert slug("¿?") == "my_loop"


def test_typed_answers_are_parsed_and_checked() -> None:
    by_key = {question.key: question for question in QUESTIONS}
    values: dict[str, Any] = {"human": True, "conversation": True, "step": "ask", "extra_agents": ("notes",)}
    assert parse_answer(by_key["human"], "Y", values) is True
    assert parse_answer(by_key["extra_agents"], " notes , critic ", {"step": "ask"}) == ("notes", "critic")
    assert parse_answer(by_key["max_cost_usd"], "", values) is None
    assert parse_answer(by_key["max_cost_usd"], "0.25", values) == 0.25
    with pytest.raises(ScaffoldError, match="give a whole number"):
        parse_answer(by_key["max_loops"], "five", values)
    with pytest.raises(ScaffoldError, match="not one of"):
        parse_answer(by_key["history"], "keep everything", values)
    with pytest.raises(ScaffoldError, match="name at least one agent step"):
        parse_answer(by_key["named_steps"], "", values)


def test_text_from_the_answers_is_quoted_safely(tmp_path: Path) -> None:
    answers = resolve({"purpose": 'answer "why?": a #hash, {braces} & a: colon', "first_question": "Why? #1: go"})
    path = tmp_path / "quoted.yaml"
    path.write_text(render_blueprint(answers, file="quoted.yaml"), encoding="utf-8")
    assert validate_file(path) == []
    assert 'message: "Why? #1: go"' in path.read_text(encoding="utf-8")


def test_a_misspelt_choice_gets_a_did_you_mean_and_the_question_spells_it_as_the_choice() -> None:
    by_key = {question.key: question for question in QUESTIONS}
    values: dict[str, Any] = {"human": True, "conversation": True, "history": "summarize"}
    with pytest.raises(ScaffoldError, match=r"'summarise' is not one of .* — did you mean 'summarize'\?"):
        parse_answer(by_key["history"], "summarise", values)
    assert "Summarize the older turns" in by_key["history_limit"].text(values)


@pytest.mark.parametrize(
    ("purpose", "said"),
    [
        ("help me pick a restaurant", "You help a person pick a restaurant."),
        ("Help us to plan a trip", "You help a person plan a trip."),
        ("plan a trip", "You help a person plan a trip."),
    ],
)
def test_the_agent_helps_the_person_do_what_they_asked_for(purpose: str, said: str) -> None:
    assert said in render_blueprint(resolve({"purpose": purpose}), file="x.yaml")
