"""``model: local`` against the real model: SmolLM2-135M-Instruct served in-process by xllamacpp.

Every run here goes through ``flujo run`` in this process, so they all share one server (one model load
for the whole session: the server is kept per model file per process). Replies are capped with a short
``max_tokens`` and nothing asserts on the model's exact words, only on what flujo does with them.
These tests skip only when the binding cannot be imported (``make install`` installs it).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from core import AgentCall, AgentReply, Settings
from core.agents import AgentSpec, build_agent
from core.agents.local_chat import LocalChatAgent
from core.agents.local_server import default_model_path
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import EXAMPLES, ROOT, flujo, read_terminal_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None,
        reason="the llama.cpp binding xllamacpp is not installed (make install installs it)",
    ),
]

CHAT = EXAMPLES / "chat.yaml"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["question", "statement"]},
        "topic": {"type": "string", "maxLength": 40},
    },
    "required": ["kind", "topic"],
}
STRUCTURED = f"""\
version: "0.1"
agents:
  judge:
    model: local
    system_prompt: |
      Say whether the message is a question or a statement, and its topic. Reply with JSON only.
      Message: Where is Rome? -> {{"kind": "question", "topic": "Rome"}}
      Message: I like tea. -> {{"kind": "statement", "topic": "tea"}}
    output_schema: {json.dumps(SCHEMA)}
    model_settings: {{temperature: 0, max_tokens: 40}}
steps:
  - kind: step
    name: judge
    uses: agents.judge
"""


def events(db: Path, run_id: str, kind: str) -> list[dict[str, Any]]:
    """The payloads of a run's trace events of ``kind``, in the order they were recorded."""

    async def read() -> list[dict[str, Any]]:
        async with await open_store(str(db)) as store:
            return [dict(e.payload) for e in await store.events(run_id) if e.kind == kind]

    return asyncio.run(read())


def test_a_two_turn_chat_sends_the_first_answer_back_as_history(state_db: Path) -> None:
    code, out, err = flujo(
        ["run", str(CHAT), "--json", "-a", "Hi! My name is Ada.", "-a", "What is my name?", "-a", "bye"]
    )
    assert code == exit_codes.OK, err
    result = json.loads(out)
    assert result["status"] == "completed"
    replies = [payload["output"] for payload in events(state_db, result["run_id"], "agent.reply")]
    prompts = events(state_db, result["run_id"], "agent.prompt")
    assert len(replies) == len(prompts) == 2
    assert all(isinstance(reply, str) and reply.strip() for reply in replies)
    second = [(m["role"], m["content"]) for m in prompts[1]["messages"]]
    assert second[0][0] == "system"
    # the worked examples, as chat turns, then the first exchange and the new message
    assert [role for role, _ in second[1:7]] == ["user", "assistant"] * 3
    assert second[7:] == [("user", "Hi! My name is Ada."), ("assistant", replies[0]), ("user", "What is my name?")]
    assert prompts[1]["agent"] == "local"
    # usage as the server counted it; a model on this machine costs nothing
    usage = result["usage"]
    assert usage["input_tokens"] > len(second) and usage["output_tokens"] > 0
    assert usage["requests"] == 2 and usage["cost_usd"] == 0
    assert result["output"].startswith("User: Hi! My name is Ada.\nAssistant: ")


def test_the_default_chat_answers_a_factual_question_and_its_follow_up_in_its_own_voice(state_db: Path) -> None:
    """The chat ``make run`` starts, structurally: at temperature 0 the model names the capital asked for,
    answers the follow-up ("And of Spain?"), which only makes sense with the first exchange sent back, and
    never writes a role line (speaking as the person). This shows the prompt is shaped so the model can
    answer; it cannot show the conversation is good (benchmarks/chat_quality.py prints ten to read)."""
    answers = ["What is the capital of France?", "And of Spain?", "bye"]
    code, out, err = flujo(["run", str(CHAT), "--json", *(arg for answer in answers for arg in ("-a", answer))])
    assert code == exit_codes.OK, err
    run_id = json.loads(out)["run_id"]
    replies = [str(payload["output"]) for payload in events(state_db, run_id, "agent.reply")]
    assert len(replies) == 2
    assert "Paris" in replies[0]
    assert "Madrid" in replies[1]
    for reply in replies:
        assert not re.search(r"^\s*(user|assistant|smol)\s*:", reply, re.IGNORECASE | re.MULTILINE), reply
        assert len(reply.split()) <= 40, reply  # short, as the examples are
    second = [(m["role"], m["content"]) for m in events(state_db, run_id, "agent.prompt")[1]["messages"]]
    assert second[-3:] == [("user", answers[0]), ("assistant", replies[0]), ("user", answers[1])]


def test_a_structured_reply_matches_its_schema(state_db: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "judge.yaml"
    blueprint.write_text(STRUCTURED, encoding="utf-8")
    code, out, err = flujo(["run", str(blueprint), "--json", "--input", "Where is Paris?"])
    assert code == exit_codes.OK, err
    result = json.loads(out)
    jsonschema.validate(result["output"], SCHEMA)
    assert result["usage"]["output_tokens"] > 0


def test_streamed_text_is_shown_as_it_comes(state_db: Path) -> None:
    code, _, err = flujo(["run", str(CHAT), "-a", "Hello!", "-a", "bye"])
    assert code == exit_codes.OK, err
    assert "smol › " in err  # the reply is shown on stderr as it streams

    agent = build_agent(AgentSpec(name="a", model="local", model_settings={"max_tokens": 16}), Settings())
    other = build_agent(AgentSpec(name="b", model="local", model_settings={"max_tokens": 4}), Settings())
    assert isinstance(agent, LocalChatAgent) and isinstance(other, LocalChatAgent)
    deltas: list[str] = []

    async def both() -> AgentReply:
        reply, _ = await asyncio.gather(
            agent.run(AgentCall(input="Name three colours.", step="s", on_text=deltas.append)),
            other.run(AgentCall(input="Hello", step="t")),
        )
        return reply

    reply = asyncio.run(both())
    assert len(deltas) > 1 and "".join(deltas) == reply.output
    assert 0 < reply.usage.output_tokens <= 16
    # one server per model file, shared, on the loopback address only
    assert agent.endpoint.base_url == other.endpoint.base_url
    assert agent.endpoint.base_url.startswith("http://127.0.0.1:")


def test_a_missing_model_file_is_one_line_and_exit_6(state_db: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "bp" / "missing.yaml"
    blueprint.parent.mkdir()
    blueprint.write_text(STRUCTURED.replace("model: local", "model: local:models/none.gguf"), encoding="utf-8")
    code, _, err = flujo(["run", str(blueprint), "--input", "hi"])
    assert code == exit_codes.CONFIG
    # relative to the blueprint's folder, not to the working directory
    assert f"the model file {tmp_path / 'bp' / 'models' / 'none.gguf'} does not exist" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"<!DOCTYPE html><html>Not found</html>", "is not a GGUF model file"),
        (b"GGUF\x03\x00\x00\x00" + b"\x01" * 10, "is damaged: the header ends early"),
        (b"GGUF\x63\x00\x00\x00" + b"\x01" * 10, "is GGUF version 99, which llama.cpp does not read"),
        (b"cut", "is cut off: it holds 8,000,000 bytes"),
    ],
)
def test_a_file_that_is_not_a_whole_gguf_model_is_one_line_and_exit_6(
    state_db: Path, tmp_path: Path, content: bytes, says: str
) -> None:
    if content == b"cut":  # the default model, as `head -c 8000000` leaves it
        content = default_model_path().read_bytes()[:8_000_000]
    (tmp_path / "broken.gguf").write_bytes(content)
    blueprint = tmp_path / "broken.yaml"
    blueprint.write_text(STRUCTURED.replace("model: local", "model: local:broken.gguf"), encoding="utf-8")
    code, _, err = flujo(["run", str(blueprint), "--input", "hi"])
    assert code == exit_codes.CONFIG
    assert says in err and "Traceback" not in err


LONG_REPLY = """\
version: "0.1"
agents:
  counter:
    model: local
    system_prompt: "You count."
    model_settings: {temperature: 0, max_tokens: 2000, ignore_eos: true}
steps:
  - kind: step
    name: count
    uses: agents.counter
"""


def test_ctrl_c_during_generation_interrupts_the_run_as_with_other_providers(tmp_path: Path) -> None:
    """SIGINT while the local model streams its reply: exit 130, the run saved as interrupted with the resume
    command named, as for an HTTP provider (no hang on the in-process server, no traceback)."""
    (tmp_path / "count.yaml").write_text(LONG_REPLY, encoding="utf-8")
    db = tmp_path / "flujo.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(db)}
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", "count.yaml", "--input", "Count from 1 to 500."],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert process.stderr is not None
        seen = read_terminal_until(process.stderr.fileno(), "count ›")
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate()
    finally:
        process.kill()
    stderr = seen + rest.decode(errors="replace")
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    run_id = re.search(r"interrupted: run ([0-9a-f]{16})", stderr)
    assert run_id is not None, stderr
    assert f"resume {run_id.group(1)}" in stderr

    async def status() -> str:
        async with await open_store(str(db)) as store:
            record = await store.get_run(run_id.group(1))
            assert record is not None
            return record.status

    assert asyncio.run(status()) == "interrupted"


@contextlib.contextmanager
def _chat_at_a_terminal(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``flujo run`` of the chat ``make run`` starts (with ``args``), at a pseudo-terminal: the process and the
    terminal's controlling end, both ended on the way out."""
    controller, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm", "COLUMNS": "120",
           "FLUJO_STATE_URI": str(tmp_path / "f.db")}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", str(CHAT), *args],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
    )  # fmt: skip
    os.close(terminal)
    try:
        yield process, controller
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)


def test_at_a_terminal_the_first_reply_says_the_model_loads_then_that_it_thinks(tmp_path: Path) -> None:
    """The chat ``make run`` starts, at a pseudo-terminal, its first message given with ``-a``: before its first
    reply the status line says what is happening (the model's name and size while it loads, then
    ``thinking…`` with the seconds), then the reply streams; a last word ``bye`` ends it."""
    with _chat_at_a_terminal(tmp_path, "-a", "Hi!") as (process, controller):
        # The first message given on the command line: no one types while the model could load, so the first
        # reply loads it (test_at_a_terminal_the_model_loads_while_the_person_types has the other case).
        shown = read_terminal_until(controller, "(end with bye, or Ctrl-D)", timeout=60)
        # (the step's name is in bold: its escape codes stand between it and the words that follow)
        shown = read_terminal_until(controller, "loading SmolLM2-135M-Instruct (98 MB)…", timeout=120, seen=shown)
        shown = read_terminal_until(controller, "thinking…", timeout=120, seen=shown)
        shown = read_terminal_until(controller, " › ", timeout=120, seen=shown)
        shown = read_terminal_until(controller, "Your reply", timeout=120, seen=shown)
        os.write(controller, b"Thanks, that is all. Bye!\r")
        shown = read_terminal_until(controller, "completed", timeout=60, seen=shown)
        assert process.wait(timeout=60) == 0, shown
    loading, thinking = shown.index("loading SmolLM2"), shown.index("thinking…")
    assert loading < thinking < shown.index(" › ")


def _listening_ports(pid: int) -> list[int]:
    """The TCP ports process ``pid`` listens on (its sockets' inodes, found in /proc/net/tcp as LISTEN)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # a descriptor closed meanwhile
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
            ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _serves_health(pid: int) -> bool:
    """Whether a port process ``pid`` listens on answers ``/health`` with 200 (llama.cpp's server, loaded)."""
    for port in _listening_ports(pid):
        with contextlib.suppress(OSError), urllib.request.urlopen(f"http://127.0.0.1:{port}/health") as reply:
            if reply.status == 200:
                return True
    return False


def test_at_a_terminal_the_model_loads_while_the_person_types(tmp_path: Path) -> None:
    """``make run``'s chat at a pseudo-terminal: while the first question waits for the person, the model loads
    (its server listens and answers /health before anything is typed), then the conversation goes as before.
    Without the load in the background nothing would listen until the first message was sent."""
    with _chat_at_a_terminal(tmp_path) as (process, controller):
        shown = read_terminal_until(controller, "(end with bye, or Ctrl-D)", timeout=60)
        while not _serves_health(process.pid):  # the event: its llama.cpp server is ready (the test's limit ends it)
            assert process.poll() is None, shown
            if select.select([controller], [], [], 0.05)[0]:  # keep reading: the process never blocks writing
                shown += os.read(controller, 65536).decode("utf-8", "replace")
        os.write(controller, b"Hi!\r")
        shown = read_terminal_until(controller, " › ", timeout=120, seen=shown)
        shown = read_terminal_until(controller, "Your reply", timeout=120, seen=shown)
        os.write(controller, b"bye\r")
        shown = read_terminal_until(controller, "completed", timeout=60, seen=shown)
        assert process.wait(timeout=60) == 0, shown
    assert "Traceback" not in shown


_BACKGROUND = """
import asyncio, sys, threading
from core import AgentCall, Settings
from core.agents import AgentSpec, build_agent
from core.agents import local_server

spec = AgentSpec(name="a", model=sys.argv[1], system_prompt="Reply with one word.",
                 model_settings={"temperature": 0, "max_tokens": 5})
agent = build_agent(spec, Settings())
local_server.load_in_background()
for thread in threading.enumerate():
    if thread.name.startswith("flujo load"):
        thread.join()
activities = []
try:
    asyncio.run(agent.run(AgentCall(input="Hi", step="s", on_activity=lambda a: activities.append(a.kind))))
except Exception as exc:
    print("RAISED", type(exc).__name__, exc)
print("LOADED", local_server.running(), sorted(set(activities)))
"""


def test_a_model_loaded_in_the_background_is_used_by_the_first_call(tmp_path: Path) -> None:
    """``load_in_background`` loads the models the process's agents use; once it is over the first call starts
    at once (no "loading" status, only "thinking")."""
    done = subprocess.run(
        [sys.executable, "-c", _BACKGROUND, "local"], capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "RAISED" not in done.stdout, done.stdout
    assert "LOADED True ['thinking']" in done.stdout, done.stdout


def test_a_background_load_that_fails_is_raised_by_the_first_call(tmp_path: Path) -> None:
    """A file llama.cpp refuses, loaded in the background: no traceback from the thread; the first call raises
    the ProviderError it would have raised loading the file itself."""
    # The default model with another architecture's name: whole and well formed for flujo's checks, but
    # llama.cpp knows no architecture "lxama".
    model = default_model_path().read_bytes()
    key = model.index(b"general.architecture") + len(b"general.architecture")
    assert model[key + 12 : key + 17] == b"llama"  # after the value's type (4 bytes) and length (8 bytes)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(model[: key + 12] + b"lxama" + model[key + 17 :])
    done = subprocess.run(
        [sys.executable, "-c", _BACKGROUND, f"local:{broken}"], capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "RAISED ProviderError llama.cpp could not load" in done.stdout, done.stdout + done.stderr
    assert "LOADED False" in done.stdout, done.stdout
