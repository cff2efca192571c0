"""A prompt whose system prompt and message alone cannot fit the agent's context window (minus the reply
reserve) is refused before the call: one clear line, exit code 8, the same error in ``--json``, and nothing
sent to the provider — whether the input is too large at the start or an earlier step's output is, mid-run.
Against the fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo_process
from tests.support.fakes.openai_server import FakeLLM

SMALL = """\
version: "0.1"
agents:
  small:
    model: openai:local-small
    system_prompt: "Summarise what you are given."
    context_window: 100
    model_settings: {max_tokens: 40}
steps:
  - {kind: step, name: summarise, uses: agents.small}
"""

TWO_STEPS = """\
version: "0.1"
agents:
  big:
    model: openai:local-big
  small:
    model: openai:local-small
    context_window: 100
    model_settings: {max_tokens: 40}
steps:
  - {kind: step, name: write, uses: agents.big}
  - {kind: step, name: summarise, uses: agents.small}
"""

WORDS = " ".join(f"word{i}" for i in range(2000))


def _run(tmp_path: Path, fake: FakeLLM, text: str, *args: str) -> tuple[int, str, str]:
    (tmp_path / "bp.yaml").write_text(text, encoding="utf-8")
    env = {**fake.env(), "FLUJO_STATE_URI": str(tmp_path / "flujo.db")}
    done = flujo_process(["run", str(tmp_path / "bp.yaml"), *args], env=env)
    return done.returncode, done.stdout, done.stderr


def test_an_input_too_large_for_the_window_is_refused_before_the_call(tmp_path: Path, fake_llm: FakeLLM) -> None:
    code, _, err = _run(tmp_path, fake_llm, SMALL, "--input", WORDS)
    assert code == exit_codes.PROMPT_TOO_LARGE == 8, err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert "step 'summarise' was not sent to openai:local-small" in line
    assert "but the agent has room for 60 (its context window minus the tokens kept for the reply)" in line
    assert "hint: shorten the step's input or system prompt, or set the agent's context_window" in err
    assert "Traceback" not in err
    assert fake_llm.requests == []

    code, out, _ = _run(tmp_path, fake_llm, SMALL, "--input", WORDS, "--json")
    assert code == exit_codes.PROMPT_TOO_LARGE
    result = json.loads(out)
    assert result["status"] == "failed" and result["failed_step"] == "summarise"
    assert result["error"] in line
    assert fake_llm.requests == []


def test_an_earlier_steps_output_too_large_is_refused_mid_run(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply(WORDS)
    code, _, err = _run(tmp_path, fake_llm, TWO_STEPS, "--input", "write a lot")
    assert code == exit_codes.PROMPT_TOO_LARGE, err
    assert "step 'summarise' was not sent to openai:local-small" in err
    assert len(fake_llm.requests) == 1  # the first step's call only


def test_a_prompt_that_fits_is_sent(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.reply("short")
    code, out, err = _run(tmp_path, fake_llm, SMALL, "--input", "three small words")
    assert code == exit_codes.OK, err
    assert out.strip() == "short" and len(fake_llm.requests) == 1
