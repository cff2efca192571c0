"""``flujo test`` through the real CLI: runs recorded offline (and against a loopback OpenAI-compatible server),
exported as case files, replayed against their blueprints as they are now. Passed, diverged (with the step
path and the diff) and failed (file:line:col) cases, the exit codes, the JUnit XML report as a CI server reads
it, each kind of expectation holding and not, and the workflow the docs describe: accept a new recording."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from flujo_cli import exit_codes
from tests.support.case_files import (
    export,
    flujo_test,
    flujo_test_json,
    record_trip,
    tool_calls,
    with_expectations,
    write_trip,
)
from tests.support.cli_helpers import ROOT, flujo, wait_until
from tests.support.fakes.openai_server import FakeLLM

SYSTEM_PROMPT = "Ask one question at a time; reply {action: finish} when the goal is clear."
CHANGED_PROMPT = "Ask one short question at a time; reply {action: finish} when the goal is clear."


@pytest.fixture
def trip_case(tmp_path: Path, state_db: Path) -> Path:
    """A recorded trip (a conversation, then a tool-using agent) exported as tests/trip.case.yaml."""
    case = tmp_path / "tests" / "trip.case.yaml"
    export(record_trip(write_trip(tmp_path)), case)
    return case


def change(blueprint: Path, old: str, new: str) -> None:
    text = blueprint.read_text(encoding="utf-8")
    assert old in text
    blueprint.write_text(text.replace(old, new), encoding="utf-8")


def test_an_unchanged_blueprint_passes_with_every_call_served(trip_case: Path, tmp_path: Path) -> None:
    made = tool_calls()
    code, out, err = flujo_test()  # the current folder, searched
    assert code == exit_codes.OK, out + err
    lines = out.splitlines()
    assert lines[0] == "passed   tests/trip.case.yaml"
    assert lines[-1].startswith("1 case(s): 1 passed (") and lines[-1].endswith("s)")
    code, document = flujo_test_json(str(trip_case))
    assert code == exit_codes.OK
    [result] = document["cases"]
    assert result["status"] == "passed" and result["digest_changed"] is False
    assert result["replay"]["clean"] is True
    assert result["replay"]["replayed_calls"] == result["replay"]["recorded_calls"] == 6
    assert result["replay"]["replayed_answers"] == 2
    assert document["summary"] | {"seconds": 0} == {"cases": 1, "passed": 1, "diverged": 0, "failed": 0, "seconds": 0}
    assert tool_calls() == made  # the tool's call was served: it did not run again
    code, out, _ = flujo(["lens", "show", result["run_id"], "--json"])  # the replayed run is in the store
    assert code == exit_codes.OK and json.loads(out)["run"]["status"] == "completed"


def test_a_changed_system_prompt_diverges_at_its_step_with_the_diff(trip_case: Path, tmp_path: Path) -> None:
    change(tmp_path / "trip.yaml", SYSTEM_PROMPT, CHANGED_PROMPT)
    code, out, _ = flujo_test(str(trip_case))
    assert code == exit_codes.FAILED
    lines = out.splitlines()
    assert lines[0] == (
        f"diverged {trip_case} at clarification_loop/1/clarify: the prompt differs from the recorded one"
        " · the blueprint changed since it was recorded"
    )
    assert lines[1:6] == [
        "  --- recorded clarification_loop/1/clarify",
        "  +++ new clarification_loop/1/clarify",
        "  @@ -1,4 +1,4 @@",
        "   [1] system",
        f"  -    {SYSTEM_PROMPT}",
    ]
    assert f"  +    {CHANGED_PROMPT}" in lines
    assert lines[-1].startswith("1 case(s): 0 passed, 1 diverged (")
    code, document = flujo_test_json(str(trip_case))
    [result] = document["cases"]
    assert (result["status"], result["step"], result["digest_changed"]) == (
        "diverged",
        "clarification_loop/1/clarify",
        True,
    )
    assert f"-    {SYSTEM_PROMPT}\n+    {CHANGED_PROMPT}" in result["diff"]


def test_a_later_step_diverges_where_it_changed(trip_case: Path, tmp_path: Path) -> None:
    change(tmp_path / "trip.yaml", "Count the travellers with the add tool.", "Count the people with the add tool.")
    code, document = flujo_test_json(str(trip_case))
    assert code == exit_codes.FAILED
    [result] = document["cases"]
    assert result["step"] == "count/model/1"
    assert result["replay"]["replayed_calls"] == 3  # the conversation's calls were served first


def test_a_new_step_diverges_where_the_recording_has_no_call(trip_case: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "trip.yaml"
    blueprint.write_text(
        blueprint.read_text(encoding="utf-8")
        + "  - kind: step\n    name: shout\n    agent: {id: flujo.builtins.stringify}\n"
        + '    input: "{{ previous_step | upper }}"\n',
        encoding="utf-8",
    )
    code, document = flujo_test_json(str(trip_case))
    [result] = document["cases"]
    assert code == exit_codes.FAILED
    assert (result["status"], result["step"]) == ("diverged", "shout")
    assert result["reason"] == "the recording has no agent call here"


def test_a_removed_step_diverges_at_the_call_it_no_longer_makes(trip_case: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "trip.yaml"
    text = blueprint.read_text(encoding="utf-8")
    blueprint.write_text(text[: text.index("  - kind: step\n    name: count")], encoding="utf-8")
    code, document = flujo_test_json(str(trip_case))
    [result] = document["cases"]
    assert code == exit_codes.FAILED
    assert (result["status"], result["step"]) == ("diverged", "count/model/1")
    assert result["reason"] == "the run ended without making 3 recorded call(s)"


DRAFT = """\
version: "0.1"
agents:
  writer: {model: scripted, system_prompt: "Write.", replies: ["Rain"]}
steps:
  - kind: loop
    name: draft
    loop:
      max_loops: 1
      body:
        - {kind: step, name: write, uses: agents.writer}
      output_template: "{{ previous_step }}!"
"""


def test_an_output_that_changed_with_every_call_the_same_diverges_at_output(tmp_path: Path, state_db: Path) -> None:
    blueprint = tmp_path / "draft.yaml"
    blueprint.write_text(DRAFT, encoding="utf-8")
    case = tmp_path / "draft.case.yaml"
    code, out, err = flujo(["run", str(blueprint), "--json"])
    assert code == exit_codes.OK, err
    export(json.loads(out)["run_id"], case)
    blueprint.write_text(DRAFT.replace("}}!", "}}?"), encoding="utf-8")  # not a call: what the loop outputs
    code, out, _ = flujo_test(str(case))
    assert code == exit_codes.FAILED
    assert out.splitlines()[:6] == [
        f"diverged {case} at output: the final output differs from the recorded one"
        " · the blueprint changed since it was recorded",
        "  --- recorded output",
        "  +++ new output",
        "  @@ -1 +1 @@",
        "  -Rain!",
        "  +Rain?",
    ]


def test_a_changed_digest_alone_passes_and_is_shown(trip_case: Path, tmp_path: Path) -> None:
    change(tmp_path / "trip.yaml", "name: trip\n", "name: trip   # a comment changes the digest, not a call\n")
    code, out, _ = flujo_test(str(trip_case))
    assert code == exit_codes.OK
    assert out.splitlines()[0] == f"passed   {trip_case} · the blueprint changed since it was recorded"


def test_a_run_against_a_model_server_replays_with_no_request_and_no_key(
    fake_llm: FakeLLM, tmp_path: Path, state_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's tool call and the tool's result are served; the server gets no request and the replay needs
    neither its URL nor an API key (an agent whose key is missing is built all the same)."""
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    blueprint = write_trip(tmp_path, SERVER_TRIP)
    fake_llm.reply("", tool_calls=[("add", {"a": 2, "b": 2})]).reply("4 travellers.")
    export(record_trip(blueprint, input="Plan a trip for 4"), tmp_path / "server.case.yaml")
    recorded = len(fake_llm.requests)
    assert recorded == 2 and tool_calls() == ["add 2 2"]
    for name in fake_llm.env():
        monkeypatch.delenv(name)
    code, out, err = flujo_test(str(tmp_path / "server.case.yaml"))
    assert code == exit_codes.OK, out + err
    assert len(fake_llm.requests) == recorded  # zero requests replaying
    assert tool_calls() == ["add 2 2"]  # and the tool did not run
    change(blueprint, "Count the travellers.", "Count everyone.")  # now it would need the model: and a key
    with_expectations(tmp_path / "server.case.yaml", "expect:\n  output_contains: travellers\n")
    code, document = flujo_test_json(str(tmp_path / "server.case.yaml"))
    [result] = document["cases"]
    assert code == exit_codes.FAILED and result["status"] == "failed"
    assert (result["step"], result["live_from"]) == ("count", "count/model/1")
    assert result["reason"] == "agents.counter uses openai:gpt-4o-mini but OPENAI_API_KEY is not set"
    assert len(fake_llm.requests) == recorded


SERVER_TRIP = """\
version: "0.1"
tools:
  add: {python: "case_tools:add"}
agents:
  counter:
    model: openai:gpt-4o-mini
    system_prompt: "Count the travellers."
    tools: [add]
steps:
  - {kind: step, name: count, uses: agents.counter}
"""


def test_the_junit_report_is_what_ci_servers_read(trip_case: Path, tmp_path: Path) -> None:
    export(record_trip(write_trip(tmp_path / "other")), tmp_path / "tests" / "other.case.yaml")
    broken = tmp_path / "tests" / "nested" / "broken.case.yaml"
    broken.parent.mkdir()
    broken.write_text("flujo_case: 1\nblueprint: [unclosed\n", encoding="utf-8")
    change(tmp_path / "trip.yaml", SYSTEM_PROMPT, CHANGED_PROMPT)
    report = tmp_path / "reports" / "flujo.xml"
    code, _, _ = flujo_test("tests", "--junit", str(report))
    assert code == exit_codes.FAILED
    root = ElementTree.parse(report).getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    assert {key: suite.get(key) for key in ("name", "tests", "failures", "errors", "skipped")} == {
        "name": "flujo test", "tests": "3", "failures": "1", "errors": "1", "skipped": "0",
    }  # fmt: skip
    assert float(suite.get("time") or "x") >= 0
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert set(cases) == {"tests/trip.case.yaml", "tests/other.case.yaml", "tests/nested/broken.case.yaml"}
    assert cases["tests/nested/broken.case.yaml"].get("classname") == "tests.nested"
    assert all(float(case.get("time") or "x") >= 0 for case in cases.values())
    assert list(cases["tests/other.case.yaml"]) == []  # passed: no child element
    [failure] = cases["tests/trip.case.yaml"]
    assert failure.tag == "failure" and failure.get("type") == "diverged"
    assert failure.get("message") == (
        "diverged tests/trip.case.yaml at clarification_loop/1/clarify: the prompt differs from the recorded one"
    )
    assert f"-    {SYSTEM_PROMPT}\n+    {CHANGED_PROMPT}" in (failure.text or "")
    [error] = cases["tests/nested/broken.case.yaml"]
    assert error.tag == "error" and (error.get("message") or "").startswith(
        "failed tests/nested/broken.case.yaml:3:1: YAML syntax error"
    )


def test_a_junit_file_that_cannot_be_written_is_said(trip_case: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a folder", encoding="utf-8")
    code, out, err = flujo_test(str(trip_case), "--junit", str(tmp_path / "taken" / "flujo.xml"))
    assert code == exit_codes.USAGE
    assert out.splitlines()[0] == f"passed   {trip_case}"  # the cases were replayed and said all the same
    assert err.splitlines()[0].startswith(f"error: cannot write --junit {tmp_path / 'taken' / 'flujo.xml'}: ")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "flujo_case: 1\nblueprint: trip.yaml\ninput: [oops\nrecording: {}\n",
            "case.case.yaml:4:10: YAML syntax error: expected ',' or ']', but got ':' (while parsing a flow sequence)",
        ),
        ("blueprint: trip.yaml\n", "case.case.yaml:1:1: not a case file: it has no flujo_case: key"),
        ("flujo_case: 2\nblueprint: trip.yaml\n", "case.case.yaml:1:13: this case file is of format 2;"),
        (
            "flujo_case: 1\nblueprint: trip.yaml\nrecordings: {}\n",
            "case.case.yaml:3:1: unknown key 'recordings' in a case file — did you mean 'recording'?",
        ),
        (
            "flujo_case: 1\nblueprint: trip.yaml\nexpect:\n  max_turn: 3\n",
            "case.case.yaml:4:3: unknown expectation 'max_turn' — did you mean 'max_turns'?",
        ),
        (
            "flujo_case: 1\nblueprint: trip.yaml\nexpect:\n  output_schema: {type: 12}\n",
            "case.case.yaml:4:25: output_schema is not a valid JSON Schema: 12 is not valid under any of the given"
            " schemas (at type)",
        ),
        (
            "flujo_case: 1\nblueprint: trip.yaml\nrecording:\n  calls: [{path: a}]\n",
            "case.case.yaml:4:3: recording: a recorded call needs a text 'path' and a 'kind' of agent or tool",
        ),
        (
            "flujo_case: 1\nblueprint: elsewhere/trip.yaml\nrecording: {}\n",
            "case.case.yaml:2:12: the blueprint elsewhere/trip.yaml is not there (looked for elsewhere/trip.yaml)",
        ),
    ],
)
def test_a_broken_case_fails_at_its_file_line_and_column(text: str, said: str, tmp_path: Path, state_db: Path) -> None:
    write_trip(tmp_path)
    (tmp_path / "case.case.yaml").write_text(text, encoding="utf-8")
    code, out, _ = flujo_test()
    assert code == exit_codes.FAILED
    assert out.splitlines()[0].startswith(f"failed   {said}"), out
    assert out.splitlines()[-1].startswith("1 case(s): 0 passed, 1 failed (")


def test_a_blueprint_with_errors_fails_the_case_at_its_place(trip_case: Path, tmp_path: Path) -> None:
    change(tmp_path / "trip.yaml", "uses: agents.counter", "uses: agents.counterr")
    code, document = flujo_test_json(str(trip_case))
    [result] = document["cases"]
    assert code == exit_codes.FAILED and result["status"] == "failed"
    assert result["place"].endswith("trip.yaml:38:11")
    assert "counterr" in result["reason"]


def test_bad_paths_are_a_usage_error(tmp_path: Path, state_db: Path) -> None:
    code, out, err = flujo_test("no/such/place")
    assert (code, out) == (exit_codes.USAGE, "")
    assert err.splitlines()[0] == "error: no such file or folder: no/such/place"
    (tmp_path / "empty").mkdir()
    code, _, err = flujo_test("empty")
    assert code == exit_codes.USAGE
    assert err.splitlines() == [
        "error: no case file (*.case.yaml) in empty",
        "hint: write one from a completed run with: flujo lens export RUN --case tests/cases/NAME.case.yaml",
    ]
    assert not state_db.exists()  # nothing was replayed, nothing stored


def test_folders_are_searched_at_any_depth_but_not_in_tool_folders(trip_case: Path, tmp_path: Path) -> None:
    deep = tmp_path / "tests" / "a" / "b" / "deep.case.yaml"
    deep.parent.mkdir(parents=True)
    deep.write_text(trip_case.read_text(encoding="utf-8").replace("blueprint: ../", "blueprint: ../../../"))
    for skipped in (".git", ".flujo", ".venv", "node_modules"):
        (tmp_path / skipped).mkdir(exist_ok=True)
        (tmp_path / skipped / "x.case.yaml").write_text("not a case", encoding="utf-8")
    (tmp_path / "given.yaml").write_text(trip_case.read_text(encoding="utf-8").replace("../", ""))
    code, document = flujo_test_json(".", "given.yaml", "--jobs", "2")
    assert code == exit_codes.OK, document
    assert [case["case"] for case in document["cases"]] == [
        "tests/trip.case.yaml",
        "tests/a/b/deep.case.yaml",
        "given.yaml",  # a file given is a case whatever its name
    ]
    code, document = flujo_test_json("tests", "tests/trip.case.yaml")
    assert [case["case"] for case in document["cases"]] == ["tests/trip.case.yaml", "tests/a/b/deep.case.yaml"]


@pytest.mark.parametrize(
    ("expectation", "problem"),
    [
        ("output_schema: {type: string, pattern: travellers}", None),
        (
            "output_schema: {type: object}",
            "the output does not match the schema: '4 travellers, in June' is not of type 'object'",
        ),
        ("output_contains: [travellers, June]", None),
        ("output_contains: Paris", "the output does not contain 'Paris': 4 travellers, in June"),
        ("max_turns: 3", None),
        ("max_turns: 2", "clarification_loop took 3 turns"),
        ("asked: [answer, clarification_loop/answer, clarification_loop/2/answer]", None),
        ("asked: confirm", "no question at confirm (asked: clarification_loop/1/answer, clarification_loop/2/answer)"),
        ("tools_called: [add]", None),
        ("tools_called: multiply", "the models never called multiply (called: add)"),
        ("tools_not_called: [multiply]", None),
        ("tools_not_called: add", "add was called at count/tool/1"),
    ],
)
def test_each_expectation_holds_or_says_what_the_run_did(
    expectation: str, problem: str | None, trip_case: Path
) -> None:
    with_expectations(trip_case, f"expect:\n  {expectation}\n")
    code, document = flujo_test_json(str(trip_case))
    [result] = document["cases"]
    assert [check["problem"] for check in result["expectations"]] == [problem] * len(result["expectations"])
    assert (code, result["status"]) == (
        (exit_codes.OK, "passed") if problem is None else (exit_codes.FAILED, "diverged")
    )
    assert result["live_from"] is None  # nothing differed: every call was served


def test_expectations_hold_when_a_prompt_changed_and_the_replay_went_live(trip_case: Path, tmp_path: Path) -> None:
    with_expectations(trip_case, "expect:\n  output_contains: travellers\n  tools_called: [add]\n  max_turns: 3\n")
    change(tmp_path / "trip.yaml", "Count the travellers with the add tool.", "Count everyone with the add tool.")
    code, out, err = flujo_test(str(trip_case))
    assert code == exit_codes.OK, out + err
    assert out.splitlines()[0] == (
        f"passed   {trip_case} · live from count/model/1 · the blueprint changed since it was recorded"
    )
    assert tool_calls() == ["add 2 2", "add 2 2"]  # live from there on: the tool ran again
    change(tmp_path / "trip.yaml", "4 travellers, in June", "four people")
    code, out, _ = flujo_test(str(trip_case))
    assert code == exit_codes.FAILED
    assert out.splitlines()[:3] == [
        f"diverged {trip_case}: 1 of 3 expectation(s) not met · live from count/model/1"
        " · the blueprint changed since it was recorded",
        "  expected output_contains: travellers: the output does not contain 'travellers': four people",
        f"  replayed run: {newest_run()} (flujo lens show {newest_run()})",
    ]


def newest_run() -> str:
    code, out, err = flujo(["lens", "list", "--json", "--limit", "1"])
    assert code == exit_codes.OK, err
    return str(json.loads(out)["runs"][0]["run_id"])


def test_a_question_the_recording_has_no_answer_for_diverges(trip_case: Path, tmp_path: Path) -> None:
    change(
        tmp_path / "trip.yaml",
        '"{{ steps.clarify.output.question }}"',
        '"{{ steps.clarify.output.question }} (be brief)"',
    )
    code, document = flujo_test_json(str(trip_case))
    [result] = document["cases"]
    assert code == exit_codes.FAILED
    assert (result["status"], result["step"]) == ("diverged", "clarification_loop/1/answer")
    assert result["reason"] == "the question differs from the recorded one"
    with_expectations(trip_case, "expect:\n  max_turns: 3\n")  # live: asked, and nobody answers in flujo test
    code, document = flujo_test_json(str(trip_case))
    [result] = document["cases"]
    assert (result["status"], result["step"], result["hint"]) == (
        "diverged", "clarification_loop/1/answer", "nobody answers in flujo test",
    )  # fmt: skip
    assert result["reason"].startswith("the run asked a question the recording has no answer for: Who is it for?")


def test_a_new_recording_is_accepted_by_exporting_its_run_over_the_case(trip_case: Path, tmp_path: Path) -> None:
    """The docs' workflow: a prompt changed on purpose; replay the recorded run live from where it diverges,
    then export that run over the case file: the case passes again, its expect: block kept."""
    with_expectations(trip_case, "expect:\n  tools_called: [add]\n")
    recorded = str(yaml_value(trip_case, "recording")["run_id"])
    change(tmp_path / "trip.yaml", "Count the travellers with the add tool.", "Count everyone with the add tool.")
    code, out, err = flujo(
        ["run", str(tmp_path / "trip.yaml"), "--replay", recorded, "--on-divergence", "live", "--json"]
    )
    assert code == exit_codes.OK, err
    accepted = json.loads(out)
    assert accepted["replay"]["diverged"][0]["path"] == "count/model/1"
    export(accepted["run_id"], trip_case)
    assert "expect:\n  tools_called: [add]\n" in trip_case.read_text(encoding="utf-8")
    trip_case.write_text(trip_case.read_text(encoding="utf-8").replace("expect:\n  tools_called: [add]\n", ""))
    code, out, err = flujo_test(str(trip_case))
    assert code == exit_codes.OK, out + err
    assert out.splitlines()[0] == f"passed   {trip_case}"


def yaml_value(case: Path, key: str) -> Any:
    import yaml

    return yaml.safe_load(case.read_text(encoding="utf-8"))[key]


def test_the_documented_cases_pass(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, document = flujo_test_json("docs/examples/cases")
    assert code == exit_codes.OK, document
    assert {case["case"]: case["live_from"] for case in document["cases"]} == {
        "docs/examples/cases/persona.case.yaml": None,  # served throughout
        "docs/examples/cases/persona_expect.case.yaml": "guests",  # no recording: live from the first call
    }


@pytest.mark.parametrize(
    ("example", "args"),
    [
        ("docs/examples/ensemble.yaml", ("--input", "a poem about rain", "--answer", "yes")),
        ("docs/examples/subworkflow.yaml", ("--input", "tea", "--answer", "yes")),
        ("docs/examples/map.yaml", ("--input", '["milk", "rice", "bread"]')),
        ("docs/examples/conditional.yaml", ("--input", "URGENT: the site is down")),
        ("blueprints/examples/parallel.yaml", ("--input", "My draft")),
        ("docs/examples/tools.yaml", ("--input", "What is (2 + 3) * 4?", "--answer", "y")),
        ("docs/examples/conversation_summarize.yaml", ("--input", "Practice sums", "-a", "4", "-a", "6", "-a", "8")),
        ("docs/examples/persona_conversation.yaml", ("--input", "Plan a trip")),
    ],
)
def test_every_kind_of_step_replays_from_its_case(
    example: str, args: tuple[str, ...], tmp_path: Path, state_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ensemble, a sub-workflow, a map, a conditional, parallel branches, a tool-using agent, a summarized
    conversation, a simulated person: recorded, exported, replayed with every call served."""
    monkeypatch.chdir(ROOT)
    code, out, err = flujo(["run", example, "--json", "--no-input", *args])
    assert code == exit_codes.OK, err
    case = tmp_path / "example.case.yaml"
    export(json.loads(out)["run_id"], case)
    code, document = flujo_test_json(str(case))
    [result] = document["cases"]
    assert (code, result["status"]) == (exit_codes.OK, "passed"), result
    assert result["replay"]["replayed_calls"] == result["replay"]["recorded_calls"] > 0


# A case that passes at once, and one whose command agent waits for the file "go" (so Ctrl-C lands in it).
QUICK = """\
version: "0.1"
steps:
  - {kind: step, name: say, agent: {id: flujo.builtins.stringify}}
"""
GATED = """\
version: "0.1"
agents:
  slow:
    command: [sh, -c, 'cat > /dev/null; touch "%(dir)s/started"; while [ ! -e "%(dir)s/go" ]; do sleep 0.05; done']
steps:
  - {kind: step, name: wait, uses: agents.slow}
"""


def test_ctrl_c_says_how_many_cases_were_replayed_and_where_the_others_runs_are(tmp_path: Path) -> None:
    # It was a bare exit 130, nothing said: the user could not tell what had been judged, nor that a run
    # of each case cut short is in the store as interrupted.
    (tmp_path / "quick.yaml").write_text(QUICK, encoding="utf-8")
    (tmp_path / "slow.yaml").write_text(GATED % {"dir": tmp_path}, encoding="utf-8")
    for name in ("quick", "slow"):
        text = f"flujo_case: 1\nblueprint: {name}.yaml\nexpect:\n  tools_not_called: [x]\n"
        (tmp_path / f"{name}.case.yaml").write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(tmp_path / "runs.db")}
    process = subprocess.Popen(  # --jobs 1: quick (first by name) has finished when slow starts
        [sys.executable, "-m", "flujo_cli.main", "test", ".", "--jobs", "1"],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_until((tmp_path / "started").exists, process=process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate()
    (tmp_path / "go").touch()
    assert process.returncode == exit_codes.INTERRUPTED, err
    assert out.startswith("passed   quick.case.yaml"), out
    assert "error: interrupted: 1 of 2 case(s) replayed; no summary and no report were written" in err
    assert "flujo lens list --status interrupted" in err and "Traceback" not in err
    listed = subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", "lens", "list", "--status", "interrupted", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert len(json.loads(listed.stdout)) == 1, listed.stdout


@pytest.mark.parametrize(
    ("command", "code"),
    [("run", exit_codes.BLUEPRINT), ("validate", exit_codes.FAILED), ("explain", exit_codes.BLUEPRINT)],
)
def test_a_case_file_given_as_a_blueprint_is_said_to_be_one(command: str, code: int, state_db: Path) -> None:
    # A user who runs the case file was shown nine errors about a blueprint's missing version and steps and
    # its unknown keys, none of which says what the file is or what to do with it.
    case = "docs/examples/cases/persona.case.yaml"
    got, _, err = flujo([command, str(ROOT / case), "--no-input"] if command == "run" else [command, str(ROOT / case)])
    assert got == code, err
    assert err.count("error:") == 1, err
    assert "error: this is a flujo test case file (its blueprint: ../persona.yaml), not a blueprint" in err
    assert f"hint: replay it with: flujo test {ROOT / case}" in err


def test_a_case_with_a_tool_call_approval_replays_the_answer(tmp_path: Path, state_db: Path) -> None:
    """docs/examples/tools.yaml with its multiply call approved: the case replays the approval (an ordinary
    question, answered from the case) before the served call, so the replayed run keeps it as the recording."""
    blueprint = ROOT / "docs" / "examples" / "tools.yaml"
    code, out, err = flujo(["run", str(blueprint), "--input", "What is (2 + 3) * 4?", "--answer", "y", "--json"])
    assert code == exit_codes.OK, err
    case = tmp_path / "calculator.case.yaml"
    export(json.loads(out)["run_id"], case)
    code, document = flujo_test_json(str(case))
    assert code == exit_codes.OK, document
    [result] = document["cases"]
    assert result["status"] == "passed", result
    assert (result["replay"]["replayed_calls"], result["replay"]["replayed_answers"]) == (5, 1), result["replay"]
    code, out, _ = flujo(["lens", "show", result["run_id"]])
    assert code == exit_codes.OK
    assert "approve:multiply" in out and "replayed from run" in out
