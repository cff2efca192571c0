"""``model: local`` on this machine: model load, first token, tokens/s at 1 and 2 threads, RSS.

Targets (SmolLM2-135M-Instruct Q4_1, the default model): load ≤ 1 s, first token ≤ 0.3 s for a prompt under
50 tokens, ≥ 50 tokens/s at 1 thread, RSS of a whole ``flujo run`` ≤ 400 MB. Each benchmark starts fresh
servers (``LocalModel._start``, not the per-process cache). Prompts are sent with
``cache_prompt: false`` so every round reads its prompt again. Run with ``make bench``; the figures are in
docs/performance.md.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from core.agents.local_server import LocalModel
from core.settings.config import LocalSettings

pytestmark = pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="xllamacpp is not installed")

ROOT = Path(__file__).resolve().parents[1]
SHORT = [{"role": "user", "content": "Give me one tip for learning a new language."}]  # 39 tokens templated
GENERATED = 128


def _model(threads: int) -> LocalModel:
    return LocalModel.resolve(None, LocalSettings(threads=threads, parallel=1))


def _first_token(base_url: str) -> tuple[float, int]:
    """Seconds to the first streamed text, and the prompt's tokens."""
    body = {"messages": SHORT, "max_tokens": 8, "stream": True, "cache_prompt": False, "temperature": 0}
    body["stream_options"] = {"include_usage": True}
    started = time.perf_counter()
    first: float | None = None
    prompt_tokens = 0
    with (
        httpx.Client(timeout=60, headers={"Connection": "close"}) as client,
        client.stream("POST", f"{base_url}/chat/completions", json=body) as response,
    ):
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk: dict[str, Any] = json.loads(line[6:])
            delta = (chunk.get("choices") or [{}])[0].get("delta") or {}
            if first is None and delta.get("content"):
                first = time.perf_counter() - started
            if chunk.get("usage"):
                prompt_tokens = chunk["usage"]["prompt_tokens"]
    assert first is not None
    return first, prompt_tokens


def _generate(base_url: str) -> float:
    """Tokens per second of a 128-token reply, as the server timed its generation."""
    body = {"messages": SHORT, "max_tokens": GENERATED, "ignore_eos": True, "temperature": 0.7}
    # Long: on a busy 2-core machine two threads can fall to a few tokens/s (docs/performance.md).
    with httpx.Client(timeout=600, headers={"Connection": "close"}) as client:
        data = client.post(f"{base_url}/chat/completions", json=body).json()
    timings = data["timings"]
    assert timings["predicted_n"] == GENERATED
    return float(timings["predicted_per_second"])


def test_model_load(benchmark: BenchmarkFixture) -> None:
    model = _model(1)

    def load() -> None:
        model._start()  # each server lives until the process exits (core/agents/local_server.py says why)

    benchmark.pedantic(load, rounds=5, warmup_rounds=1)


def test_first_token(benchmark: BenchmarkFixture) -> None:
    """The benchmark's time is the whole 8-token reply; the first token's time is in extra_info."""
    _, base_url = _model(1)._start()
    firsts: list[float] = []

    def once() -> None:
        seconds, tokens = _first_token(base_url)
        assert tokens < 50
        firsts.append(seconds)

    benchmark.pedantic(once, rounds=10, warmup_rounds=1)
    firsts.sort()
    median = firsts[len(firsts) // 2]
    benchmark.extra_info.update({"first_token_s_median": median, "min": firsts[0], "max": firsts[-1]})
    print(f"\nfirst token: min {firsts[0]:.3f} s median {median:.3f} s max {firsts[-1]:.3f} s")


@pytest.mark.parametrize("threads", [1, 2])
def test_tokens_per_second(benchmark: BenchmarkFixture, threads: int) -> None:
    _, base_url = _model(threads)._start()
    rates: list[float] = []
    benchmark.pedantic(lambda: rates.append(_generate(base_url)), rounds=5, warmup_rounds=1)
    rates.sort()
    benchmark.extra_info.update(
        {"tokens": GENERATED, "tok_s_median": rates[len(rates) // 2], "tok_s_min": rates[0], "tok_s_max": rates[-1]}
    )
    print(f"\n{threads} thread(s): tokens/s min {rates[0]:.1f} median {rates[len(rates) // 2]:.1f} max {rates[-1]:.1f}")


def test_rss_of_a_chat_run(benchmark: BenchmarkFixture, tmp_path: Path) -> None:
    """Peak RSS of a whole ``flujo run`` of the default chat (two replies). A small Python parent runs it and
    reports its child's maxrss: forking this process (which holds the other benchmarks' servers) would
    count their pages too."""
    argv = [sys.executable, "-m", "flujo_cli.main", "run", str(ROOT / "blueprints/examples/chat.yaml")]
    argv += ["-a", "Hi! What can you do?", "-a", "What is the biggest ocean?", "-a", "bye"]
    measure = (
        "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True);"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    env = {**os.environ, "FLUJO_STATE_URI": str(tmp_path / "bench.db"), "PYTHONPATH": str(ROOT)}
    done = benchmark.pedantic(
        subprocess.run,
        args=([sys.executable, "-c", measure, *argv],),
        kwargs={"env": env, "capture_output": True},
        rounds=1,
    )
    code, rss_kb = done.stdout.split()
    assert code == b"0", done.stderr
    rss_mb = int(rss_kb) / 1024
    benchmark.extra_info["max_rss_mb"] = round(rss_mb)
    print(f"\npeak RSS of flujo run chat.yaml: {rss_mb:.0f} MB")
