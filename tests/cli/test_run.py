"""`flujo run` / `flujo resume` end to end: answers from flags, pipes and files; pause; errors; exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import EXAMPLES, ROOT, flujo, flujo_process
from tests.support.fakes.openai_server import FakeLLM

CLARIFY = str(EXAMPLES / "clarify.yaml")


def stored(db: Path, run_id: str) -> tuple[str, list[tuple[str, object]]]:
    async def read() -> tuple[str, list[tuple[str, object]]]:
        store = await open_store(str(db))
        try:
            run = await store.get_run(run_id)
            assert run is not None
            return run.status, [(s.path, s.output) for s in await store.steps(run.run_id)]
        finally:
            await store.close()

    return asyncio.run(read())


def one_agent(agent: str, *, top: str = "") -> str:
    """A blueprint with one agent ``bot`` (given as a YAML flow mapping) and one step using it."""
    return f'version: "0.1"\n{top}agents:\n  bot: {agent}\nsteps:\n  - {{kind: step, name: ask, uses: agents.bot}}\n'


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_run_with_answers_completes_and_records_every_step(state_db: Path) -> None:
    code, out, err = flujo(["run", CLARIFY, "--answer", "Plan a trip", "--answer", "My family", "--answer", "June"])
    assert code == exit_codes.OK, err
    assert "The goal is clear." in out
    assert "Who is it for?" in err and "By when should it be done?" in err  # the human saw each question
    result = json.loads(flujo(["run", CLARIFY, "--json", "-a", "g", "-a", "a1", "-a", "a2"])[1])
    assert result["status"] == "completed"
    status, steps = stored(state_db, result["run_id"])
    assert status == "completed"
    paths = [path for path, _ in steps]
    assert paths[0] == "get_goal"
    assert "clarification_loop/1/clarify" in paths and "clarification_loop/3/clarify" in paths
    assert ("clarification_loop/1/answer", "a1") in steps
    assert ("clarification_loop/2/answer", "a2") in steps
    assert not any(path.startswith("clarification_loop/3/answer") for path in paths)  # not asked after finish


def test_answers_no_question_took_are_reported(state_db: Path) -> None:
    code, _, err = flujo(["run", CLARIFY, "-a", "Plan a trip", "-a", "My family", "-a", "June", "-a", "spare"])
    assert code == exit_codes.OK, err
    assert "note: 1 answer(s) given with --answer/--answers were not used" in err
    code, _, err = flujo(["run", CLARIFY, "-a", "Plan a trip", "-a", "My family", "-a", "June"])
    assert code == exit_codes.OK and "not used" not in err


def test_a_misspelt_answers_key_is_named_where_the_run_pauses_and_when_it_completes(
    tmp_path: Path, state_db: Path
) -> None:
    """A key of --answers that no question takes (``get_gaol``) is not silently dropped: the pause at the
    question it was meant for says which key, and a completed run names the keys it never used."""
    answers = write(tmp_path, "answers.yaml", "get_gaol: Plan a trip\n")
    code, _, err = flujo(["run", CLARIFY, "--answers", answers, "--no-input"])
    assert code == exit_codes.PAUSED, err
    assert "note: the --answers key 'get_gaol' names no question of the run; did you mean 'get_goal'?" in err
    answers = write(tmp_path, "more.yaml", "get_goal: Plan a trip\nclarification_loop/answr: x\n")
    code, _, err = flujo(["run", CLARIFY, "--answers", answers, "--no-input"])
    assert code == exit_codes.PAUSED, err
    assert (
        "key 'clarification_loop/answr' names no question of the run; did you mean 'clarification_loop/answer'?" in err
    )
    code, _, err = flujo(["run", CLARIFY, "--answers", answers, "-a", "My family", "-a", "June"])
    assert code == exit_codes.OK, err
    assert "no question took the answers keyed 'clarification_loop/answr'" in err
    answers = write(tmp_path, "right.yaml", "get_goal: Plan a trip\nclarification_loop/answer: [My family]\n")
    code, _, err = flujo(["run", CLARIFY, "--answers", answers, "--no-input"])  # a later key, not yet used
    assert code == exit_codes.PAUSED and "note:" not in err, err


def test_piped_answers_are_read_line_by_line(state_db: Path) -> None:
    proc = flujo_process(
        ["run", CLARIFY], input="Plan a trip\nMy family\nJune\n", env={"FLUJO_STATE_URI": str(state_db)}
    )
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert "The goal is clear." in proc.stdout
    assert "> My family" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_input_pauses_then_resume_continues_without_repeating_steps(state_db: Path) -> None:
    code, out, err = flujo(["run", CLARIFY, "--no-input", "--json"])
    assert code == exit_codes.PAUSED
    paused = json.loads(out)
    assert paused["status"] == "paused"
    assert paused["pause"]["step"] == "get_goal"
    assert paused["pause"]["resume"].startswith(f"flujo resume {paused['run_id']}")

    run_id = paused["run_id"]
    code, _, err = flujo(["resume", run_id[:6], "--answer", "Plan a trip", "--no-input"])
    assert code == exit_codes.PAUSED, err
    assert "Who is it for?" in err
    code, out, err = flujo(["resume", run_id, "-a", "family", "-a", "June"])
    assert code == exit_codes.OK, err
    assert "The goal is clear." in out
    status, steps = stored(state_db, run_id)
    assert status == "completed"
    paths = [path for path, _ in steps]
    assert len(paths) == len(set(paths))  # no step recorded twice
    clarify_outputs = [output for path, output in steps if path.endswith("/clarify")]
    # the scripted agent continued where it was: ask, ask, finish (not restarting at its first reply)
    assert [o["action"] for o in clarify_outputs] == ["ask", "ask", "finish"]  # type: ignore[index]
    code, _, err = flujo(["resume", run_id])
    assert code == exit_codes.FAILED and "already completed" in err


def test_answers_file_by_step_name(state_db: Path, tmp_path: Path) -> None:
    answers = write(tmp_path, "answers.yaml", "get_goal: Plan a trip\nanswer: [My family, June]\n")
    code, out, err = flujo(["run", CLARIFY, "--answers", answers])
    assert code == exit_codes.OK, err
    assert "The goal is clear." in out


def test_invalid_piped_answer_is_asked_again(state_db: Path) -> None:
    blueprint = str(EXAMPLES / "conditional.yaml")
    proc = flujo_process(
        ["run", blueprint, "--input", "crash", "--json"], input="very\n9\n4\n", env={"FLUJO_STATE_URI": str(state_db)}
    )
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert json.loads(proc.stdout)["output"] == 4
    assert proc.stderr.count("please answer again") == 2


def test_invalid_scripted_answer_fails_with_one_clear_line(state_db: Path) -> None:
    code, _, err = flujo(["run", str(EXAMPLES / "conditional.yaml"), "--answer", "very"])
    assert code == exit_codes.FAILED
    assert "severity" in err and "rejected" in err
    assert "Traceback" not in err


def test_missing_file_is_a_usage_error(state_db: Path) -> None:
    code, _, err = flujo(["run", "nope.yaml"])
    assert code == exit_codes.USAGE
    assert "no such blueprint file: nope.yaml" in err


def test_invalid_blueprint_refuses_to_run_with_positions(state_db: Path, tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", 'version: "0.1"\nsteps:\n  - kind: loopp\n    name: x\n')
    code, _, err = flujo(["run", path])
    assert code == exit_codes.BLUEPRINT
    assert f"{path}:3:" in err and "loop" in err
    assert "Traceback" not in err


def test_real_http_provider_through_the_cli(state_db: Path, tmp_path: Path, fake_llm: FakeLLM) -> None:
    path = write(
        tmp_path,
        "chat.yaml",
        'version: "0.1"\nagents:\n  bot:\n    model: openai:gpt-4o-mini\n    system_prompt: "Be brief."\n'
        "steps:\n  - {kind: step, name: ask, uses: agents.bot}\n",
    )
    fake_llm.reply("Paris.", usage=(20, 2))
    proc = flujo_process(
        ["run", path, "--input", "Capital of France?", "--json"],
        env={**fake_llm.env(), "FLUJO_STATE_URI": str(state_db)},
    )
    assert proc.returncode == exit_codes.OK, proc.stderr
    result = json.loads(proc.stdout)
    assert result["output"] == "Paris."
    assert result["usage"]["input_tokens"] == 20 and result["usage"]["output_tokens"] == 2
    sent = fake_llm.last.body["messages"]
    assert sent == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}]


def test_the_cost_of_an_unpriced_model_is_shown_as_unknown(state_db: Path, tmp_path: Path, fake_llm: FakeLLM) -> None:
    path = write(tmp_path, "chat.yaml", one_agent('{model: "openai:my-finetune"}'))
    env = {**fake_llm.env(), "FLUJO_STATE_URI": str(state_db)}
    fake_llm.reply("one", usage=(20, 2)).reply("two", usage=(20, 2))
    proc = flujo_process(["run", path, "--input", "hi", "--json"], env=env)
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert json.loads(proc.stdout)["usage"] == {
        "input_tokens": 20,
        "output_tokens": 2,
        "requests": 1,
        "cost_usd": None,
    }
    proc = flujo_process(["run", path, "--input", "hi"], env=env)
    assert "22 tokens · cost unknown" in proc.stderr and "$0" not in proc.stderr


def test_unreachable_provider_is_one_line_and_exit_6(state_db: Path, tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = write(
        tmp_path,
        "chat.yaml",
        one_agent('{model: "openai:local", max_retries: 0}'),
    )
    proc = flujo_process(
        ["run", path, "--input", "hi"],
        env={"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "FLUJO_STATE_URI": str(state_db)},
    )
    assert proc.returncode == exit_codes.CONFIG, proc.stderr
    assert "cannot reach" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_api_key_is_one_line_and_exit_6(state_db: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chat.yaml",
        one_agent('{model: "openai:gpt-4o-mini"}'),
    )
    code, _, err = flujo(["run", path, "--input", "hi"])
    assert code == exit_codes.CONFIG
    assert "OPENAI_API_KEY" in err
    assert "Traceback" not in err


def test_token_limit_stops_the_run_with_exit_5(state_db: Path, tmp_path: Path, fake_llm: FakeLLM) -> None:
    path = write(
        tmp_path,
        "limit.yaml",
        'version: "0.1"\nlimits: {max_tokens: 50}\nagents:\n  bot: {model: "openai:gpt-4o-mini"}\nsteps:\n'
        "  - kind: loop\n    name: l\n    loop:\n      max_loops: 5\n"
        "      body:\n        - {kind: step, name: ask, uses: agents.bot}\n",
    )
    proc = flujo_process(["run", path, "--input", "hi"], env={**fake_llm.env(), "FLUJO_STATE_URI": str(state_db)})
    assert proc.returncode == exit_codes.LIMIT, proc.stderr
    # 3 calls of 15 tokens are spent; the 4th call's prompt would pass the limit, so it is never made
    assert "token limit reached before calling 'ask'" in proc.stderr
    assert "45 of the 50 allowed are used" in proc.stderr
    assert len(fake_llm.requests) == 3
    run_id = proc.stderr.split("flujo resume ")[1].split()[0]
    assert "--max-tokens N" in proc.stderr  # the hint names the flag that lifts this limit

    resumed = flujo_process(
        ["resume", run_id, "--max-tokens", "200"], env={**fake_llm.env(), "FLUJO_STATE_URI": str(state_db)}
    )
    assert resumed.returncode == exit_codes.OK, resumed.stderr
    assert len(fake_llm.requests) == 5  # the 3 finished calls were replayed from the store, not sent again
    status, steps = stored(state_db, run_id)
    assert status == "completed" and [path for path, _ in steps if path.endswith("/ask")] == [
        f"l/{n}/ask" for n in range(1, 6)
    ]


def test_settings_and_limits_can_be_given_on_the_command_line(
    state_db: Path, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    path = write(
        tmp_path,
        "nolimit.yaml",
        'version: "0.1"\nagents:\n  bot: {model: "openai:gpt-4o-mini"}\nsteps:\n'
        "  - kind: loop\n    name: l\n    loop:\n      max_loops: 5\n"
        "      body:\n        - {kind: step, name: ask, uses: agents.bot}\n",
    )
    env = {**fake_llm.env(), "FLUJO_STATE_URI": str(state_db)}
    by_setting = flujo_process(["run", path, "-i", "hi", "--set", "limits.max_tokens=50"], env=env)
    assert by_setting.returncode == exit_codes.LIMIT, by_setting.stderr
    assert "45 of the 50 allowed are used" in by_setting.stderr
    by_flag = flujo_process(["run", path, "-i", "hi", "--set", "limits.max_tokens=50", "--max-tokens", "20"], env=env)
    assert by_flag.returncode == exit_codes.LIMIT and "15 of the 20 allowed are used" in by_flag.stderr

    bad = flujo_process(["run", path, "-i", "hi", "--set", "histroy.max_tokens=5"], env=env)
    assert bad.returncode == exit_codes.CONFIG
    assert "there is no setting 'histroy'" in bad.stderr and "Traceback" not in bad.stderr
    wrong_type = flujo_process(["run", path, "-i", "hi", "--set", "history.max_tokens=lots"], env=env)
    assert wrong_type.returncode == exit_codes.CONFIG
    assert "setting history.max_tokens" in wrong_type.stderr and "--set" in wrong_type.stderr


def test_debug_shows_the_traceback(state_db: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "k.yaml",
        one_agent('{model: "openai:gpt-4o-mini"}'),
    )
    proc = flujo_process(["--debug", "run", path], env={"FLUJO_STATE_URI": str(state_db), "OPENAI_API_KEY": ""})
    assert proc.returncode == exit_codes.CONFIG
    assert "Traceback" in proc.stderr


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_validates_without_errors(example: str, state_db: Path) -> None:
    code, _, err = flujo(["validate", str(EXAMPLES / example)])
    assert code == exit_codes.OK, err


def test_input_dash_reads_stdin(state_db: Path) -> None:
    proc = flujo_process(
        ["run", str(EXAMPLES / "map.yaml"), "--input", "-", "--json"],
        input='["apples", "pears"]\n',
        env={"FLUJO_STATE_URI": str(state_db)},
    )
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert json.loads(proc.stdout)["output"] == ["Describe apples in one line.", "Describe pears in one line."]


def test_unusable_state_database_is_one_line_and_exit_7(tmp_path: Path, state_db: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("just some notes, not a database\n" * 20, encoding="utf-8")
    proc = flujo_process(["run", str(EXAMPLES / "map.yaml"), "--input", "[1]"], env={"FLUJO_STATE_URI": str(not_a_db)})
    assert proc.returncode == exit_codes.STORE, proc.stderr
    assert "not a flujo database" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not_a_db.read_text(encoding="utf-8").startswith("just some notes")  # the user's file is untouched


def test_ask_user_builtin_asks_the_human(state_db: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "ask.yaml",
        'version: "0.1"\nsteps:\n  - kind: step\n    name: ask\n'
        "    agent: {id: flujo.builtins.ask_user, params: {question: 'Your name?'}}\n",
    )
    code, out, err = flujo(["run", path, "--answer", "Ada"])
    assert code == exit_codes.OK, err
    assert out.strip() == "Ada"
    assert "Your name?" in err


def test_resume_works_from_another_directory(state_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)
    code, out, _ = flujo(["run", "clarify.yaml", "--no-input", "--json"])
    assert code == exit_codes.PAUSED
    run_id = json.loads(out)["run_id"]
    monkeypatch.chdir(tmp_path)
    code, out, err = flujo(["resume", run_id, "-a", "goal", "-a", "a1", "-a", "a2"])
    assert code == exit_codes.OK, err


def test_validate_missing_file_is_a_usage_error(state_db: Path) -> None:
    code, _, err = flujo(["validate", "nope.yaml"])
    assert code == exit_codes.USAGE
    assert "no such blueprint file" in err


def _history_of_calls(db: Path, run_id: str) -> dict[str, dict[str, object]]:
    async def read() -> dict[str, dict[str, object]]:
        async with await open_store(str(db)) as store:
            record = await store.get_run(run_id)
            assert record is not None
            events = await store.events(run_id)
            calls = {e.path: dict(e.payload["history"]) for e in events if e.kind == "agent.prompt"}
            return {"options": record.options or {}, **calls}

    return asyncio.run(read())


def test_a_resumed_run_keeps_the_settings_and_limits_it_was_started_with(state_db: Path) -> None:
    conversation = str(EXAMPLES / "conversation.yaml")
    start = ["--set", "history.max_tokens=12", "--max-cost-usd", "5", "--no-input", "--json"]
    secret = ["--set", "openai.api_key=sk-proj-Zz99Yy88Xx77Ww66Vv55"]  # used by the run, never stored
    code, out, err = flujo(["run", conversation, *start, *secret, "-a", "Plan a trip", "-a", "My family"])
    assert code == exit_codes.PAUSED, err
    run_id = json.loads(out)["run_id"]
    assert _history_of_calls(state_db, run_id)["options"] == {"set": ["history.max_tokens=12"], "max_cost_usd": 5}
    assert b"Zz99Yy88" not in b"".join(p.read_bytes() for p in state_db.parent.glob("flujo.db*"))

    code, _, err = flujo(["resume", run_id, "-a", "June", "--max-tokens", "900"])
    assert code == exit_codes.OK, err
    calls = _history_of_calls(state_db, run_id)
    third = calls["clarification_loop/3/clarify"]
    assert third["dropped"], third  # history.max_tokens=12 still bounds what is sent after the resume
    # What the resume added is recorded too, for a later resume: its own flags on top of the first ones.
    assert calls["options"] == {"set": ["history.max_tokens=12"], "max_tokens": 900, "max_cost_usd": 5}


def flujo_bytes(args: list[str | bytes], stdin: bytes, db: Path) -> subprocess.CompletedProcess[bytes]:
    """flujo as a process given bytes that are not UTF-8 on its command line or stdin, as a shell can give them."""
    return subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(db)},
    )


def test_input_or_answers_that_are_not_utf8_are_refused_before_anything_runs(state_db: Path) -> None:
    echo = str(ROOT / "docs" / "examples" / "hello.yaml")
    cases: list[tuple[list[str | bytes], bytes, str]] = [
        (["run", echo, "--input", "-"], b"\xff\xfe", "error: the input read from stdin is not UTF-8 text (byte 0)"),
        (["run", echo, "--input", b"ok\xff"], b"", "error: --input is not UTF-8 text (byte 2)"),
        (["run", echo, "--answer", b"Ad\xffa"], b"", "error: --answer is not UTF-8 text (byte 2)"),
        (["submit", echo, "--input", "-"], b"\xff", "error: the input read from stdin is not UTF-8 text (byte 0)"),
    ]
    for args, stdin, expected in cases:
        proc = flujo_bytes(args, stdin, state_db)
        err = proc.stderr.decode()
        assert proc.returncode == exit_codes.USAGE, (args, err)
        assert err.startswith(expected), (args, err)
        assert "unexpected" not in err
    assert not state_db.exists()  # nothing was stored


def test_a_piped_answer_that_is_not_utf8_is_asked_again(state_db: Path) -> None:
    hello = str(ROOT / "docs" / "examples" / "hello.yaml")
    proc = flujo_bytes(["run", hello, "--json"], b"Ad\xffa\nAda\n", state_db)
    err = proc.stderr.decode()
    assert proc.returncode == exit_codes.OK, err
    assert "the answer is not UTF-8 text (byte 2) — please answer again" in err
    assert "Ada" in json.loads(proc.stdout)["output"]
    proc = flujo_bytes(["run", hello, "--json"], b"Ad\xffa\n", state_db)  # no line after it: the run pauses
    assert proc.returncode == exit_codes.PAUSED, proc.stderr.decode()


def test_an_answer_of_more_digits_than_python_prints_is_a_rejected_answer(state_db: Path, tmp_path: Path) -> None:
    hitl = str(ROOT / "docs" / "examples" / "hitl.yaml")
    code, _, err = flujo(["run", hitl, "--answer", "9" * 5000])
    assert code == exit_codes.FAILED, err
    assert "the answer given for 'guests' was rejected: " in err and "is not of type 'integer'" in err
    assert "ValueError" not in err and "--debug" not in err
    proc = flujo_process(["run", hitl, "--json"], input="9" * 5000 + "\n4\ny\nwindow\nnone\n")
    assert proc.returncode == exit_codes.OK, proc.stderr[-500:]
    assert "please answer again" in proc.stderr
    answers = write(tmp_path, "answers.yaml", "guests: 0x" + "f" * 5000 + "\n")
    code, _, err = flujo(["run", hitl, "--answers", answers])
    assert code == exit_codes.CONFIG, err
    assert err.startswith(f"error: answers file {answers}:1:9: cannot read this value: Exceeds the limit (4300 digits)")


def test_a_long_rejected_answer_is_shown_as_an_excerpt_and_kept_whole(state_db: Path, tmp_path: Path) -> None:
    pick = write(tmp_path, "pick.yaml", (
        'version: "0.1"\nsteps:\n  - kind: hitl\n    name: pick\n    message: "Pick one"\n'
        "    input_schema: {enum: [red, green, blue]}\n"
    ))  # fmt: skip
    pasted = "word " * 400 + "THE END"
    code, _, err = flujo(["run", pick, "--answer", pasted, "--json"])
    assert code == exit_codes.FAILED, err
    rejected = next(line for line in err.splitlines() if "was rejected" in line)
    assert "is not one of ['red', 'green', 'blue']" in rejected
    assert "word word…" in rejected and "THE END" not in rejected and len(rejected) < 250

    async def read() -> list[object]:
        async with await open_store(str(state_db), mode="read") as store:
            (run,) = await store.list_runs()
            return [event.payload["answer"] for event in await store.events(run.run_id, kind="hitl.rejected")]

    assert asyncio.run(read()) == [pasted]  # what the person gave is kept whole


def test_an_answer_to_a_schema_that_is_only_a_ref_is_read_as_json(state_db: Path, tmp_path: Path) -> None:
    plan = write(tmp_path, "plan.yaml", (
        'version: "0.1"\nsteps:\n  - kind: hitl\n    name: plan\n    message: "Plan?"\n    input_schema:\n'
        '      $ref: "#/$defs/Plan"\n      $defs: {Plan: {type: object, required: [steps]}}\n'
    ))  # fmt: skip
    code, out, err = flujo(["run", plan, "--answer", '{"steps": ["draft", "ship"]}', "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == {"steps": ["draft", "ship"]}


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, where every write fails")
@pytest.mark.parametrize(
    "args",
    [
        ["run", str(ROOT / "docs" / "examples" / "hello.yaml"), "--answer", "Ada"],
        ["schema"],
        ["lens", "list"],
        ["--help"],
    ],
    ids=["run", "schema", "lens list", "help"],
)
def test_output_to_a_full_disk_is_one_line_and_exit_2(tmp_path: Path, args: list[str]) -> None:
    # `flujo run ... > /dev/full` was "unexpected OSError ... report this as a bug"; `flujo schema` a traceback.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(tmp_path / "f.db")}
    hello = ["run", str(ROOT / "docs" / "examples" / "hello.yaml"), "--answer", "Ada"]
    assert flujo_process(hello, env=env, cwd=tmp_path).returncode == exit_codes.OK  # a store to list
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "flujo_cli.main", *args], stdout=full, stderr=subprocess.PIPE, text=True,
            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == exit_codes.USAGE, done.stderr
    assert "error: cannot write the output: No space left on device" in done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr and "Exception ignored" not in done.stderr
