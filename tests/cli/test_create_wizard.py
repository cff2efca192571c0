"""``flujo create`` through the real CLI: four scenarios written with no prompts and compared with
their golden files, each one validated and run offline to completion; the same answers typed at the
prompts give the same file; files are never replaced without --force; bad answers are refused.

Golden files: tests/golden/wizard/ (regenerate with FLUJO_UPDATE_GOLDEN=1, see tests/support/golden.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo
from tests.support.golden import GOLDEN, check_golden

_ANY: Any = object()


@dataclass(frozen=True)
class Scenario:
    """One wizard scenario: its flags, then how to run what it writes offline and what that returns."""

    flags: tuple[str, ...]
    answers: tuple[str, ...] = ()
    input: str | None = None
    output: Any = _ANY


CONVERSATION = (
    "User: Plan a trip\n"
    "Assistant: What matters most to you about it?\n"
    "User: The views\n"
    "Assistant: Is there anything to avoid, or a deadline?\n"
    "User: No flights\n"
    "Assistant: That is all I need. Thank you!"
)

SCENARIOS: dict[str, Scenario] = {
    # The defaults: a conversation that clarifies a goal, the person answering each question.
    "clarify": Scenario((), ("Plan a trip", "The views", "No flights"), output=CONVERSATION),
    # A person and two agents; only `ask` speaks as the assistant, `take_notes` works on the side.
    "named_assistant": Scenario(
        ("--purpose", "plan a trip", "--extra-agent", "take_notes", "--named-step", "ask",
         "--history", "truncate_turns", "--history-limit", "6"),
        ("Plan a trip", "The views", "No flights"),
        output=CONVERSATION,
    ),
    # The history is summarised once it is longer than 4 turns; the loop returns fields.
    "summarize": Scenario(
        ("--purpose", "practise sums", "--history", "summarize", "--history-limit", "4", "--returns", "fields"),
        ("sums", "4", "6"),
    ),
    # No person, no conversation: a draft is improved until the agent scores it 8 or more.
    "iterative": Scenario(
        ("--purpose", "write a haiku about rain", "--no-human", "--no-conversation", "--stop", "score"),
        input="a haiku about rain",
        output={"draft": "A good draft.", "score": 9},
    ),
}  # fmt: skip


@pytest.fixture
def workdir(state_db: Path) -> Path:
    """The test's folder (also the current directory), with its own run store."""
    return state_db.parent.parent


def _run(path: str, scenario: Scenario) -> dict[str, Any]:
    args = ["run", path, "--json", "--no-input"]
    if scenario.input is not None:
        args += ["--input", scenario.input]
    for answer in scenario.answers:
        args += ["--answer", answer]
    code, out, err = flujo(args)
    assert code == exit_codes.OK, f"{path} did not complete:\n{err}"
    result: dict[str, Any] = json.loads(out)
    assert result["status"] == "completed"
    return result


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_wizard_writes_the_golden_blueprint_which_validates_and_runs_offline(name: str, workdir: Path) -> None:
    scenario = SCENARIOS[name]
    code, _, err = flujo(["create", "--no-interactive", *scenario.flags, "--output", f"{name}.yaml"])
    assert code == exit_codes.OK, err
    assert f"✓ wrote {name}.yaml (valid)" in err
    assert f"flujo run {name}.yaml" in err and f"flujo explain {name}.yaml" in err
    check_golden(f"wizard/{name}.yaml", (workdir / f"{name}.yaml").read_text(encoding="utf-8"))

    code, out, _ = flujo(["validate", f"{name}.yaml", "--json"])
    report = json.loads(out)
    assert code == exit_codes.OK and report["errors"] == 0 and report["warnings"] == 0, report
    result = _run(f"{name}.yaml", scenario)
    if scenario.output is not _ANY:
        assert result["output"] == scenario.output


def test_named_assistant_steps_keep_the_other_agent_out_of_the_conversation(workdir: Path) -> None:
    flujo(["create", "--no-interactive", *SCENARIOS["named_assistant"].flags, "--output", "trip.yaml"])
    code, out, err = flujo(["run", "trip.yaml", "--no-input", "-a", "Plan a trip", "-a", "The views", "-a", "No"])
    assert code == exit_codes.OK, err
    assert "take_notes › take_notes: noted." in err  # it ran, after each answer ...
    assert "take_notes" not in out  # ... but it is not a turn of the conversation the loop returns


def test_a_summarising_history_is_condensed_by_the_summarizer_agent(workdir: Path) -> None:
    flujo(["create", "--no-interactive", *SCENARIOS["summarize"].flags, "--output", "sums.yaml"])
    result = _run("sums.yaml", SCENARIOS["summarize"])
    output = result["output"]
    assert output["goal"] == "sums"
    # The conversation is returned whole; the summary was sent in place of its oldest turns.
    assert output["conversation"].startswith("User: sums\n") and "User: 6" in output["conversation"]
    code, out, _ = flujo(["lens", "trace", result["run_id"], "--json"])
    assert code == exit_codes.OK
    assert "Summary of the earlier conversation: The person said" in out
    assert output["result"] == {"action": "finish", "summary": "That is all I need. Thank you!"}


@pytest.mark.parametrize("wizard", [[], ["--wizard"], ["--wizard", "--interactive"]], ids=" ".join)
def test_typed_answers_write_the_same_file_as_the_flags(wizard: list[str], workdir: Path) -> None:
    # purpose, name, human, conversation, history, limit, model, other agents, turn source, named steps,
    # stop, max rounds, start, first question, returns: Enter keeps a default. `--wizard` names what create
    # does anyway: the same questions, the same file.
    typed = ["plan a trip", "", "", "", "truncate_turns", "6", "", "take_notes", "", "", "", "", "", "", ""]
    code, _, err = flujo(["create", *wizard, "--output", "named_assistant.yaml"], input="\n".join(typed) + "\n")
    assert code == exit_codes.OK, err
    assert "? Which steps speak as the assistant (comma-separated)? (ask)" in err
    written = (workdir / "named_assistant.yaml").read_text(encoding="utf-8")
    assert written == (GOLDEN / "wizard" / "named_assistant.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("flags", [["--wizard", "--no-interactive"], ["--no-interactive", "--wizard"]], ids=" ".join)
def test_wizard_and_no_interactive_contradict_each_other(flags: list[str], workdir: Path) -> None:
    code, out, err = flujo(["create", *flags, "--output", "x.yaml"], input="plan a trip\n")
    assert code == exit_codes.USAGE and out == ""
    assert err.splitlines()[0] == (
        "error: --wizard and --no-interactive contradict each other: --wizard asks the questions,"
        " --no-interactive asks none"
    )
    assert "?" not in err and not (workdir / "x.yaml").exists()  # no question asked, nothing written


def test_the_help_and_the_docs_name_create_wizard() -> None:
    code, out, _ = flujo(["create", "--help"])
    assert code == exit_codes.OK and "--wizard" in out
    for page in ("README.md", "docs/cli.md", "docs/create-and-explain.md"):
        assert "flujo create --wizard" in (ROOT / page).read_text(encoding="utf-8"), page
    assert "no longer takes `--wizard`" not in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_a_flag_answers_its_question_and_the_rest_are_asked(workdir: Path) -> None:
    typed = ["", "", "", "", "", "", "", "", "", "", "", ""]  # every question but the flagged ones
    code, _, err = flujo(
        ["create", "--purpose", "plan a trip", "--no-human", "--output", "x.yaml"], input="\n".join(typed) + "\n"
    )
    assert code == exit_codes.OK, err
    assert "What is the loop for" not in err and "Does a person answer" not in err
    assert "? Name of the blueprint (plan_a_trip)" in err


def test_an_answer_that_does_not_fit_is_asked_again(workdir: Path) -> None:
    typed = ["plan a trip", "plan a trip!", "trip", "maybe", "no", "", "", "", "", "", "", "", "", ""]
    code, _, err = flujo(["create", "--output", "trip.yaml", "--no-conversation"], input="\n".join(typed) + "\n")
    assert code == exit_codes.OK, err
    assert "✗ 'plan a trip!' is not a name" in err and "✗ answer yes or no" in err
    assert "name: trip" in (workdir / "trip.yaml").read_text(encoding="utf-8")


def test_a_history_limit_past_its_range_is_asked_again(workdir: Path) -> None:
    typed = ["plan a trip", "trip", "no", "yes", "truncate_turns", str(10**30), "0", "6", *[""] * 8]
    code, _, err = flujo(["create", "--output", "trip.yaml"], input="\n".join(typed) + "\n")
    assert code == exit_codes.OK, err
    assert err.count("✗ give a whole number from 1 to 1,000,000,000 (the turns of history sent") == 2
    assert "max_turns: 6" in (workdir / "trip.yaml").read_text(encoding="utf-8")


def test_stdin_ending_before_the_last_question_writes_nothing(workdir: Path) -> None:
    code, _, err = flujo(["create", "--output", "half.yaml"], input="plan a trip\n")
    assert code == exit_codes.USAGE
    assert "no more answers (stdin ended): nothing was written" in err
    assert not (workdir / "half.yaml").exists()


def test_an_existing_file_is_not_replaced_without_force(workdir: Path) -> None:
    target = workdir / "mine.yaml"
    target.write_text("# my own work\n", encoding="utf-8")
    code, out, err = flujo(["create", "--no-interactive", "--output", "mine.yaml"])
    assert code == exit_codes.USAGE and out == ""
    assert "mine.yaml already exists; flujo create does not replace a file without --force" in err
    assert target.read_text(encoding="utf-8") == "# my own work\n"
    code, _, err = flujo(["create", "--no-interactive", "--name", "mine"])  # the default file: NAME.yaml
    assert code == exit_codes.USAGE and "already exists" in err
    code, _, err = flujo(["create", "--no-interactive", "--output", "mine.yaml", "--force"])
    assert code == exit_codes.OK, err
    assert target.read_text(encoding="utf-8").startswith("# mine.yaml — a loop to clarify a goal.")


def test_the_name_offered_is_one_whose_file_is_free(workdir: Path) -> None:
    # The default name's file exists: Enter must not take a name that is then refused, again and again.
    (workdir / "plan_a_trip.yaml").write_text("# mine\n", encoding="utf-8")
    (workdir / "plan_a_trip_2.yaml").write_text("# mine too\n", encoding="utf-8")
    typed = ["", "", "", "", "", "", "", "", "", "", "", ""]
    code, _, err = flujo(["create", "--purpose", "plan a trip", "--no-human"], input="\n".join(typed) + "\n")
    assert code == exit_codes.OK, err
    assert "? Name of the blueprint (plan_a_trip_3)" in err and "already exists" not in err
    assert "name: plan_a_trip_3" in (workdir / "plan_a_trip_3.yaml").read_text(encoding="utf-8")
    assert (workdir / "plan_a_trip.yaml").read_text(encoding="utf-8") == "# mine\n"


def test_the_default_file_is_named_after_the_blueprint(workdir: Path) -> None:
    code, _, err = flujo(["create", "--no-interactive", "--purpose", "Plan a Trip to Lima!"])
    assert code == exit_codes.OK, err
    assert (workdir / "plan_a_trip_to_lima.yaml").is_file()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--score", "9"], "--score does not apply here: it needs --stop score"),
        (["--stop", "score"], "score is for a loop without a person answering (--no-human)"),
        (["--history", "summarize", "--no-conversation"], "--history does not apply here: it needs a conversation"),
        (["--model", "gpt-4o"], "'gpt-4o' is not a model: use scripted (offline) or provider:model"),
        (["--max-cost-usd", "1"], "--max-cost-usd does not apply here: it needs a real model (--model)"),
        (["--name", "my blueprint"], "'my blueprint' is not a name"),
        (["--extra-agent", "answer"], "'answer' is taken by the blueprint the wizard writes"),
        (["--extra-agent", "notes", "--named-step", "nots"], "nots is not an agent step of the loop"),
        (["--stop", "expression"], "--exit-expression: give the expression, e.g. iteration >= 3"),
        (["--stop", "expression", "--exit-expression", "iteration >="], "the expression does not compile"),
        (["--no-conversation", "--returns", "conversation"], "conversation needs a conversation (--conversation)"),
        (["--output", "nowhere/x.yaml"], "the folder nowhere does not exist"),
        (["--max-loops", "0"], "--max-loops: give a whole number from 1 to 1,000,000"),
        (["--max-loops", "1000001"], "--max-loops: give a whole number from 1 to 1,000,000 (the rounds a loop may"),
        (["--max-loops", "99999999999"], "--max-loops: give a whole number from 1 to 1,000,000"),
        (["--history-limit", "0"], "--history-limit: give a whole number from 1 to 1,000,000,000 (the tokens of"),
        (["--history-limit", str(10**30)], "--history-limit: give a whole number from 1 to 1,000,000,000"),
        (["--history", "truncate_turns", "--history-limit", "-3"], "1 to 1,000,000,000 (the turns of history sent"),
        (["--history", "summarize", "--history-limit", "1000000001"], "1,000,000,000 (the turns kept before"),
        (
            ["--model", "openai:gpt-4o-mini", "--max-tokens", str(10**30)],
            "--max-tokens: give a whole number from 1 to 1,000,000,000 (the tokens a run may use: limits.max_tokens)",
        ),
        (["--model", "openai:gpt-4o-mini", "--max-tokens", "-5"], "--max-tokens: give a whole number from 1 to"),
    ],
)
def test_answers_that_cannot_make_a_working_blueprint_are_refused(
    flags: list[str], message: str, workdir: Path
) -> None:
    code, out, err = flujo(["create", "--no-interactive", *flags])
    assert code == exit_codes.USAGE, err
    assert message in err and out == ""
    assert list(workdir.glob("*.yaml")) == []


def test_a_real_model_gets_no_scripted_replies_and_the_limits_asked_for(workdir: Path) -> None:
    code, _, err = flujo(
        ["create", "--no-interactive", "--model", "openai:gpt-4o-mini", "--max-cost-usd", "0.5", "--output", "r.yaml"]
    )
    assert code == exit_codes.OK, err
    text = (workdir / "r.yaml").read_text(encoding="utf-8")
    assert "model: openai:gpt-4o-mini" in text and "replies:" not in text
    assert "limits: {max_cost_usd: 0.5}" in text and "# Needs OPENAI_API_KEY" in text


@pytest.mark.parametrize(
    ("example", "flags"),
    [
        ("create_clarify", ()),
        (
            "create_refine",
            ("--purpose", "write a haiku about rain", "--no-human", "--no-conversation", "--stop", "score"),
        ),
    ],
)
def test_the_documented_wizard_blueprints_are_what_it_writes(
    example: str, flags: tuple[str, ...], workdir: Path
) -> None:
    (workdir / "docs" / "examples").mkdir(parents=True)  # the same relative path, so the same header
    code, _, err = flujo(["create", "--no-interactive", *flags, "--output", f"docs/examples/{example}.yaml"])
    assert code == exit_codes.OK, err
    written = (workdir / "docs" / "examples" / f"{example}.yaml").read_text(encoding="utf-8")
    assert written == (ROOT / "docs" / "examples" / f"{example}.yaml").read_text(encoding="utf-8")


def test_the_golden_blueprints_are_the_scenarios() -> None:
    assert sorted(path.stem for path in (GOLDEN / "wizard").glob("*.yaml")) == sorted(SCENARIOS)
    assert ROOT.joinpath("tests", "golden", "README.md").is_file()


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("/dev/full", "/dev/full is a device; give a file name with --output"),
        ("/proc/version", "cannot write /proc/version: "),
    ],
)
def test_a_file_that_cannot_be_written_is_a_usage_error(workdir: Path, output: str, message: str) -> None:
    if not Path(output).exists():
        pytest.skip(f"needs {output}")
    code, out, err = flujo(["create", "--no-interactive", "--output", output, "--force"])
    assert code == exit_codes.USAGE, err
    assert err.startswith(f"error: {message}") and out == "", err
    assert "unexpected" not in err


@pytest.mark.parametrize(
    ("output", "hint"),
    [
        (".", "hint: choose another --output (or --name)\n"),
        ("nowhere/x.yaml", "hint: choose another --output (or --name), or create the folder first\n"),
    ],
)
def test_force_is_offered_only_where_it_would_help(workdir: Path, output: str, hint: str) -> None:
    # --force replaces a file; it cannot write over a folder or into one that does not exist, so the hint
    # to a user who already gave --force must not send them back to it.
    for force in ([], ["--force"]):
        code, out, err = flujo(["create", "--no-interactive", "--output", output, *force])
        assert code == exit_codes.USAGE and out == "", err
        assert err.endswith(hint) and "--force" not in err.splitlines()[-1], err


def test_a_spending_limit_is_asked_for_a_priced_model_not_for_the_model_on_this_machine(workdir: Path) -> None:
    code, _, err = flujo(
        ["create", "--purpose", "plan a trip", "--model", "local", "--output", "l.yaml"], input="\n" * 20
    )
    assert code == exit_codes.OK, err
    assert "costs more than" not in err and "max_cost_usd" not in (workdir / "l.yaml").read_text(encoding="utf-8")
    typed = "\n" * 11 + "0.5\n"
    code, _, err = flujo(
        ["create", "--purpose", "plan a trip", "--model", "openai:gpt-4o-mini", "--output", "o.yaml"], input=typed
    )
    assert code == exit_codes.OK, err
    assert "? Stop a run before it costs more than" in err
    assert "max_cost_usd: 0.5" in (workdir / "o.yaml").read_text(encoding="utf-8")
    code, _, err = flujo(
        [
            "create",
            "--no-interactive",
            "--purpose",
            "plan",
            "--model",
            "local",
            "--max-cost-usd",
            "1",
            "--output",
            "f.yaml",
        ]
    )
    assert code == exit_codes.OK, err  # the flag still sets it
