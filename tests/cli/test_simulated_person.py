"""A simulated person (``--simulate-user``, ``answered_by``) and replayed answers (``--replay-answers``),
through the real ``flujo run`` / ``flujo resume`` / ``flujo lens`` commands and the run store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from core import TraceEvent
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo
from tests.support.fakes.openai_server import FakeLLM

PERSONA = str(ROOT / "docs" / "examples" / "persona.yaml")
CONVERSATION = str(ROOT / "docs" / "examples" / "persona_conversation.yaml")
DATA = ROOT / "tests" / "data" / "persona"
MODEL_CONVERSATION = str(DATA / "model_conversation.yaml")
MODEL_GUESTS = str(DATA / "model_guests.yaml")


def run_json(*args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = flujo(["run", *args, "--json"])
    return code, json.loads(out), err


def events(db: Path, run_id: str) -> list[TraceEvent]:
    async def read() -> list[TraceEvent]:
        store = await open_store(str(db))
        try:
            return await store.events(run_id)
        finally:
            await store.close()

    return asyncio.run(read())


@pytest.fixture
def llm(fake_llm: FakeLLM, state_db: Path, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """The fake OpenAI-compatible server, with the CLI's providers pointed at it."""
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    return fake_llm


def test_scripted_persona_answers_two_questions_with_no_input(state_db: Path) -> None:
    code, result, err = run_json(PERSONA, "--simulate-user", "agents.tester", "--no-input")
    assert code == exit_codes.OK, err
    assert result["output"] == "4 guests, confirmed: true"
    assert [(a["step"], a["source"], a["by"]) for a in result["answers"]] == [
        ("guests", "simulated", "agents.tester"),
        ("confirm", "simulated", "agents.tester"),
    ]
    answers = [e.payload for e in events(state_db, result["run_id"]) if e.kind == "hitl.answer"]
    assert [(a["answer"], a["source"], a["by"]) for a in answers] == [
        (4, "simulated", "agents.tester"),
        (True, "simulated", "agents.tester"),
    ]
    assert "2 answer(s) simulated by agents.tester" in err


def test_without_a_simulated_user_the_same_run_pauses(state_db: Path) -> None:
    code, result, _ = run_json(PERSONA, "--no-input")
    assert code == exit_codes.PAUSED and result["pause"]["step"] == "guests"
    assert result["answers"] == []


def test_answered_by_plays_the_person_of_a_conversation_loop(state_db: Path) -> None:
    code, result, err = run_json(CONVERSATION, "--input", "Plan a trip", "--no-input")
    assert code == exit_codes.OK, err
    assert (
        "User: My family" in result["output"] and "User: June" in result["output"]
    )  # simulated answers are user turns
    prompts = [e.payload for e in events(state_db, result["run_id"]) if e.kind == "agent.prompt"]
    persona = [p for p in prompts if p.get("simulated_person") == "agents.traveller"]
    assert len(persona) == 2
    # Roles flipped: the person's own earlier words are its assistant turns, the clarifier's are user turns.
    assert [(m["role"], m["content"]) for m in persona[1]["messages"]] == [
        ("system", "You are planning a trip with your family in June. Answer in a few words."),
        ("assistant", "Plan a trip"),
        ("user", '{"action": "ask", "question": "Who is it for?"}'),
        ("assistant", "My family"),
        ("user", "By when?"),
    ]


def test_model_persona_hears_the_conversation_with_roles_flipped(llm: FakeLLM) -> None:
    llm.reply("My family", usage=(30, 2))
    llm.reply("June", usage=(40, 1))
    code, result, err = run_json(MODEL_CONVERSATION, "--input", "Plan a trip", "--simulate-user", "agents.persona")
    assert code == exit_codes.OK, err
    first, second = (body["messages"] for body in llm.bodies)
    assert first == [
        {"role": "system", "content": "You are Ada, planning a family trip in June."},
        {"role": "assistant", "content": "Plan a trip"},
        {"role": "user", "content": "Who is it for?"},
    ]
    assert [m["role"] for m in second] == ["system", "assistant", "user", "assistant", "user"]
    assert second[3] == {"role": "assistant", "content": "My family"} and second[4]["content"] == "By when?"
    assert result["output"].endswith("User: June\nAssistant: Done.")  # a structured reply reads as its summary
    # The persona's calls count in the run's usage (the scripted clarifier's use no tokens).
    assert result["usage"]["input_tokens"] == 70 and result["usage"]["output_tokens"] == 3


def test_a_replayed_run_makes_no_persona_calls_and_gives_the_same_output(llm: FakeLLM, state_db: Path) -> None:
    llm.reply("My family")
    llm.reply("June")
    code, first, err = run_json(MODEL_CONVERSATION, "--input", "Plan a trip", "--simulate-user", "agents.persona")
    assert code == exit_codes.OK, err
    calls = len(llm.requests)
    code, again, err = run_json(
        MODEL_CONVERSATION, "--input", "Plan a trip", "--simulate-user", "agents.persona",
        "--replay-answers", first["run_id"][:8],
    )  # fmt: skip
    assert code == exit_codes.OK, err
    assert len(llm.requests) == calls  # no new call for the person's side
    assert again["output"] == first["output"]
    assert again["replay"] == {"from": first["run_id"], "replayed": 2, "new_questions": []}
    assert {a["source"] for a in again["answers"]} == {"replayed"}
    assert f"replayed 2 answer(s) from run {first['run_id']}" in err
    marks = [e.payload for e in events(state_db, again["run_id"]) if e.kind == "hitl.answer"]
    assert [(m["source"], m["by"]) for m in marks] == [("replayed", first["run_id"])] * 2


def test_a_question_the_replayed_run_never_answered_is_new(state_db: Path) -> None:
    code, partial, _ = run_json(PERSONA, "--answer", "3", "--no-input")  # pauses at the second question
    assert code == exit_codes.PAUSED
    code, result, err = run_json(PERSONA, "--replay-answers", partial["run_id"], "--no-input")
    assert code == exit_codes.PAUSED and result["pause"]["step"] == "confirm"  # then: prompt, else pause
    assert result["replay"] == {"from": partial["run_id"], "replayed": 1, "new_questions": []}
    code, result, err = run_json(
        PERSONA, "--replay-answers", partial["run_id"], "--simulate-user", "agents.tester", "--no-input"
    )
    assert code == exit_codes.OK, err
    assert result["output"] == "3 guests, confirmed: true"  # the replayed 3, then the persona's first reply
    assert result["replay"]["new_questions"] == ["confirm"]
    assert "new question(s): confirm" in err


def test_given_answers_come_before_the_replay_and_the_simulated_user(state_db: Path) -> None:
    code, first, _ = run_json(PERSONA, "--answer", "2", "--answer", "no")
    assert code == exit_codes.OK
    code, result, err = run_json(
        PERSONA, "--answer", "6", "--replay-answers", first["run_id"], "--simulate-user", "agents.tester"
    )
    assert code == exit_codes.OK, err
    assert result["output"] == "6 guests, confirmed: false"
    assert [a["source"] for a in result["answers"]] == ["given", "replayed"]


def test_step_answered_by_beats_simulate_user(state_db: Path) -> None:
    code, result, err = run_json(
        CONVERSATION, "--input", "Plan a trip", "--simulate-user", "agents.clarifier", "--no-input"
    )
    assert code == exit_codes.OK, err
    assert {a["by"] for a in result["answers"]} == {"agents.traveller"}


def test_an_invalid_simulated_answer_is_asked_again_with_the_error(llm: FakeLLM) -> None:
    llm.reply("many")
    llm.reply("4")
    code, result, err = run_json(MODEL_GUESTS)
    assert code == exit_codes.OK, err
    assert result["output"] == 4
    again = llm.bodies[1]["messages"][-1]["content"]
    assert again.startswith("How many guests (1-8)?\n\n(Your answer 'many' was not accepted: 'many' is not of type")
    assert result["usage"]["requests"] == 2  # both calls count


def test_a_simulated_person_that_never_answers_validly_pauses_the_run(llm: FakeLLM, state_db: Path) -> None:
    for _ in range(3):
        llm.reply("many")
    code, result, err = run_json(MODEL_GUESTS)
    assert code == exit_codes.PAUSED, err
    assert len(llm.requests) == 3
    # Why nobody else answered: said in the JSON and on the pause line, else it looks as if --simulate-user
    # was ignored.
    why = "the simulated person agents.persona gave no valid answer in 3 tries: 'many' is not of type 'integer'"
    assert result["pause"]["reason"] == why
    for _ in range(3):
        llm.reply("many")
    code, _, err = flujo(["run", MODEL_GUESTS])
    assert code == exit_codes.PAUSED and f"why: {why}" in err, err
    kinds = [e.kind for e in events(state_db, result["run_id"])]
    assert kinds.count("hitl.rejected") == 3 and kinds.count("agent.reply") == 3  # the paid calls stay traced
    code, out, err = flujo(["resume", result["run_id"], "--answer", "5", "--json"])  # the person takes over
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == 5


def test_simulated_calls_are_held_to_the_run_limits(llm: FakeLLM) -> None:
    code, result, _ = run_json(MODEL_GUESTS, "--max-tokens", "5")
    assert code == exit_codes.LIMIT
    assert result["status"] == "limit_reached" and "before calling 'guests'" in result["error"]
    assert llm.requests == []


def test_resume_takes_simulate_user(state_db: Path) -> None:
    code, paused, _ = run_json(PERSONA, "--no-input")
    assert code == exit_codes.PAUSED
    code, out, err = flujo(["resume", paused["run_id"], "--simulate-user", "agents.tester", "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == "4 guests, confirmed: true"


def test_lens_marks_simulated_answers(state_db: Path) -> None:
    code, result, _ = run_json(PERSONA, "--simulate-user", "agents.tester", "--no-input")
    assert code == exit_codes.OK
    code, out, err = flujo(["lens", "trace", result["run_id"], "--expand", "all"])
    assert code == exit_codes.OK, err
    assert "guests  hitl" in out and out.count("· simulated by agents.tester") == 2
    assert "simulated person agents.tester" in out  # its calls, with what it was sent
    assert "(simulated by agents.tester)" in out  # the hitl.answer events


def test_replay_reaches_questions_inside_a_sub_workflow(state_db: Path) -> None:
    blueprint = str(DATA / "subworkflow.yaml")
    code, first, err = run_json(blueprint, "--answer", "rain", "--answer", "Ada")
    assert code == exit_codes.OK, err
    code, again, err = run_json(blueprint, "--replay-answers", first["run_id"], "--no-input")
    assert code == exit_codes.OK, err
    assert again["output"] == first["output"] == "Please greet Ada."
    assert [a["path"] for a in again["answers"]] == ["topic", "greet/ask_name"]


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--simulate-user", "agents.testr", "agent 'testr' is not defined"),
        ("--simulate-user", "tester", "--simulate-user takes agents.NAME"),
        ("--replay-answers", "ffffffff", "no run matches 'ffffffff'"),
    ],
)
def test_a_flag_naming_nothing_is_a_usage_error(state_db: Path, flag: str, value: str, message: str) -> None:
    code, _, err = flujo(["run", PERSONA, flag, value, "--no-input"])
    assert code == exit_codes.USAGE
    assert message in " ".join(err.split())


def test_validate_reports_an_unknown_answered_by(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        'version: "0.1"\nagents:\n  tester: {model: echo}\nsteps:\n'
        "  - kind: hitl\n    name: ask\n    message: Hi?\n    answered_by: agents.testr\n"
    )
    code, out, _ = flujo(["validate", str(path), "--json"])
    assert code == exit_codes.FAILED
    messages = [f["message"] for f in json.loads(out)["findings"]]
    assert "step 'ask' is answered_by agent 'testr', which is not defined — did you mean 'tester'?" in messages


def test_the_simulated_user_comes_before_piped_stdin_and_a_new_question_falls_to_it(state_db: Path) -> None:
    code, out, err = flujo(["run", PERSONA, "--simulate-user", "agents.tester", "--json"], input="7\nno\n")
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == "4 guests, confirmed: true"  # the pipe was not read
    code, partial, _ = run_json(PERSONA, "--answer", "3", "--no-input")
    code, out, err = flujo(["run", PERSONA, "--replay-answers", partial["run_id"], "--json"], input="no\n")
    assert code == exit_codes.OK, err
    result = json.loads(out)
    assert result["output"] == "3 guests, confirmed: false"
    assert [a["source"] for a in result["answers"]] == ["replayed", "person"]
