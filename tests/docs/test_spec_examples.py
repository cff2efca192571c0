"""The loop examples of the specification documents, kept as they are written (tests/data/spec_examples/, each
file saying where it comes from), validate and run through the real CLI with ``--input`` and ``--answer``:
as written (steps without an agent pass their input through), and with agents given to their steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.conversation.summary import SUMMARY_REQUEST
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo
from tests.support.fakes.openai_server import FakeLLM

EXAMPLES = Path(__file__).parents[1] / "data" / "spec_examples"
AS_WRITTEN = ["guide_minimal", "guide_named_sources", "fsd033_dsl_additions", "fsd033_minimal", "fsd033_named_sources"]
# Enough answers for every question the runs ask: a loop without an agent that finishes runs its 10 iterations.
ANSWERS = [arg for number in range(1, 11) for arg in ("--answer", f"answer {number}")]


def validate(name: str, *flags: str) -> tuple[int, str]:
    code, _, err = flujo(["validate", str(EXAMPLES / f"{name}.yaml"), *flags])
    return code, " ".join(err.split())


def run(name: str, *flags: str) -> dict[str, object]:
    code, out, err = flujo(
        ["run", str(EXAMPLES / f"{name}.yaml"), "--input", "Plan a trip", *ANSWERS, "--json", *flags]
    )
    assert code == exit_codes.OK, err
    result: dict[str, object] = json.loads(out)
    assert result["status"] == "completed", result
    return result


def content_lines(name: str) -> list[str]:
    """The lines of a fixture after its opening comment."""
    lines = (EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if not line.startswith("#")]


@pytest.mark.parametrize("name", AS_WRITTEN)
def test_each_example_as_written_is_valid(name: str) -> None:
    code, err = validate(name)
    assert code == exit_codes.OK, err
    assert "error:" not in err
    assert "has no agent; it passes its input through" in err  # today's warning: the steps name no agent


@pytest.mark.parametrize("name", AS_WRITTEN)
def test_each_example_as_written_runs_with_input_and_answers(state_db: Path, name: str) -> None:
    run(name)


@pytest.mark.parametrize("name", [name for name in AS_WRITTEN if name != "guide_named_sources"])
def test_each_example_with_agents_is_valid_and_runs(state_db: Path, name: str) -> None:
    code, err = validate(f"{name}_agents")
    assert code == exit_codes.OK and "warning:" not in err, err
    run(f"{name}_agents")


@pytest.mark.parametrize("name", AS_WRITTEN)
def test_giving_the_steps_agents_only_adds_lines(name: str) -> None:
    """Every line of the example is in its variant with agents, in order: an agents: block and uses: lines
    are all that was added."""
    written, with_agents = content_lines(name), content_lines(f"{name}_agents")
    position = 0
    in_agents = False
    for line in with_agents:
        in_agents = line == "agents:" or (in_agents and line.startswith("  "))
        if position < len(written) and line == written[position]:
            position += 1
        else:  # an added line
            assert in_agents or line.strip().startswith("uses: agents."), line
    assert position == len(written), f"line {written[position]!r} of {name} is not in {name}_agents"


def test_the_guides_minimal_loop_and_its_step_share_a_name(state_db: Path) -> None:
    result = run("guide_minimal_agents")
    assert result["output"] == {"action": "finish"}
    code, out, err = flujo(["lens", "trace", str(result["run_id"]), "--step", "clarify/clarify", "--json"])
    assert code == exit_codes.OK, err
    assert '"clarify/1/clarify"' in out and '"clarify/2/clarify"' in out


def test_a_question_without_message_asks_what_was_said_last(state_db: Path) -> None:
    """The guide's hitl step without message: no assistant turn yet, so the default question; validate says
    which question it is (a note, not an error)."""
    code, err = validate("guide_named_sources")
    assert code == exit_codes.OK
    assert (
        "guide_named_sources.yaml:25:9: note: step 'ask_user' has no message: it asks what the assistant said last "
        "in the conversation (its newest assistant turn; \"Your answer for 'ask_user'?\" before it has spoken)"
    ) in err
    code, _, err = flujo(
        ["run", str(EXAMPLES / "fsd033_named_sources_agents.yaml"), "--input", "Plan a trip", *ANSWERS]
    )
    assert code == exit_codes.OK, err
    # clarify speaks first (a named step), so the question is what it said.
    assert "? Where to? (answered) answer 1" in err
    assert "? For how long? (answered) answer 2" in err


def test_the_guides_summarize_loop_is_summarized_by_its_last_speaking_agent(
    state_db: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No summarizer_agent and no history.summarizer_model: the planner (the loop's named speaker, a model
    on a loopback server) condenses the history with the built-in request."""
    for key, value in fake_llm.env().items():
        monkeypatch.setenv(key, value)
    code, err = validate("guide_named_sources_agents")
    assert code == exit_codes.OK, err
    code, out, err = flujo(["explain", str(EXAMPLES / "guide_named_sources_agents.yaml")])
    assert code == exit_codes.OK, err
    assert "planner (the loop's last speaking agent, with the built-in summary prompt) condenses" in " ".join(
        out.split()
    )
    fake_llm.reply("Plan: Lisbon, then Porto.")
    fake_llm.reply("A trip to Lisbon is being planned.")
    # Over two turns since the last summary, a summary is made (before clarify's call of iteration 2).
    result = run("guide_named_sources_agents", "--set", "history.max_turns=2")
    assert result["output"] == {"action": "finish"}
    planner_call, summary_call = fake_llm.bodies
    assert planner_call["model"] == summary_call["model"] == "planner-model"
    [request] = summary_call["messages"]  # no system prompt: the planner's own is not sent
    assert request["role"] == "user" and request["content"].startswith(SUMMARY_REQUEST)
    assert "user: Plan a trip\nuser: answer 1" in request["content"]
    code, trace, err = flujo(["lens", "trace", str(result["run_id"]), "--json"])
    assert code == exit_codes.OK, err
    assert "A trip to Lisbon is being planned." in trace
