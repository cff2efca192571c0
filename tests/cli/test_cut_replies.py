"""A streamed reply that was cut off (its connection closed or broke before the stream's end) is a failed
attempt, never a turn: retried under the agent's ``max_retries`` with its partial text left on screen, then
one line and exit code 6; no partial turn is stored, and lens shows the attempt marked as cut.

Against the fake OpenAI server on 127.0.0.1, through the real ``flujo`` command (docs/blueprints.md,
"Retries"; docs/lens.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core import ReplyCutOff
from core.agents import AgentSpec, Backoff
from core.agents.gguf import GGUFInfo
from core.agents.http import Endpoint
from core.agents.local_chat import LocalChatAgent
from core.agents.local_server import LocalModel
from core.model.calls import AgentCall, Retry
from core.settings.config import LocalSettings
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo_process
from tests.support.fakes.openai_server import FakeLLM

PARTS = ["Reply 2 part one, ", "part two."]
WHOLE = "".join(PARTS)

CHAT = """\
version: "0.1"
agents:
  bot:
    model: openai:gpt-4o-mini
    max_retries: 2
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 2
      body:
        - {kind: step, name: reply, uses: agents.bot}
        - {kind: hitl, name: answer, message: "Anything else?"}
      output: {text: conversation_history}
"""


@dataclass(frozen=True)
class Chat:
    file: Path
    env: dict[str, str]

    def flujo(self, *args: str) -> Any:
        return flujo_process(list(args), env=self.env)

    def json(self, *args: str) -> Any:
        done = self.flujo(*args, "--json")
        assert done.returncode == exit_codes.OK, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def chat(tmp_path: Path, fake_llm: FakeLLM) -> Chat:
    (tmp_path / "chat.yaml").write_text(CHAT, encoding="utf-8")
    env = {**fake_llm.env(), "FLUJO_STATE_URI": str(tmp_path / "flujo.db"), "COLUMNS": "200", "NO_COLOR": "1"}
    return Chat(tmp_path / "chat.yaml", env)


def cut_reply(fake: FakeLLM) -> None:
    """The issue's stream: the role chunk and one delta, then the connection closes (no finish_reason, no
    ``data: [DONE]``)."""
    fake.reply(WHOLE, chunks=PARTS, cut_after=2, cut="end")


def thread_turns(chat: Chat, name: str) -> list[str]:
    return [turn["content"] for turn in chat.json("threads", "show", name)["turns"]]


def words(printed: str) -> str:
    """Printed text as its words, one space apart: a lens tree's guides and line breaks left out."""
    return " ".join(re.sub("[│├└─]", " ", printed).split())


def spans(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps of a ``lens show`` / ``lens trace`` JSON tree, at every depth."""
    found: list[dict[str, Any]] = []
    for node in nodes:
        if node["type"] == "step":
            found.append(node)
        found.extend(spans(node["children"]))
    return found


def step_events(document: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """The events of the step at ``path`` in a ``lens trace --json`` document."""
    (step,) = [span for span in spans(document["spans"]) if span["path"] == path]
    return list(step["events"])


@pytest.mark.slow
def test_a_reply_cut_off_at_every_attempt_fails_the_run_with_one_line_and_exit_6(chat: Chat, fake_llm: FakeLLM) -> None:
    fake_llm.reply("Reply 1.")
    for _ in range(3):
        cut_reply(fake_llm)
    run = chat.flujo("run", str(chat.file), "--input", "Hello", "--answer", "Go on", "--thread", "t1")
    assert run.returncode == exit_codes.CONFIG, run.stderr
    err = run.stderr
    # The partial text stays on screen, on its own line, then what happens to it.
    assert "reply › Reply 2 part one, \n'reply' was cut off — retrying (2/3) in " in err
    assert "reply › Reply 2 part one, \n'reply' was cut off — retrying (3/3) in " in err
    assert err.count("reply › Reply 2 part one,") == 3
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert re.fullmatch(
        r"error: run failed at step chat/2/reply: agents\.bot \(openai:gpt-4o-mini\): the reply from \S+ was cut off "
        r"after 18 characters \('Reply 2 part one,'\): the stream ended before its end marker "
        r"\(3 attempts over \d+\.\d s\)",
        errors[0],
    )
    assert len(fake_llm.requests) == 4

    # No partial turn: the thread holds the first exchange only.
    assert thread_turns(chat, "t1") == ["Hello", "Reply 1.", "Go on"]
    (listed,) = chat.json("lens", "list")["runs"]
    run_id = listed["run_id"]
    assert listed["status"] == "failed"
    shown = chat.json("lens", "show", run_id)
    outputs = {step["path"]: step["output"] for step in spans(shown["steps"])}
    assert outputs["chat/1/reply"] == "Reply 1." and outputs["chat/2/reply"] is None
    assert "part one" not in json.dumps([shown["run"]["output"], list(outputs.values())])

    # lens trace marks each attempt as cut, with the text it had received.
    events = step_events(chat.json("lens", "trace", run_id), "chat/2/reply")
    assert [e["kind"] for e in events] == [
        "agent.call",
        "agent.prompt",
        "agent.cut",
        "agent.cut",
        "agent.cut",
        "step.error",
    ]
    cuts = [e["payload"] for e in events if e["kind"] == "agent.cut"]
    assert [(c["attempt"], c["attempts"], c["received"]) for c in cuts] == [
        (1, 3, "Reply 2 part one, "),
        (2, 3, "Reply 2 part one, "),
        (3, 3, "Reply 2 part one, "),
    ]
    assert {c["reason"] for c in cuts} == {"the stream ended before its end marker"}
    assert {c["agent"] for c in cuts} == {"openai:gpt-4o-mini"}
    plain = chat.flujo("lens", "trace", run_id, "--step", "chat/2/reply")
    assert plain.returncode == exit_codes.OK, plain.stderr
    shown = words(plain.stdout)
    assert "3 attempts cut off · no reply recorded" in shown
    assert shown.count("✂ cut off Reply 2 part one,") == 3
    assert "(attempt 1 of 3, 18 characters received: the stream ended before its end marker)" in shown
    assert "(attempt 3 of 3, 18 characters received: the stream ended before its end marker)" in shown


@pytest.mark.slow
def test_a_reply_cut_off_once_is_streamed_anew_and_only_the_whole_reply_is_a_turn(
    chat: Chat, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("Reply 1.")
    cut_reply(fake_llm)
    fake_llm.reply(WHOLE, chunks=PARTS)
    run = chat.flujo("run", str(chat.file), "--input", "Hello", "-a", "Go on", "-a", "Thanks", "--thread", "t2")
    assert run.returncode == exit_codes.OK, run.stderr
    assert "reply › Reply 2 part one, \n'reply' was cut off — retrying (2/3) in " in run.stderr
    assert "reply › Reply 2 part one, part two.\n" in run.stderr
    assert thread_turns(chat, "t2") == ["Hello", "Reply 1.", "Go on", WHOLE, "Thanks"]
    assert run.stdout.count("Reply 2 part one") == 1  # the conversation printed as output

    (listed,) = chat.json("lens", "list")["runs"]
    events = step_events(chat.json("lens", "trace", listed["run_id"]), "chat/2/reply")
    assert [e["kind"] for e in events] == ["agent.call", "agent.prompt", "agent.cut", "agent.reply"]
    assert events[2]["payload"]["received"] == "Reply 2 part one, "
    assert events[3]["payload"]["output"] == WHOLE and events[3]["payload"]["attempts"] == 2
    plain = words(chat.flujo("lens", "trace", listed["run_id"], "--step", "chat/2/reply").stdout)
    assert "1 attempt cut off · 2 attempts" in plain
    assert "✂ cut off Reply 2 part one, (attempt 1 of 3, 18 characters received:" in plain
    assert "→ reply Reply 2 part one, part two." in plain


@dataclass(frozen=True)
class LoopbackModel(LocalModel):
    """The local model's server stood in for by the fake server: ``model: local`` speaks the OpenAI
    protocol to an llama.cpp server on 127.0.0.1; a cut from the real one cannot be provoked on demand."""

    url: str = ""

    def base_url(self) -> str:
        return self.url


async def test_the_local_models_stream_goes_through_the_same_end_check(fake_llm: FakeLLM) -> None:
    info = GGUFInfo("loopback", None, 2048, 1)
    local = LoopbackModel(Path("loopback.gguf"), info, LocalSettings(), url=fake_llm.openai_url)
    endpoint = Endpoint(
        label="local model loopback",
        base_url="http://127.0.0.1",
        timeout=10,
        max_retries=1,
        headers={"Connection": "close"},
        backoff=Backoff(base_delay=0.001, max_delay=0.05),
        agent="smol",
    )
    agent = LocalChatAgent(AgentSpec(name="smol", model="local"), endpoint, local, prompt_budget=None)
    cut_reply(fake_llm)
    fake_llm.reply(WHOLE, chunks=PARTS)
    heard: list[Retry] = []
    reply = await agent.run(AgentCall(input="hi", step="s", on_text=lambda text: None, on_retry=heard.append))
    assert reply.output == WHOLE and [r.cut for r in heard] == ["Reply 2 part one, "]

    cut_reply(fake_llm)
    cut_reply(fake_llm)
    with pytest.raises(ReplyCutOff) as caught:
        await agent.run(AgentCall(input="hi", step="s", on_text=lambda text: None))
    assert caught.value.message.startswith("agents.smol (local model loopback): the reply from ")
    assert caught.value.attempts == 2
