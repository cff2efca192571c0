"""``flujo run FILE --replay RUN_ID [--on-divergence stop|live]`` end to end, for every kind of step: a run is
recorded against the loopback OpenAI-compatible server (tests/support/fakes/openai_server.py), then replayed
through the real CLI and SQLite store; the server counts the model calls the replay makes (none, when nothing
changed) and keeps what they were sent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from core import RunRecord, TraceEvent
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo
from tests.support.fakes.openai_server import FakeLLM

MODEL = "openai:gpt-4o-mini"

TWO_STEPS = f"""
version: "0.1"
name: two
agents:
  writer: {{model: "{MODEL}", system_prompt: "You write."}}
  checker: {{model: "{MODEL}", system_prompt: "CHECKER"}}
steps:
  - {{kind: step, name: write, uses: agents.writer}}
  - {{kind: step, name: check, uses: agents.checker}}
"""


@pytest.fixture
def llm(fake_llm: FakeLLM, state_db: Path, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """The loopback server, with the CLI's providers pointed at it."""
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    return fake_llm


def run_json(*args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = flujo(["run", *args, "--json"])
    assert out.strip(), err
    return code, json.loads(out), err


def blueprint(tmp_path: Path, text: str, name: str = "flow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def stored(db: Path, run_id: str) -> tuple[RunRecord, list[TraceEvent]]:
    async def read() -> tuple[RunRecord | None, list[TraceEvent]]:
        store = await open_store(str(db))
        try:
            return await store.get_run(run_id), await store.events(run_id)
        finally:
            await store.close()

    record, events = asyncio.run(read())
    assert record is not None
    return record, events


def recorded(*args: str) -> dict[str, Any]:
    """Run once for real (the recording); its --json result."""
    code, result, err = run_json(*args)
    assert code == exit_codes.OK, err
    return result


def replay_clean(llm: FakeLLM, flow: Path, original: dict[str, Any], *extra: str) -> dict[str, Any]:
    """Replay ``original`` with the blueprint unchanged: no model call, the same output, a clean report."""
    before = len(llm.requests)
    code, result, err = run_json(str(flow), "--replay", original["run_id"], *extra)
    assert code == exit_codes.OK, err
    assert len(llm.requests) == before, "a replay of an unchanged blueprint called the model"
    assert result["output"] == original["output"]
    report = result["replay"]
    assert (report["from"], report["clean"], report["diverged"]) == (original["run_id"], True, [])
    assert result["usage"]["requests"] == 0
    return result


# -- agents: served, diverging, going live ----------------------------------------------------------------


def test_a_replay_needs_no_api_key_until_it_goes_live(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served calls call nothing, so the provider's key is not asked for; a replay that goes live says it is
    missing then, in one line (exit 6)."""
    flow = blueprint(tmp_path, TWO_STEPS.replace("CHECKER", "You check."))
    llm.reply("A first draft.").reply("Looks right.")
    original = recorded(str(flow), "--input", "cats")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")  # the provider's own URL, which needs a key
    code, _out, err = flujo(["run", str(flow)])  # a run that calls the model: refused before it starts
    assert code == exit_codes.CONFIG and "OPENAI_API_KEY is not set" in err
    replay_clean(llm, flow, original)
    changed = blueprint(tmp_path, TWO_STEPS.replace("CHECKER", "You check twice."), "changed.yaml")
    code, _out, err = flujo(["run", str(changed), "--replay", original["run_id"], "--on-divergence", "live"])
    assert code == exit_codes.CONFIG, err
    assert "OPENAI_API_KEY" in err and "Traceback" not in err


def test_an_unchanged_blueprint_replays_with_no_model_call_and_the_same_output(
    llm: FakeLLM, tmp_path: Path, state_db: Path
) -> None:
    flow = blueprint(tmp_path, TWO_STEPS.replace("CHECKER", "You check."))
    llm.reply("A first draft.").reply("Looks right.")
    original = recorded(str(flow), "--input", "cats")
    assert len(llm.requests) == 2 and original["output"] == "Looks right."
    result = replay_clean(llm, flow, original)
    assert result["replay"]["replayed_calls"] == 2 and result["replay"]["mode"] == "stop"
    record, events = stored(state_db, result["run_id"])
    assert record.input == "cats"  # the recorded run's input, not given again
    assert record.options is not None and record.options["replay"] == original["run_id"]
    assert record.options["replay_report"]["clean"] is True
    replies = [event.payload for event in events if event.kind == "agent.reply"]
    assert [reply.get("replayed_from") for reply in replies] == [original["run_id"]] * 2
    assert not [event for event in events if event.kind == "agent.call"]  # nothing sent, nothing journaled
    code, out, err = flujo(["run", str(flow), "--replay", original["run_id"]])  # and as a person sees it
    assert code == exit_codes.OK, err
    assert out.strip() == "Looks right."
    assert "write › A first draft." in err and "check › Looks right." in err
    assert f"replayed 2 call(s) and 0 answer(s) from run {original['run_id']}; no divergence" in err


def test_a_changed_system_prompt_diverges_at_its_step_with_the_diff(
    llm: FakeLLM, tmp_path: Path, state_db: Path
) -> None:
    flow = blueprint(tmp_path, TWO_STEPS.replace("CHECKER", "You check."))
    llm.reply("A first draft.").reply("Looks right.")
    original = recorded(str(flow), "--input", "cats")
    flow.write_text(TWO_STEPS.replace("CHECKER", "You check twice."))
    before = len(llm.requests)
    code, result, err = run_json(str(flow), "--replay", original["run_id"])
    assert code == exit_codes.REPLAY_DIVERGED, err
    assert len(llm.requests) == before
    assert (result["status"], result["failed_step"]) == ("failed", "check")
    [divergence] = result["replay"]["diverged"]
    assert divergence["path"] == "check" and divergence["reason"] == "the prompt differs from the recorded one"
    diff = divergence["diff"].splitlines()
    assert diff[:2] == ["--- recorded check", "+++ new check"]
    assert "-    You check." in diff and "+    You check twice." in diff
    assert "     A first draft." in diff  # the context: the unchanged user message, served from the recording
    assert result["replay"]["replayed_calls"] == 1
    assert "diverged at check: the prompt differs from the recorded one" in err
    assert "-    You check.\n+    You check twice." in err
    # What to do next: go live from there (a resume would replay, and diverge, again).
    assert f"flujo run {flow} --replay {original['run_id']} --on-divergence live" in err
    assert "flujo resume" not in err
    record, _ = stored(state_db, result["run_id"])
    assert record.status == "failed" and "diverged at check" in (record.error or "")
    assert record.options is not None and record.options["replay_report"]["diverged_at"] == "check"
    code, out, err = flujo(["lens", "show", result["run_id"]])
    assert code == exit_codes.OK, err
    assert f"replay of    run {original['run_id']} · 1 call served · diverged at check" in out


def test_live_goes_on_from_the_divergence_with_the_served_turns_in_the_conversation(
    llm: FakeLLM, tmp_path: Path
) -> None:
    """A conversation loop whose second iteration's agent (another agent than the first's) is changed:
    iteration 1 is served, iterations 2 and 3 call the model, sent the history the served turns made."""
    text = f"""
version: "0.1"
name: chat
agents:
  opener: {{model: "{MODEL}", system_prompt: "You open."}}
  follower: {{model: "{MODEL}", system_prompt: "FOLLOWER"}}
steps:
  - kind: loop
    name: talk
    loop:
      conversation: true
      max_loops: 3
      ai_turn_source: named_steps
      named_steps: [open, follow]
      body:
        - kind: conditional
          name: who
          condition_expression: "context.conversation_history | length > 1"
          branches:
            false:
              - {{kind: step, name: open, uses: agents.opener}}
            true:
              - {{kind: step, name: follow, uses: agents.follower}}
        - {{kind: hitl, name: answer, message: "Your turn?"}}
      output:
        text: conversation_history
"""
    flow = blueprint(tmp_path, text.replace("FOLLOWER", "You follow."))
    llm.reply("Recorded opening.").reply("Recorded follow-up.").reply("Recorded last word.")
    answers = ("--answer", "one", "--answer", "two", "--answer", "three")
    original = recorded(str(flow), "--input", "hi", *answers)
    assert len(llm.requests) == 3
    replay_clean(llm, flow, original)  # unchanged: served whole

    flow.write_text(text.replace("FOLLOWER", "You follow closely."))
    before = len(llm.requests)
    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--on-divergence", "live")
    assert code == exit_codes.OK, err
    report = result["replay"]
    assert (report["mode"], report["clean"], report["replayed_calls"]) == ("live", False, 1)
    assert [d["path"] for d in report["diverged"]] == ["talk/2/who/true/follow"]
    live = [request.body["messages"] for request in llm.requests[before:]]
    assert live == [  # the empty queue echoes: what a live reply says is "echo: <the last user message>"
        [
            {"role": "system", "content": "You follow closely."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Recorded opening."},  # served in iteration 1
            {"role": "user", "content": "one"},  # the recorded answer, served
        ],
        [
            {"role": "system", "content": "You follow closely."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Recorded opening."},
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "echo: one"},  # iteration 2's live reply
            {"role": "user", "content": "two"},
        ],
    ]
    assert result["output"].splitlines() == [
        "User: hi",
        "Assistant: Recorded opening.",
        "User: one",
        "Assistant: echo: one",
        "User: two",
        "Assistant: echo: two",
        "User: three",
    ]
    assert result["usage"]["requests"] == 2
    assert "went on live from there: this run is not a clean replay" in err


def test_a_recorded_call_the_new_run_never_makes_diverges_at_its_end(
    llm: FakeLLM, tmp_path: Path, state_db: Path
) -> None:
    flow = blueprint(tmp_path, TWO_STEPS.replace("CHECKER", "You check."))
    llm.reply("A first draft.").reply("Looks right.")
    original = recorded(str(flow), "--input", "cats")
    flow.write_text(TWO_STEPS.replace("CHECKER", "You check.").split("  - {kind: step, name: check")[0])
    code, result, err = run_json(str(flow), "--replay", original["run_id"])
    assert code == exit_codes.REPLAY_DIVERGED, err
    assert result["output"] == "A first draft."
    [divergence] = result["replay"]["diverged"]
    assert divergence["path"] == "check"
    assert divergence["reason"] == "the run ended without making 1 recorded call(s)"
    assert "-    You check." in divergence["diff"].splitlines()
    assert "diverged at check: the run ended without making 1 recorded call(s)" in err
    record, _ = stored(state_db, result["run_id"])
    assert record.options is not None and record.options["replay_report"]["clean"] is False
    # With live, the same run is a replay that is not clean, and a success.
    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--on-divergence", "live")
    assert code == exit_codes.OK, err
    assert result["replay"]["clean"] is False and result["replay"]["diverged"][0]["path"] == "check"


def test_a_secret_in_a_recorded_reply_is_replayed_as_its_mask(llm: FakeLLM, tmp_path: Path) -> None:
    secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
    flow = blueprint(tmp_path, TWO_STEPS.replace("CHECKER", "You check."))
    llm.reply(f"The key is {secret}.")  # and the checker echoes it
    original = recorded(str(flow), "--input", "cats")
    assert original["output"] == f"echo: The key is {secret}."  # the live run had it, and sent it on
    # The recording holds the mask, so the replay is served the mask, and sends it on: the prompts still match.
    code, result, err = run_json(str(flow), "--replay", original["run_id"])
    assert code == exit_codes.OK, err
    assert result["replay"]["clean"] is True and result["replay"]["replayed_calls"] == 2
    assert result["output"] == "echo: The key is [REDACTED]."
    code, shown, _ = flujo(["lens", "show", result["run_id"], "--final-output"])
    assert code == exit_codes.OK
    _, events = stored(tmp_path / "state" / "flujo.db", result["run_id"])
    code, out, err = flujo(["run", str(flow), "--replay", original["run_id"]])
    assert code == exit_codes.OK, err
    assert secret not in out + err + shown + json.dumps([event.payload for event in events])
    assert "write › The key is [REDACTED]." in err


def test_a_call_that_failed_fails_again_so_an_ignored_branch_is_ignored_again(state_db: Path) -> None:
    """docs/examples/parallel.yaml: a branch whose agent's reply never fits its schema fails and the parallel
    goes on without it; the replay serves that failure too (the recorded error, no call)."""
    example = str(ROOT / "docs" / "examples" / "parallel.yaml")
    original = recorded(example, "--input", "Our new logo")
    code, result, err = run_json(example, "--replay", original["run_id"])
    assert code == exit_codes.OK, err
    assert result["output"] == original["output"]
    assert (result["replay"]["clean"], result["replay"]["replayed_calls"]) == (True, 4)
    _, events = stored(state_db, result["run_id"])
    [failure] = [event.payload for event in events if event.kind == "step.error"]
    _, recorded_events = stored(state_db, original["run_id"])
    assert [failure] == [event.payload for event in recorded_events if event.kind == "step.error"]


def test_a_call_that_failed_and_succeeded_on_resume_replays_as_its_success(llm: FakeLLM, tmp_path: Path) -> None:
    flow = blueprint(tmp_path, TWO_STEPS.replace("CHECKER", "You check."))
    llm.reply("A first draft.").fail(400, message="bad request")
    code, failed, err = run_json(str(flow), "--input", "cats")
    assert code != exit_codes.OK and failed["failed_step"] == "check", err
    llm.reply("Looks right.")
    code, out, err = flujo(["resume", failed["run_id"], "--json"])
    assert code == exit_codes.OK, err
    original = json.loads(out)
    result = replay_clean(llm, flow, original)
    assert result["replay"]["replayed_calls"] == 2 and result["output"] == "Looks right."


# -- tools --------------------------------------------------------------------------------------------------

TOOLS = f"""
version: "0.1"
name: tooling
imports:
  lookup: lookup.yaml
tools:
  bump: {{python: "side_effects:bump"}}
  note:
    command: ["python3", "note.py"]
    description: "Write a note to notes.txt."
    input_schema: {{type: object, properties: {{text: {{type: string}}}}, required: [text]}}
  ask_lookup: {{workflow: imports.lookup, description: "Look a word up."}}
agents:
  helper: {{model: "{MODEL}", system_prompt: "Use the tools.", tools: [bump, note, ask_lookup]}}
steps:
  - {{kind: step, name: work, uses: agents.helper}}
"""
LOOKUP = f"""
version: "0.1"
name: lookup
agents:
  librarian: {{model: "{MODEL}", system_prompt: "You look words up."}}
steps:
  - {{kind: step, name: find, uses: agents.librarian}}
"""
SIDE_EFFECTS = '''
from pathlib import Path


def bump(by: int) -> int:
    """Add by to the counter in counter.txt and return it."""
    counter = Path("counter.txt")
    value = (int(counter.read_text()) if counter.exists() else 0) + by
    counter.write_text(str(value))
    return value
'''
NOTE = """
import json, sys
arguments = json.load(sys.stdin)
with open("notes.txt", "a") as notes:
    notes.write(arguments["text"] + "\\n")
print(json.dumps({"written": arguments["text"]}))
"""


def test_tool_calls_are_served_without_running_the_tools(llm: FakeLLM, tmp_path: Path) -> None:
    """A python tool and a command tool with side effects, and a workflow tool whose sub-workflow calls a
    model: the replay makes no model call and runs none of them (the files are not written again)."""
    flow = blueprint(tmp_path, TOOLS)
    blueprint(tmp_path, LOOKUP, "lookup.yaml")
    blueprint(tmp_path, SIDE_EFFECTS, "side_effects.py")
    blueprint(tmp_path, NOTE, "note.py")
    llm.reply("Bumping and noting.", tool_calls=[("bump", {"by": 2}), ("note", {"text": "hello"})])
    llm.reply("", tool_calls=[("ask_lookup", {"word": "tea"})])
    llm.reply("Tea: a drink.")  # the sub-workflow's librarian
    llm.reply("Done: 2, noted, and tea is a drink.")
    original = recorded(str(flow), "--input", "go")
    assert len(llm.requests) == 4
    assert (tmp_path / "counter.txt").read_text() == "2" and (tmp_path / "notes.txt").read_text() == "hello\n"

    result = replay_clean(llm, flow, original)
    assert (tmp_path / "counter.txt").read_text() == "2" and (tmp_path / "notes.txt").read_text() == "hello\n"
    assert result["replay"]["replayed_calls"] == 6  # 3 model turns, 3 tool calls (the lookup's inside not run)
    _, events = stored(tmp_path / "state" / "flujo.db", result["run_id"])
    called = [event.payload for event in events if event.kind == "tool.call"]
    assert [(c["tool"], c["replayed_from"]) for c in called] == [
        ("bump", original["run_id"]),
        ("note", original["run_id"]),
        ("ask_lookup", original["run_id"]),
    ]
    assert [c["result"] for c in called] == ["2", '{"written": "hello"}', "Tea: a drink."]
    assert not [event for event in events if event.kind == "run.child"]  # the workflow tool's child never ran

    # What a person sees is what the live run showed: the model's words before its calls, each call's line.
    code, out, err = flujo(["run", str(flow), "--replay", original["run_id"]])
    assert code == exit_codes.OK, err
    assert "work › Bumping and noting.\n" in err
    assert '↳ bump({"by": 2}) → 2' in err and '↳ note({"text": "hello"}) → {"written": "hello"}' in err
    code, out, err = flujo(["lens", "trace", result["run_id"]])
    assert code == exit_codes.OK, err
    assert f'bump({{"by": 2}}) → 2  (served from run {original["run_id"]})' in out


def test_a_tool_offered_otherwise_diverges(llm: FakeLLM, tmp_path: Path) -> None:
    """The tools offered go with the messages (natively, beside them): a tool removed or described otherwise
    is another request, and the replay says so rather than serving the recorded turn (and its call of a tool
    the agent no longer has)."""
    flow = blueprint(tmp_path, TOOLS)
    blueprint(tmp_path, LOOKUP, "lookup.yaml")
    blueprint(tmp_path, SIDE_EFFECTS, "side_effects.py")
    blueprint(tmp_path, NOTE, "note.py")
    llm.reply("Bumping.", tool_calls=[("bump", {"by": 2})])
    llm.reply("Done: 2.")
    original = recorded(str(flow), "--input", "go")
    replay_clean(llm, flow, original)
    for changed in (
        TOOLS.replace("Write a note to notes.txt.", "Write a note to a file."),
        TOOLS.replace("tools: [bump, note, ask_lookup]", "tools: [bump, note]"),
    ):
        blueprint(tmp_path, changed)
        code, result, err = run_json(str(flow), "--replay", original["run_id"])
        assert code == exit_codes.REPLAY_DIVERGED, err
        [divergence] = result["replay"]["diverged"]
        assert divergence["path"] == "work/model/1"
        assert divergence["reason"] == "the tools offered differ from the recorded ones", divergence
    assert (tmp_path / "counter.txt").read_text() == "2"  # no tool ran again


# -- composite steps ---------------------------------------------------------------------------------------

COMPOSITE = f"""
version: "0.1"
name: composite
agents:
  optimist: {{model: "{MODEL}", system_prompt: "OPTIMIST"}}
  skeptic: {{model: "{MODEL}", system_prompt: "You doubt."}}
  shelf: {{model: "{MODEL}", system_prompt: "You find shelves."}}
imports:
  review: review.yaml
steps:
  - kind: parallel
    name: opinions
    parallel:
      branches:
        up:
          - {{kind: step, name: cheer, uses: agents.optimist}}
        down:
          - {{kind: step, name: doubt, uses: agents.skeptic}}
  - kind: map
    name: shelves
    map:
      over: '["milk", "rice", "bread"]'
      body:
        - {{kind: step, name: find, uses: agents.shelf}}
  - {{kind: step, name: review, uses: imports.review}}
"""
REVIEW = f"""
version: "0.1"
name: review
agents:
  critic: {{model: "{MODEL}", system_prompt: "CRITIC"}}
steps:
  - {{kind: step, name: critique, uses: agents.critic}}
  - {{kind: hitl, name: approve, message: "Publish it?"}}
"""


def composite(tmp_path: Path, optimist: str = "You hope.", critic: str = "You criticise.") -> Path:
    blueprint(tmp_path, REVIEW.replace("CRITIC", critic), "review.yaml")
    return blueprint(tmp_path, COMPOSITE.replace("OPTIMIST", optimist))


def test_parallel_branches_a_map_and_a_sub_workflow_replay_with_no_model_call(llm: FakeLLM, tmp_path: Path) -> None:
    flow = composite(tmp_path)
    original = recorded(str(flow), "--input", "groceries", "--answer", "yes")
    assert len(llm.requests) == 6 and original["output"] == "yes"
    result = replay_clean(llm, flow, original)
    assert result["replay"]["replayed_calls"] == 6 and result["replay"]["replayed_answers"] == 1
    assert [(a["path"], a["source"]) for a in result["answers"]] == [("review/approve", "replayed")]


def test_a_change_in_a_branch_or_in_a_sub_workflow_diverges_at_its_path(llm: FakeLLM, tmp_path: Path) -> None:
    flow = composite(tmp_path)
    original = recorded(str(flow), "--input", "groceries", "--answer", "yes")
    composite(tmp_path, optimist="You hope a lot.")
    code, result, err = run_json(str(flow), "--replay", original["run_id"])
    assert code == exit_codes.REPLAY_DIVERGED, err
    assert [d["path"] for d in result["replay"]["diverged"]] == ["opinions/up/cheer"]
    assert "+    You hope a lot." in result["replay"]["diverged"][0]["diff"]

    composite(tmp_path, critic="You criticise kindly.")
    before = len(llm.requests)
    code, result, err = run_json(str(flow), "--replay", original["run_id"])
    assert code == exit_codes.REPLAY_DIVERGED, err
    assert len(llm.requests) == before
    assert result["failed_step"] == "review/critique"
    [divergence] = result["replay"]["diverged"]
    assert divergence["path"] == "review/critique"
    assert divergence["diff"].splitlines()[:2] == ["--- recorded review/critique", "+++ new review/critique"]
    assert result["replay"]["replayed_calls"] == 5  # the branches and the map, served
    code, out, _ = flujo(["lens", "list", "--json"])
    child = next(run for run in json.loads(out)["runs"] if run["parent_run_id"] == result["run_id"])
    assert (child["status"], child["error"]) == ("failed", result["error"])  # the divergence, as the parent's

    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--on-divergence", "live")
    assert code == exit_codes.OK, err
    assert len(llm.requests) == before + 1  # the critique only; the question's answer is still served
    assert [(a["path"], a["source"]) for a in result["answers"]] == [("review/approve", "replayed")]


ENSEMBLE = f"""
version: "0.1"
name: poem_review
agents:
  writer: {{model: "{MODEL}", system_prompt: "You write short poems."}}
  critic: {{model: "{MODEL}", system_prompt: "You judge poems.", output_schema: {{type: object}}}}
steps:
  - kind: ensemble
    name: review
    ensemble:
      participants:
        - name: writer
          uses: agents.writer
          max_turns: 3
          triggers_conversation: true
          depends_on:
            - participant: critic
              condition: "history[-1].participant == 'critic' and not context.approved"
        - name: critic
          uses: agents.critic
          max_turns: 3
          depends_on:
            - participant: writer
              condition: "history[-1].participant == 'writer'"
        - name: editor
          ask: "The critic approved: {{{{ steps.writer.output }}}}. Publish it?"
          depends_on:
            - participant: critic
              condition: "context.approved"
      max_total_turns: 7
      output:
        poem: "{{{{ previous_step.final_state.writer }}}}"
        published: "{{{{ previous_step.final_state.editor }}}}"
        rounds: "{{{{ previous_step.turn_count }}}}"
"""


def test_an_ensemble_replays_with_no_model_call(llm: FakeLLM, tmp_path: Path) -> None:
    flow = blueprint(tmp_path, ENSEMBLE)
    llm.reply("Rain on the roof").reply({"approved": False}).reply("Soft rain at night").reply({"approved": True})
    original = recorded(str(flow), "--input", "a poem about rain", "--answer", "yes")
    assert original["output"] == {"poem": "Soft rain at night", "published": "yes", "rounds": 5}
    result = replay_clean(llm, flow, original)
    assert result["replay"]["replayed_calls"] == 4 and result["replay"]["replayed_answers"] == 1


# -- people: simulated, asked, answered ----------------------------------------------------------------------

PERSONA = f"""
version: "0.1"
name: dinner
agents:
  persona: {{model: "{MODEL}", system_prompt: "PERSONA"}}
  host: {{model: "{MODEL}", system_prompt: "You confirm bookings."}}
steps:
  - kind: hitl
    name: guests
    message: "How many guests (1-8)?"
    input_schema: {{type: integer, minimum: 1, maximum: 8}}
  - {{kind: step, name: confirm, uses: agents.host, input: "A table for {{{{ steps.guests.output }}}}."}}
"""


def test_a_simulated_persons_replies_are_served_and_compared_like_a_models(llm: FakeLLM, tmp_path: Path) -> None:
    flow = blueprint(tmp_path, PERSONA.replace("PERSONA", "You are Ada, booking for four."))
    llm.reply("4").reply("Booked for 4.")
    original = recorded(str(flow), "--simulate-user", "agents.persona", "--no-input")
    result = replay_clean(llm, flow, original, "--no-input")  # the recorded run's --simulate-user applies
    assert result["replay"]["replayed_calls"] == 2 and result["replay"]["replayed_answers"] == 0
    assert [(a["path"], a["source"], a["by"]) for a in result["answers"]] == [("guests", "simulated", "agents.persona")]

    flow.write_text(PERSONA.replace("PERSONA", "You are Ada, booking for six."))
    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--no-input")
    assert code == exit_codes.REPLAY_DIVERGED, err
    [divergence] = result["replay"]["diverged"]
    assert divergence["path"] == "guests"
    assert "-    You are Ada, booking for four." in divergence["diff"].splitlines()


def test_a_question_a_simulated_person_answered_diverges_when_the_person_is_asked_instead(
    llm: FakeLLM, tmp_path: Path
) -> None:
    answered = PERSONA.replace("PERSONA", "You are Ada, booking for four.").replace(
        "    input_schema: {type: integer, minimum: 1, maximum: 8}\n",
        "    input_schema: {type: integer, minimum: 1, maximum: 8}\n    answered_by: agents.persona\n",
    )
    assert "answered_by" in answered
    flow = blueprint(tmp_path, answered)
    llm.reply("4").reply("Booked for 4.")
    original = recorded(str(flow), "--no-input")
    replay_clean(llm, flow, original, "--no-input")
    flow.write_text(answered.replace("    answered_by: agents.persona\n", ""))  # the person answers now
    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--no-input")
    assert code == exit_codes.REPLAY_DIVERGED, err  # not a pause: the recording's answer came from a persona
    [divergence] = result["replay"]["diverged"]
    assert divergence["path"] == "guests"
    assert divergence["reason"] == "a simulated person answered this question; none does now"
    assert divergence["diff"].splitlines()[-2:] == ["-answered by agents.persona", "+asked to the person"]


SUMMARIZED = f"""
version: "0.1"
name: quiz
agents:
  tutor: {{model: "{MODEL}", system_prompt: "You ask sums."}}
  summarizer: {{model: "{MODEL}", system_prompt: "SUMMARIZER"}}
steps:
  - kind: loop
    name: quiz
    loop:
      conversation: true
      max_loops: 4
      history_management:
        strategy: summarize
        summarizer_agent: summarizer
        max_turns: 4
        summarize_ratio: 0.5
      body:
        - {{kind: step, name: ask, uses: agents.tutor}}
        - {{kind: hitl, name: answer, message: "{{{{ steps.ask.output }}}}"}}
      output:
        text: conversation_history
"""


def test_a_summarizer_that_failed_fails_again_and_the_history_is_truncated_again(llm: FakeLLM, tmp_path: Path) -> None:
    flow = blueprint(tmp_path, SUMMARIZED.replace("SUMMARIZER", "You summarise."))
    answers = ("--answer", "1", "--answer", "2", "--answer", "3", "--answer", "4")
    llm.reply("2+2?").reply("3+3?").fail(400, message="no summaries today")  # the third call: the summary
    original = recorded(str(flow), "--input", "start", *answers)
    _, events = stored(tmp_path / "state" / "flujo.db", original["run_id"])
    [failed] = [event for event in events if event.kind == "history.summarize_failed"]
    assert "no summaries today" in failed.payload["error"]
    result = replay_clean(llm, flow, original)
    _, events = stored(tmp_path / "state" / "flujo.db", result["run_id"])
    assert len([event for event in events if event.kind == "history.summarize_failed"]) == 1


def test_a_summarizing_history_has_its_summary_served(llm: FakeLLM, tmp_path: Path) -> None:
    flow = blueprint(tmp_path, SUMMARIZED.replace("SUMMARIZER", "You summarise."))
    answers = ("--answer", "1", "--answer", "2", "--answer", "3", "--answer", "4")
    original = recorded(str(flow), "--input", "start", *answers)
    _, events = stored(tmp_path / "state" / "flujo.db", original["run_id"])
    summaries = [event for event in events if event.kind == "agent.prompt" and event.payload.get("purpose")]
    assert len(summaries) == 1 and len(llm.requests) == 5  # four questions, one summary
    result = replay_clean(llm, flow, original)
    assert result["replay"]["replayed_calls"] == 5

    flow.write_text(SUMMARIZED.replace("SUMMARIZER", "You summarise briefly."))
    code, result, err = run_json(str(flow), "--replay", original["run_id"])
    assert code == exit_codes.REPLAY_DIVERGED, err
    [divergence] = result["replay"]["diverged"]
    assert divergence["path"] == summaries[0].path
    assert "+    You summarise briefly." in divergence["diff"].splitlines()


QUESTIONS = f"""
version: "0.1"
name: ask
agents:
  planner: {{model: "{MODEL}", system_prompt: "You plan."}}
steps:
  - {{kind: hitl, name: goal, message: "GOAL"}}
  - {{kind: step, name: plan, uses: agents.planner}}
"""


def test_answers_are_served_when_the_question_is_the_same_and_diverge_when_it_changed(
    llm: FakeLLM, tmp_path: Path
) -> None:
    flow = blueprint(tmp_path, QUESTIONS.replace("GOAL", "What do you want?"))
    original = recorded(str(flow), "--answer", "a trip")
    result = replay_clean(llm, flow, original, "--no-input")
    assert result["replay"]["replayed_answers"] == 1
    assert [(a["path"], a["source"]) for a in result["answers"]] == [("goal", "replayed")]

    # An answer given with --answer still comes first; the plan it leads to is then not the recorded one.
    code, result, err = run_json(
        str(flow), "--replay", original["run_id"], "--answer", "a cruise", "--on-divergence", "live"
    )
    assert code == exit_codes.OK, err
    assert [(a["path"], a["source"]) for a in result["answers"]] == [("goal", "given")]
    assert result["replay"]["replayed_answers"] == 0
    assert [d["path"] for d in result["replay"]["diverged"]] == ["plan"]
    assert result["output"] == "echo: a cruise"

    flow.write_text(QUESTIONS.replace("GOAL", "What do you want to achieve?"))
    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--no-input")
    assert code == exit_codes.REPLAY_DIVERGED, err
    [divergence] = result["replay"]["diverged"]
    assert (divergence["path"], divergence["reason"]) == ("goal", "the question differs from the recorded one")
    assert divergence["diff"].splitlines()[-2:] == ["-What do you want?", "+What do you want to achieve?"]


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--replay", "RUN", "--replay-answers", "RUN"], "--replay and --replay-answers cannot be given together"),
        (["--on-divergence", "live"], "--on-divergence applies to a replay: give --replay RUN_ID too"),
        (["--replay", "RUN", "--on-divergence", "later"], "--on-divergence must be stop or live"),
    ],
)
def test_replay_flags_that_do_not_go_together_are_a_usage_error(
    llm: FakeLLM, tmp_path: Path, flags: list[str], words: str
) -> None:
    flow = blueprint(tmp_path, QUESTIONS.replace("GOAL", "What do you want?"))
    code, _, err = flujo(["run", str(flow), *flags])
    assert code == exit_codes.USAGE
    assert words in err and "Traceback" not in err


def test_replaying_a_run_that_does_not_exist_is_a_usage_error(llm: FakeLLM, tmp_path: Path) -> None:
    flow = blueprint(tmp_path, QUESTIONS.replace("GOAL", "What do you want?"))
    code, _, err = flujo(["run", str(flow), "--replay", "nosuchrun"])
    assert code == exit_codes.USAGE
    assert "no run matches 'nosuchrun' (given to --replay)" in err and not llm.requests


THREAD = f"""
version: "0.1"
name: notes
agents:
  notes: {{model: "{MODEL}", system_prompt: "You keep notes."}}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 1
      body:
        - {{kind: step, name: acknowledge, uses: agents.notes}}
      output:
        text: conversation_history
"""


def test_a_run_that_continued_a_thread_replays_hearing_what_it_heard_and_adds_nothing_to_it(
    llm: FakeLLM, tmp_path: Path
) -> None:
    flow = blueprint(tmp_path, THREAD)
    recorded(str(flow), "--thread", "trip", "--input", "Pack the tent.")
    second = recorded(str(flow), "--thread", "trip", "--input", "Buy a map.")
    assert [m["content"] for m in llm.requests[-1].body["messages"][1:]] == [
        "Pack the tent.",
        "echo: Pack the tent.",
        "Buy a map.",
    ]
    recorded(str(flow), "--thread", "trip", "--input", "Check the car.")  # the thread went on since
    _, before, _ = flujo(["threads", "show", "trip", "--json"])
    result = replay_clean(llm, flow, second)  # sent what run 2 was sent: the turns before it, not after
    assert result["replay"]["replayed_calls"] == 1
    _, after, _ = flujo(["threads", "show", "trip", "--json"])
    assert after == before  # the replay is in no thread, and said nothing in this one


QUIZ = f"""
version: "0.1"
name: quiz
agents:
  tutor: {{model: "{MODEL}", system_prompt: "You ask sums."}}
steps:
  - kind: loop
    name: quiz
    loop:
      conversation: true
      max_loops: 3
      body:
        - {{kind: step, name: ask, uses: agents.tutor}}
        - {{kind: hitl, name: answer, message: "{{{{ steps.ask.output }}}}"}}
      output:
        text: conversation_history
"""


def test_a_replay_runs_under_the_settings_its_recording_ran_with(llm: FakeLLM, tmp_path: Path) -> None:
    flow = blueprint(tmp_path, QUIZ)
    shorter = ("--set", "history.strategy=truncate_turns", "--set", "history.max_turns=2")
    original = recorded(str(flow), "--input", "start", "--answer", "1", "--answer", "2", "--answer", "3", *shorter)
    assert len(llm.requests[-1].body["messages"]) == 3  # the system prompt and the two latest turns
    result = replay_clean(llm, flow, original)  # no --set given: the recorded ones apply
    assert result["replay"]["replayed_calls"] == 3
    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--set", "history.max_turns=3")
    assert code == exit_codes.REPLAY_DIVERGED, err  # one given now wins: the prompts are not the same
    assert [d["path"] for d in result["replay"]["diverged"]] == ["quiz/3/ask"]


# -- a replay that pauses, resumed -------------------------------------------------------------------------

PAUSING = f"""
version: "0.1"
name: pausing
agents:
  writer: {{model: "{MODEL}", system_prompt: "You write."}}
  editor: {{model: "{MODEL}", system_prompt: "You edit."}}
steps:
  - {{kind: step, name: draft, uses: agents.writer}}
  - {{kind: step, name: edit, uses: agents.editor, input: "{{{{ steps.draft.output }}}}"}}
"""
ADDED = """  - {kind: step, name: polish, uses: agents.editor, input: "Polish it."}
  - {kind: hitl, name: tone, message: "Which tone?"}
"""


def test_a_live_replay_that_pauses_resumes_as_it_left_off(llm: FakeLLM, tmp_path: Path, state_db: Path) -> None:
    """A new agent step diverges (live from there), a new question after it pauses the run: the resumed run
    keeps replaying as it left off, live, its report keeping where it diverged and what was served."""
    flow = blueprint(tmp_path, PAUSING)
    llm.reply("Recorded draft.").reply("Recorded edit.")
    original = recorded(str(flow), "--input", "tea")
    flow.write_text(PAUSING.replace("  - {kind: step, name: edit", ADDED + "  - {kind: step, name: edit"))
    before = len(llm.requests)
    code, paused, err = run_json(str(flow), "--replay", original["run_id"], "--on-divergence", "live", "--no-input")
    assert code == exit_codes.PAUSED, err
    assert paused["pause"]["step"] == "tone"
    assert len(llm.requests) == before + 1  # the new step, live; the draft was served
    assert [d["path"] for d in paused["replay"]["diverged"]] == ["polish"]
    record, _ = stored(state_db, paused["run_id"])
    assert record.options is not None
    assert (record.options["replay"], record.options["on_divergence"]) == (original["run_id"], "live")
    code, _, err = flujo(["resume", paused["run_id"], "--replay-answers", original["run_id"]])
    assert code == exit_codes.USAGE  # it replays the answers already
    assert "--replay-answers cannot be given to its resume" in err and len(llm.requests) == before + 1

    code, out, err = flujo(["resume", paused["run_id"], "--answer", "warm", "--max-tokens", "9000", "--json"])
    assert code == exit_codes.OK, err
    result = json.loads(out)
    assert len(llm.requests) == before + 2 and result["output"] == "echo: Recorded draft."  # the edit, live
    report = result["replay"]
    assert (report["from"], report["mode"], report["clean"]) == (original["run_id"], "live", False)
    assert [d["path"] for d in report["diverged"]] == ["polish"]  # where it diverged, not the question
    assert report["replayed_calls"] == 1  # the draft, served before the pause
    record, _ = stored(state_db, paused["run_id"])
    assert record.options is not None and record.options["replay_report"]["diverged_at"] == "polish"
    assert record.options["replay_report"]["replayed_calls"] == 1
    assert record.options["max_tokens"] == 9000  # what the resume was given stays with the run, with its report


def test_a_recording_made_across_a_pause_and_a_resume_replays_whole(llm: FakeLLM, tmp_path: Path) -> None:
    """The recorded run paused at its question and was answered on resume: its answer and its calls, made by
    two processes, are one recording."""
    flow = blueprint(tmp_path, QUESTIONS.replace("GOAL", "What do you want?"))
    code, paused, err = run_json(str(flow), "--no-input")
    assert code == exit_codes.PAUSED, err
    code, out, err = flujo(["resume", paused["run_id"], "--answer", "a trip", "--json"])
    assert code == exit_codes.OK, err
    original = json.loads(out)
    replay_clean(llm, flow, original, "--no-input")


# -- approvals ------------------------------------------------------------------------------------------------

APPROVED = """
version: "0.1"
name: approving
tools:
  bump: {python: "side_effects:bump", approve: ask}
agents:
  helper:
    model: scripted
    system_prompt: "Use the tools."
    tools: [bump]
    replies:
      - {tool: bump, arguments: {by: 2}}
      - "Done."
steps:
  - {kind: step, name: work, uses: agents.helper}
"""
QUESTION = 'Allow helper to call bump({"by": 2})? [y/N]'


def approving(tmp_path: Path, text: str = APPROVED) -> Path:
    blueprint(tmp_path, SIDE_EFFECTS, "side_effects.py")
    return blueprint(tmp_path, text)


def approvals(db: Path, run_id: str) -> list[tuple[str, Any]]:
    """The answers the run's journal holds to its tools' approval questions: (path, answer), in order."""

    async def read() -> list[tuple[str, Any]]:
        store = await open_store(str(db))
        try:
            return [(step.path, step.output) for step in await store.steps(run_id) if step.kind == "hitl"]
        finally:
            await store.close()

    return asyncio.run(read())


def bumped(tmp_path: Path) -> str | None:
    """What the tool wrote to counter.txt (None: it never ran)."""
    counter = tmp_path / "counter.txt"
    return counter.read_text() if counter.exists() else None


@pytest.mark.parametrize(("answer", "counter"), [("y", "2"), ("n", None)])
def test_a_served_tool_call_is_approved_or_refused_again_by_the_recorded_answer(
    tmp_path: Path, state_db: Path, answer: str, counter: str | None
) -> None:
    """The approval is an ordinary question, asked before the call: a replay asks it too and serves the
    recorded answer, so the replayed run's journal holds the approval as the recorded one does, a "no" refuses
    the call again, and the tool never runs (the counter is not bumped again)."""
    flow = approving(tmp_path)
    original = recorded(str(flow), "--input", "go", "--answer", answer)
    assert approvals(state_db, original["run_id"]) == [("work/tool/1/approve", answer)]
    assert bumped(tmp_path) == counter

    code, replayed, err = run_json(str(flow), "--replay", original["run_id"], "--no-input")
    assert code == exit_codes.OK, err
    report = replayed["replay"]
    assert (report["clean"], report["replayed_calls"], report["replayed_answers"]) == (True, 3, 1), report
    assert [(a["path"], a["step"], a["source"]) for a in replayed["answers"]] == [
        ("work/tool/1/approve", "approve:bump", "replayed")
    ]
    assert approvals(state_db, replayed["run_id"]) == [("work/tool/1/approve", answer)]
    _, events = stored(state_db, replayed["run_id"])
    [asked] = [event.payload for event in events if event.kind == "hitl.answer"]
    assert (asked["message"], asked["source"]) == (QUESTION, "replayed")
    [called] = [event.payload for event in events if event.kind == "tool.call"]
    assert (called["result"] == "2", bool(called.get("declined"))) == (answer == "y", answer == "n"), called
    assert called["replayed_from"] == original["run_id"]
    assert bumped(tmp_path) == counter  # the tool did not run again

    # The text says it too.
    code, _, err = flujo(["run", str(flow), "--replay", original["run_id"], "--no-input"])
    assert code == exit_codes.OK, err
    assert f"replayed 3 call(s) and 1 answer(s) from run {original['run_id']}; no divergence" in err


def test_an_approval_answered_otherwise_or_no_longer_asked_diverges(tmp_path: Path, state_db: Path) -> None:
    """An answer given now beats the recorded one: a "no" where the recording allowed the call refuses it,
    and the model's next turn is sent another result (a divergence there). A tool that no longer asks
    diverges at the question the recording answered."""
    flow = approving(tmp_path)
    original = recorded(str(flow), "--input", "go", "--answer", "y")

    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--answer", "n")
    assert code == exit_codes.REPLAY_DIVERGED, err
    [divergence] = result["replay"]["diverged"]
    assert (divergence["path"], divergence["reason"]) == ("work/model/2", "the prompt differs from the recorded one")
    assert bumped(tmp_path) == "2"

    flow.write_text(APPROVED.replace(", approve: ask}", "}"))
    code, result, err = run_json(str(flow), "--replay", original["run_id"])
    assert code == exit_codes.REPLAY_DIVERGED, err
    [divergence] = result["replay"]["diverged"]
    assert divergence["path"] == "work/tool/1/approve"
    assert divergence["reason"] == "the recorded run asked this question; the run does not ask it now"
    assert divergence["diff"].splitlines()[-1] == f"-{QUESTION}"
    assert bumped(tmp_path) == "2"  # stopped before the call

    # Live from there: the tool runs, as the blueprint now says, without asking.
    code, result, err = run_json(str(flow), "--replay", original["run_id"], "--on-divergence", "live")
    assert code == exit_codes.OK, err
    assert [d["path"] for d in result["replay"]["diverged"]] == ["work/tool/1/approve"]
    assert result["answers"] == [] and approvals(state_db, result["run_id"]) == []
    assert bumped(tmp_path) == "4"
