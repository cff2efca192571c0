"""A simulated person and replayed answers in ensembles: a person participant asks through the same
function as a ``hitl`` step, so ``answered_by``, ``--simulate-user`` and ``--replay-answers`` reach it.
Through the real ``flujo`` commands, the run store, and the loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from core import TraceEvent
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo
from tests.support.fakes.openai_server import FakeLLM

EXAMPLE = str(ROOT / "docs" / "examples" / "ensemble_persona.yaml")
FILE_EXAMPLE = ROOT / "docs" / "examples" / "ensemble_file"
MODEL_ENSEMBLE = str(ROOT / "tests" / "data" / "persona" / "model_ensemble.yaml")


def run_json(*args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = flujo(["run", *args, "--json"])
    return code, json.loads(out), err


def events(db: Path, run_id: str) -> list[TraceEvent]:
    async def read() -> list[TraceEvent]:
        async with await open_store(str(db)) as store:
            return await store.events(run_id)

    return asyncio.run(read())


@pytest.fixture
def llm(fake_llm: FakeLLM, state_db: Path, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """The fake OpenAI-compatible server, with the CLI's providers pointed at it."""
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    return fake_llm


def test_answered_by_plays_an_ensembles_person(state_db: Path) -> None:
    code, result, err = run_json(EXAMPLE, "--input", "a poem about rain", "--no-input")
    assert code == exit_codes.OK, err
    assert result["output"] == {"poem": "Soft rain on the roof at night", "published": "true"}  # input_schema
    assert [(a["path"], a["source"], a["by"]) for a in result["answers"]] == [
        ("review/5/editor", "simulated", "agents.bea")
    ]
    marks = [e.payload for e in events(state_db, result["run_id"]) if e.kind == "hitl.answer"]
    assert [(m["answer"], m["source"], m["by"]) for m in marks] == [(True, "simulated", "agents.bea")]
    assert "1 answer(s) simulated by agents.bea" in err


def test_a_model_persona_hears_the_ensemble_with_roles_flipped(llm: FakeLLM, state_db: Path) -> None:
    llm.reply("Call it Rain", usage=(30, 3))
    llm.reply("Keep Soft rain", usage=(50, 3))
    code, result, err = run_json(MODEL_ENSEMBLE, "--input", "a poem", "--simulate-user", "agents.persona")
    assert code == exit_codes.OK, err
    assert result["output"] == {"title": "Keep Soft rain", "rounds": 4}
    first, second = (body["messages"] for body in llm.bodies)
    assert first == [
        {"role": "system", "content": "You are Bea, an editor."},
        {"role": "assistant", "content": "a poem"},  # the ensemble's input is the person's
        {"role": "user", "content": "writer: Rain\n\nWhich title?"},  # the newest turn, heard with the question
    ]
    assert second == [
        {"role": "system", "content": "You are Bea, an editor."},
        {"role": "assistant", "content": "a poem"},
        {"role": "user", "content": "writer: Rain"},
        {"role": "assistant", "content": "Call it Rain"},  # its own earlier answer is its turn
        {"role": "user", "content": "writer: Soft rain\n\nWhich title?"},
    ]
    # The persona's calls count in the run's usage (the scripted writer's use no tokens).
    assert result["usage"]["input_tokens"] == 80 and result["usage"]["output_tokens"] == 6
    assert [a["source"] for a in result["answers"]] == ["simulated", "simulated"]
    prompts = [e.payload for e in events(state_db, result["run_id"]) if e.kind == "agent.prompt"]
    assert [p.get("simulated_person") for p in prompts if p.get("simulated_person")] == ["agents.persona"] * 2


def test_a_replayed_ensemble_makes_no_persona_calls_and_gives_the_same_output(llm: FakeLLM, state_db: Path) -> None:
    llm.reply("Call it Rain")
    llm.reply("Keep Soft rain")
    code, first, err = run_json(MODEL_ENSEMBLE, "--input", "a poem", "--simulate-user", "agents.persona")
    assert code == exit_codes.OK, err
    calls = len(llm.requests)
    code, again, err = run_json(
        MODEL_ENSEMBLE, "--input", "a poem", "--simulate-user", "agents.persona",
        "--replay-answers", first["run_id"], "--no-input",
    )  # fmt: skip
    assert code == exit_codes.OK, err
    assert len(llm.requests) == calls  # no new call for the person's side
    assert again["output"] == first["output"]
    assert again["replay"] == {"from": first["run_id"], "replayed": 2, "new_questions": []}
    assert [a["path"] for a in again["answers"]] == ["review/2/editor", "review/4/editor"]
    marks = [e.payload for e in events(state_db, again["run_id"]) if e.kind == "hitl.answer"]
    assert [(m["source"], m["by"]) for m in marks] == [("replayed", first["run_id"])] * 2


def test_a_person_participant_without_a_persona_still_pauses_and_resume_takes_one(state_db: Path) -> None:
    code, paused, _ = run_json(MODEL_ENSEMBLE, "--input", "a", "--no-input")
    assert code == exit_codes.PAUSED and paused["pause"]["step"] == "editor"
    code, out, err = flujo(["resume", paused["run_id"], "--answer", "Rain it is", "--answer", "Fine", "--json"])
    assert code == exit_codes.OK, err
    result = json.loads(out)
    assert result["output"]["title"] == "Fine"
    assert [a["source"] for a in result["answers"]] == ["given", "given"]


def test_an_invalid_simulated_answer_is_asked_again_in_an_ensemble(state_db: Path) -> None:
    blueprint = yaml.safe_load(Path(EXAMPLE).read_text(encoding="utf-8"))
    blueprint["agents"]["bea"]["replies"] = ["perhaps", "yes"]
    path = state_db.parent.parent / "review.yaml"
    path.write_text(yaml.safe_dump(blueprint), encoding="utf-8")
    code, result, err = run_json(str(path), "--input", "a poem", "--no-input")
    assert code == exit_codes.OK, err
    assert result["output"]["published"] == "true"
    kinds = [e for e in events(state_db, result["run_id"]) if e.kind in ("hitl.rejected", "agent.prompt")]
    rejected = [e.payload for e in kinds if e.kind == "hitl.rejected"]
    assert [(r["answer"], r["source"]) for r in rejected] == [("perhaps", "simulated")]
    again = [e.payload for e in kinds if e.kind == "agent.prompt" and e.payload.get("simulated_person")][1]
    assert (
        "(Your answer 'perhaps' was not accepted: 'perhaps' is not of type 'boolean'"
        in again["messages"][-1]["content"]
    )


def test_answered_by_replaces_a_script_agent_of_the_ensemble_file_format(
    state_db: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ensemble file format's way to test a conversation: ``answered_by`` on the script that stands for
    the person replaces it with a persona (defined under ``personas:``)."""
    folder = state_db.parent.parent / "adr"
    shutil.copytree(FILE_EXAMPLE, folder)
    monkeypatch.chdir(folder)
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    text = (folder / "ensemble.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "    script: primitives/user-interaction/get_clarification.py\n",
        "    script: primitives/user-interaction/get_clarification.py\n    answered_by: agents.analyst\n",
    )
    text += (
        "personas:\n  analyst:\n    model: scripted\n    system_prompt: You are the sales analyst.\n"
        '    replies: [\'{"clarification_provided": true, "clarification": "Euros per day."}\']\n'
    )
    (folder / "ensemble.yaml").write_text(text, encoding="utf-8")
    code, out, err = flujo(["validate", "ensemble.yaml"])
    assert code == exit_codes.OK, out + err
    fake_llm.reply({"needs_clarification": True, "question": "the units"})
    fake_llm.reply({"needs_clarification": False})
    final = {"needs_clarification": False, "final_analysis": "sales grow", "synthesis_complete": True}
    fake_llm.reply(final)
    fake_llm.reply(final)
    code, result, err = run_json("ensemble.yaml", "--input", "Q3 sales")
    assert code == exit_codes.OK, err
    state = result["output"]["final_state"]
    assert state["clarification"] == "Euros per day."  # the persona's answer, not the script's
    assert state["synthesis_complete"] is True  # its answer opened the synthesis, as the script's would
    assert [(a["path"], a["by"]) for a in result["answers"]] == [
        ("iterative-analysis/2/user_clarification", "agents.analyst")
    ]
    prompts = [e.payload for e in events(state_db, result["run_id"]) if e.payload.get("simulated_person")]
    sent = prompts[0]["messages"]
    assert sent[0] == {"role": "system", "content": "You are the sales analyst."}
    assert sent[-1]["role"] == "user" and sent[-1]["content"].startswith("llm_analyzer: ")  # asked the newest turn


def test_validate_reports_an_unknown_answered_by_on_a_participant(state_db: Path) -> None:
    text = Path(EXAMPLE).read_text(encoding="utf-8").replace("answered_by: agents.bea", "answered_by: agents.beaa")
    path = state_db.parent.parent / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, _ = flujo(["validate", str(path), "--json"])
    assert code == exit_codes.FAILED
    findings = json.loads(out)["findings"]
    wanted = "participant 'editor' is answered_by agent 'beaa', which is not defined — did you mean 'bea'?"
    found = [f for f in findings if f["message"] == wanted]
    assert (
        found
        and found[0]["line"]
        == text.splitlines().index(next(line for line in text.splitlines() if "agents.beaa" in line)) + 1
    )


def test_validate_in_the_ensemble_file_format_names_its_personas(state_db: Path) -> None:
    path = state_db.parent.parent / "team.yaml"
    path.write_text(
        "name: team\nagents:\n  - name: asker\n    script: ask.py\n    answered_by: agents.adaa\n"
        "personas:\n  ada: {model: echo}\n",
        encoding="utf-8",
    )
    code, out, _ = flujo(["validate", str(path), "--json"])
    assert code == exit_codes.FAILED
    messages = [f["message"] for f in json.loads(out)["findings"]]
    assert "participant 'asker' is answered_by agent 'adaa', which is not defined — did you mean 'ada'?" in messages


def test_explain_names_the_simulated_person(state_db: Path) -> None:
    code, out, err = flujo(["explain", EXAMPLE])
    assert code == exit_codes.OK, err
    flat = " ".join(out.split())
    assert "editor: A simulated person, agents.bea (asked: Publish it?)" in flat
    assert "review › editor, up to 1 time(s): Publish it? (answered by a simulated person, agents.bea)" in flat
    assert "bea: a scripted agent, offline; used by review › editor (to answer it)" in flat


def test_lens_marks_the_simulated_turn_of_an_ensemble(state_db: Path) -> None:
    code, result, _ = run_json(EXAMPLE, "--input", "a poem about rain", "--no-input")
    assert code == exit_codes.OK
    code, out, err = flujo(["lens", "trace", result["run_id"], "--expand", "all"])
    assert code == exit_codes.OK, err
    assert "editor  hitl" in out and "· simulated by agents.bea" in out
    assert "simulated person agents.bea" in out and "(simulated by agents.bea)" in out


def test_simulated_calls_in_an_ensemble_are_held_to_the_run_limits(llm: FakeLLM) -> None:
    code, result, _ = run_json(
        MODEL_ENSEMBLE, "--input", "a poem", "--simulate-user", "agents.persona", "--max-tokens", "15"
    )
    assert code == exit_codes.LIMIT
    assert result["status"] == "limit_reached" and "before calling 'editor'" in result["error"]
    assert llm.requests == []


def test_resume_replays_a_simulated_turn_with_its_usage(llm: FakeLLM) -> None:
    llm.reply("Call it Rain", usage=(30, 3))
    llm.fail(400, message="bad request")  # the persona's second call fails: the run fails after round 3
    code, failed, _ = run_json(MODEL_ENSEMBLE, "--input", "a poem", "--simulate-user", "agents.persona")
    assert code != exit_codes.OK and failed["status"] == "failed"
    llm.reply("Keep Soft rain", usage=(50, 3))
    code, out, err = flujo(["resume", failed["run_id"], "--simulate-user", "agents.persona", "--json"])
    assert code == exit_codes.OK, err
    result = json.loads(out)
    assert result["output"] == {"title": "Keep Soft rain", "rounds": 4}
    assert len(llm.requests) == 3  # round 2's answer was replayed from the journal, not asked again
    assert result["usage"]["input_tokens"] == 80  # and its call still counts in the run's usage
