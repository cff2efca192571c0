"""Runs sent to an OpenTelemetry collector (docs/observability.md), through the real CLI: an OTLP/HTTP receiver
on 127.0.0.1 started by the test (``tests/support/fakes/otlp_receiver.py``) decodes what flujo sends.

A conversation with a tool call and a human question, its model served by the loopback OpenAI server: sent live
as the run ends when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (the span tree, the GenAI attributes, the thread as
the session, content only when asked and then masked); sent again by ``flujo lens export RUN --otlp`` as the
same trace; a paused run resumed, each process sending its own part once; an unreachable collector that fails
nothing; the command line's mistakes; and no OpenTelemetry module imported by a run that sends nothing.
Every wait is for an event (the receiver's spans), never for time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo, flujo_process
from tests.support.fakes.openai_server import FakeLLM
from tests.support.fakes.otlp_receiver import OtlpReceiver, ReceivedSpan

SECRET = "shop-secret-7c1d9e2f4a"
TOOLS = '''\
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''
BLUEPRINT = """\
version: "0.1"
name: helpdesk
tools:
  add: {python: "otel_cli_calc:add"}
agents:
  helper:
    model: openai:gpt-4o-mini
    system_prompt: "Help the user; add with the tool."
    tools: [add]
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 1
      body:
        - {kind: step, name: reply, uses: agents.helper}
        - {kind: hitl, name: ask, message: "Anything else?"}
"""
SPANS = 5  # the run, the agent step, its two model calls and its tool call
CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


@pytest.fixture
def helpdesk(tmp_path: Path, state_db: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The blueprint, its tool, the model scripted (a tool call, then the answer) and a secret in the
    environment (so that flujo masks its value)."""
    (tmp_path / "otel_cli_calc.py").write_text(TOOLS, encoding="utf-8")
    flow = tmp_path / "helpdesk.yaml"
    flow.write_text(BLUEPRINT, encoding="utf-8")
    for name, value in fake_llm.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SHOP_API_KEY", SECRET)
    fake_llm.reply("", tool_calls=[("add", {"a": 2, "b": 3})], usage=(30, 4))
    fake_llm.reply("2 + 3 is 5.", usage=(42, 6))
    return flow


def _run(flow: Path, *more: str) -> dict[str, Any]:
    code, out, err = flujo(["run", str(flow), "--input", f"My key is {SECRET}. What is 2 + 3?", *more, "--json"])
    assert code in (exit_codes.OK, exit_codes.PAUSED), err
    assert "warning" not in err, err
    result: dict[str, Any] = json.loads(out)
    return result


def _one(spans: list[ReceivedSpan], prefix: str) -> ReceivedSpan:
    [found] = [span for span in spans if span.name.startswith(prefix)]
    return found


def test_a_run_is_sent_live_as_a_tree_of_genai_spans(helpdesk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with OtlpReceiver() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        result = _run(helpdesk, "--answer", "no, thanks", "--thread", "desk-7")
        assert result["status"] == "completed"
        spans = collector.wait_for_spans(SPANS)

    assert len(spans) == SPANS
    run = _one(spans, "invoke_workflow helpdesk")
    agent = _one(spans, "invoke_agent reply")
    tool = _one(spans, "execute_tool add")
    calls = collector.named("chat gpt-4o-mini")
    assert run.parent_id is None and agent.parent_id == run.span_id
    assert [call.parent_id for call in calls] == [agent.span_id, agent.span_id] and tool.parent_id == agent.span_id
    assert {span.trace_id for span in spans} == {result["run_id"] + "0" * 16}
    assert run.resource["service.name"] == "flujo"

    assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert run.attributes["flujo.run.id"] == result["run_id"] and run.attributes["flujo.run.status"] == "completed"
    assert (run.attributes["gen_ai.usage.input_tokens"], run.attributes["gen_ai.usage.output_tokens"]) == (72, 10)
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "reply"
    for call, tokens in zip(calls, [(30, 4), (42, 6)], strict=True):
        assert call.kind == 3  # CLIENT
        assert call.attributes["gen_ai.operation.name"] == "chat"
        assert call.attributes["gen_ai.provider.name"] == "openai"
        assert call.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert (call.attributes["gen_ai.usage.input_tokens"], call.attributes["gen_ai.usage.output_tokens"]) == tokens
    assert calls[0].attributes["flujo.step.path"] == "chat/1/reply/model/1"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "add" and isinstance(tool.attributes["gen_ai.tool.call.id"], str)
    # The person's answer: an event of the run's span, with the question's path and how long it waited.
    [question] = run.events
    assert question.name == "flujo.question" and question.attributes["flujo.step.path"] == "chat/1/ask"
    assert question.attributes["flujo.wait_s"] >= 0
    # The thread is the session; no message content is sent unless asked for.
    for span in spans:
        assert span.attributes["session.id"] == "desk-7", span.name
        assert not [name for name in CONTENT if name in span.attributes], span.name
        assert "flujo.question.message" not in json.dumps([dict(e.attributes) for e in span.events])


def test_content_is_sent_when_asked_and_masked_as_lens_shows_it(
    helpdesk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OtlpReceiver() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        _run(helpdesk, "--answer", f"my other key is {SECRET}")
        spans = collector.wait_for_spans(SPANS)

    sent = json.dumps([[dict(s.attributes), [dict(e.attributes) for e in s.events]] for s in spans])
    assert SECRET not in sent
    first = collector.named("chat gpt-4o-mini")[0].content()
    assert first["gen_ai.input.messages"] == [
        {"role": "system", "parts": [{"type": "text", "content": "Help the user; add with the tool."}]},
        {"role": "user", "parts": [{"type": "text", "content": "My key is [REDACTED]. What is 2 + 3?"}]},
    ]
    [asked_for] = first["gen_ai.output.messages"][0]["parts"]
    assert (asked_for["type"], asked_for["name"], asked_for["arguments"]) == ("tool_call", "add", {"a": 2, "b": 3})
    tool = _one(spans, "execute_tool add")
    assert tool.content()["gen_ai.tool.call.arguments"] == {"a": 2, "b": 3}
    assert tool.attributes["gen_ai.tool.call.result"] == "5"
    [question] = _one(spans, "invoke_workflow").events
    assert question.attributes["flujo.question.message"] == "Anything else?"
    assert question.attributes["flujo.question.answer"] == "my other key is [REDACTED]"


def test_lens_export_sends_the_same_trace_again(helpdesk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with OtlpReceiver() as live:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", live.url)
        result = _run(helpdesk, "--answer", "no")
        live_spans = live.wait_for_spans(SPANS)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")

    def shape(spans: list[ReceivedSpan]) -> list[tuple[Any, ...]]:
        return sorted((s.name, s.trace_id, s.span_id, s.parent_id, s.start_ns, s.end_ns) for s in spans)

    with OtlpReceiver() as later:
        code, out, err = flujo(["lens", "export", result["run_id"][:6], "--otlp", later.url])
        assert code == exit_codes.OK, err
        assert shape(later.wait_for_spans(SPANS)) == shape(live_spans)
    trace = result["run_id"] + "0" * 16
    assert out == f"run {result['run_id']}: {SPANS} spans sent to {later.url}/v1/traces (trace {trace})\n"

    # --otlp without a value: the configured collector (flujo.toml here), the run id after the option.
    with OtlpReceiver() as configured:
        Path("flujo.toml").write_text(f'[otel]\nendpoint = "{configured.url}"\n', encoding="utf-8")
        code, out, err = flujo(["lens", "export", "--otlp", result["run_id"]])
        assert code == exit_codes.OK, err
        assert shape(configured.wait_for_spans(SPANS)) == shape(live_spans)


def test_a_paused_run_and_its_resume_each_send_their_own_spans_once(
    helpdesk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OtlpReceiver() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        paused = _run(helpdesk, "--no-input")
        assert paused["status"] == "paused"
        first = collector.wait_for_spans(SPANS - 1)  # all but the run's: it has not ended
        assert not [span for span in first if span.name.startswith("invoke_workflow")]
        code, _, err = flujo(["resume", paused["run_id"], "--answer", "no"])
        assert code == exit_codes.OK, err
        spans = collector.wait_for_spans(SPANS)
    assert len({span.span_id for span in spans}) == len(spans) == SPANS
    run = _one(spans, "invoke_workflow")
    assert [event.attributes["flujo.step.path"] for event in run.events] == ["chat/1/ask"]


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_collector_is_one_warning_line_and_the_run_goes_on(
    helpdesk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    code, out, err = flujo(["run", str(helpdesk), "--input", "What is 2 + 3?", "--answer", "no"])
    assert code == exit_codes.OK, err
    assert out == "no\n"
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("warning: the trace of run ") and f"was not sent to {url}/v1/traces" in warnings[0]
    assert "Connection refused" in warnings[0] and " lens export " in warnings[0] and "--otlp" in warnings[0]
    assert "Traceback" not in err and "Transient error" not in err


def test_lens_export_to_an_unreachable_collector_tries_again_then_says_so(
    helpdesk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(helpdesk, "--answer", "no")
    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("FLUJO_OTEL__TIMEOUT_S", "1.5")  # retried until then (the SDK's backoff: 1 s)
    code, out, err = flujo(["lens", "export", result["run_id"], "--otlp", url])
    assert code == exit_codes.CONFIG
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == f"error: could not send the trace to {url}/v1/traces: Connection refused"
    assert lines[1].startswith("hint: no span was sent") and len(lines) == 2
    assert lines[1].endswith("(tried again for up to 1.5 s: [otel] timeout_s)")  # up to: the SDK may stop before


class _SilentCollector:
    """A collector that takes connections and never answers: what a hung collector (or a firewall that drops
    replies) looks like to the exporter. ``url`` for flujo; ``called()`` waits until a request is on its way."""

    def __init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._taken: list[socket.socket] = []

    def called(self) -> None:
        self._taken.append(self._listener.accept()[0])  # an event: a sender connected (no time limit of its own)

    def __enter__(self) -> _SilentCollector:
        return self

    def __exit__(self, *_: object) -> None:
        for connection in [*self._taken, self._listener]:
            connection.close()


def _started(args: list[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_ctrl_c_stops_lens_export_waiting_for_a_collector_that_does_not_answer(helpdesk: Path) -> None:
    """Ctrl-C ends the export at once (exit 130), not after ``[otel] timeout_s`` of waiting (here an hour,
    which the test's time limit would end first)."""
    result = _run(helpdesk, "--answer", "no")
    with _SilentCollector() as collector:
        process = _started(["lens", "export", result["run_id"], "--otlp", collector.url], FLUJO_OTEL__TIMEOUT_S="3600")
        collector.called()  # the trace is on its way: the export waits for an answer that never comes
        process.send_signal(signal.SIGINT)
        out, err = process.communicate()
    assert process.returncode == exit_codes.INTERRUPTED, err
    assert out == "" and "Traceback" not in err


def test_ctrl_c_while_a_finished_run_waits_for_its_trace_stops_the_wait_not_the_run(helpdesk: Path) -> None:
    """The run completed and printed its output; Ctrl-C during the wait for its spans is said in the warning
    line, and the command ends as the run did (exit 0), not as an interrupted run to resume."""
    with _SilentCollector() as collector:
        process = _started(
            ["run", str(helpdesk), "--input", "What is 2 + 3?", "--answer", "no"],
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
        )
        assert process.stdout is not None
        assert process.stdout.readline() == "no\n"  # the run is over, its output printed
        collector.called()  # its spans are on their way, and flujo waits for them
        process.send_signal(signal.SIGINT)
        _, err = process.communicate()
    assert process.returncode == exit_codes.OK, err
    [warning] = [line for line in err.splitlines() if line.startswith("warning:")]
    # Interrupted, as a rule; on a machine slow enough for the 3 s wait to end first, not answered in time.
    assert "was not sent to" in warning, err
    assert "the wait for the collector was interrupted" in warning or "did not answer within" in warning, err
    assert "resume" not in err and "error:" not in err, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "error: say which format to export: lens export takes one format option"),
        (
            ["--case", "x.case.yaml", "--otlp", "http://localhost:4318"],
            "error: lens export takes exactly one format option per call; --case and --otlp were given",
        ),
        (["--otlp"], "error: --otlp needs a collector: none is given and none is configured"),
        (["--otlp", "localhost:4318"], "error: --otlp 'localhost:4318' is not an http:// or https:// URL"),
    ],
)
def test_lens_export_s_command_line_mistakes_are_exit_2(args: list[str], message: str, state_db: Path) -> None:
    code, out, err = flujo(["lens", "export", "0123abcd", *args])
    assert code == exit_codes.USAGE
    assert (out, err.splitlines()[0]) == ("", message)


def test_lens_export_of_a_run_of_one_span_says_one_span(tmp_path: Path, state_db: Path) -> None:
    flow = tmp_path / "ask.yaml"
    flow.write_text('version: "0.1"\nname: ask\nsteps:\n  - {kind: hitl, name: q, message: "Name?"}\n', "utf-8")
    code, out, err = flujo(["run", str(flow), "--no-input", "--json"])  # paused at its first question
    assert code == exit_codes.PAUSED, err
    run_id = json.loads(out)["run_id"]
    with OtlpReceiver() as collector:
        code, out, err = flujo(["lens", "export", run_id, "--otlp", collector.url])
        collector.wait_for_spans(1)
    assert code == exit_codes.OK, err
    assert out == f"run {run_id}: 1 span sent to {collector.url}/v1/traces (trace {run_id}{'0' * 16})\n"


def test_lens_export_of_no_run_is_exit_1(helpdesk: Path) -> None:
    _run(helpdesk, "--answer", "no")
    with OtlpReceiver() as collector:
        code, _, err = flujo(["lens", "export", "0123abcd", "--otlp", collector.url])
        assert code == exit_codes.FAILED
        assert err.startswith("error: no run matches '0123abcd' in ")
        assert collector.requests == 0


# flujo run in a process of its own, which then says which OpenTelemetry modules it imported (the first).
SPY = """\
import runpy, sys
sys.argv = ["flujo", *sys.argv[1:]]
try:
    runpy.run_module("flujo_cli.main", run_name="__main__")
finally:
    print("otel modules:", sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")[:1], file=sys.stderr)
"""


def _spy(flow: Path, env: dict[str, str], *more: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SPY, "run", str(flow), "--input", "What is 2 + 3?", "--answer", "no", *more],
        capture_output=True, text=True, env=env, cwd=flow.parent, check=False,
    )  # fmt: skip
    assert done.returncode == exit_codes.OK and done.stdout == "no\n", done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("otel modules:")]
    return line


def test_a_run_that_sends_nothing_imports_no_opentelemetry_module(
    helpdesk: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert _spy(helpdesk, env) == "otel modules: []"
    fake_llm.reply("", tool_calls=[("add", {"a": 2, "b": 3})])
    fake_llm.reply("no")
    with OtlpReceiver() as collector:  # the same run, sending: OpenTelemetry is imported then
        assert (
            _spy(helpdesk, {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}) == "otel modules: ['opentelemetry']"
        )
        collector.wait_for_spans(SPANS)


def test_without_the_otel_extra_a_run_warns_and_lens_export_says_how_to_install_it(
    helpdesk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extra missing, as Python sees it: ``opentelemetry`` cannot be imported (sys.modules holds None)."""
    hidden = "import sys, runpy; sys.modules['opentelemetry'] = None; sys.argv = ['flujo', *sys.argv[1:]]; " + (
        "runpy.run_module('flujo_cli.main', run_name='__main__')"
    )
    import os

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    done = subprocess.run(
        [sys.executable, "-c", hidden, "run", str(helpdesk), "--input", "2 + 3?", "--answer", "no"],
        capture_output=True, text=True, env=env, cwd=helpdesk.parent, check=False,
    )  # fmt: skip
    assert done.returncode == exit_codes.OK and done.stdout == "no\n", done.stderr
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert warning == (
        "warning: runs are not sent to http://127.0.0.1:4318: the otel extra is not installed"
        " (pip install 'flujo-runner[otel]')"
    )
    run_id = flujo_process(["lens", "list", "--json"], cwd=helpdesk.parent).stdout
    first = json.loads(run_id)["runs"][0]["run_id"]
    done = subprocess.run(
        [sys.executable, "-c", hidden, "lens", "export", first, "--otlp"],
        capture_output=True, text=True, env=env, cwd=helpdesk.parent, check=False,
    )  # fmt: skip
    assert done.returncode == exit_codes.CONFIG
    assert done.stderr.splitlines() == [
        "error: sending traces needs the otel extra, which is not installed",
        "hint: install it: pip install 'flujo-runner[otel]'",
    ]


def test_a_worker_sends_each_run_it_executes(helpdesk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = helpdesk.parent / "answers.json"
    answers.write_text('["no"]', encoding="utf-8")
    code, out, err = flujo(["submit", str(helpdesk), "--input", "What is 2 + 3?", "--answers", str(answers), "--json"])
    assert code == exit_codes.OK, err
    [run_id] = json.loads(out)["queued"]
    with OtlpReceiver() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        code, _, err = flujo(["worker", "--until-idle"])
        assert code == exit_codes.OK, err
        spans = collector.wait_for_spans(SPANS)
    assert {span.trace_id for span in spans} == {run_id + "0" * 16}
    assert _one(spans, "invoke_workflow").attributes["flujo.run.status"] == "completed"


SUB = """\
version: "0.1"
name: shout
agents:
  loud: {model: scripted, replies: ["HI!"]}
steps:
  - {kind: step, name: shout_it, uses: agents.loud}
"""
CALLER = """\
version: "0.1"
name: caller
imports: {shout: shout.yaml}
tools:
  shout: {workflow: imports.shout, description: "Shout a text"}
agents:
  caller:
    model: scripted
    tools: [shout]
    replies:
      - {tool: shout, arguments: {text: hi}}
      - "It shouted."
steps:
  - {kind: step, name: ask, uses: agents.caller}
"""


def test_a_sub_workflow_s_run_is_in_the_trace_under_the_call_that_ran_it(
    tmp_path: Path, state_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shout.yaml").write_text(SUB, encoding="utf-8")
    (tmp_path / "caller.yaml").write_text(CALLER, encoding="utf-8")
    with OtlpReceiver() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        code, out, err = flujo(["run", str(tmp_path / "caller.yaml"), "--input", "go", "--json"])
        assert code == exit_codes.OK, err
        spans = collector.wait_for_spans(8)  # 2 runs, 2 agent steps, 3 model calls, 1 tool call
    assert len(spans) == 8
    parent_of = {span.span_id: span.parent_id for span in spans}
    child_run = _one(spans, "invoke_workflow shout")
    call = _one(spans, "execute_tool shout")
    assert child_run.parent_id == call.span_id
    assert parent_of[call.span_id] == _one(spans, "invoke_agent ask").span_id
    assert _one(spans, "invoke_agent shout_it").parent_id == child_run.span_id
    assert {span.trace_id for span in spans} == {json.loads(out)["run_id"] + "0" * 16}
    assert child_run.attributes["flujo.run.parent_id"] == json.loads(out)["run_id"]
