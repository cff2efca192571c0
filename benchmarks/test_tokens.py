"""Token counting (core.text.tokens): what loading an encoding costs, and what counting a conversation costs.

Run with ``make bench`` (``-k tokens`` for these only); the figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from core import ChatMessage
from core.text import ascii_tokens
from core.text.tokens import EncodingName, _load_encoding, count_messages, count_tokens

ROOT = Path(__file__).resolve().parents[1]

# Conversation-like text of several kinds (prose, code, JSON, CJK, emoji), cut into ~200-character turns.
_SAMPLES = (
    "Could you plan a three-day trip to Lisbon for my family in June? We like museums, long walks and good "
    "food, but the kids get tired after lunch, so keep the afternoons light and tell me where to book ahead. ",
    "def summarise(turns: list[str], budget: int) -> list[str]:\n    kept = []\n    for turn in reversed(turns):\n"
    "        if (budget := budget - count_tokens(turn)) < 0:\n            break\n        kept.append(turn)\n",
    '{"step": "clarify", "status": "completed", "output": {"goal": "Plan a trip", "people": 4, "month": "June", '
    '"budget_eur": 2500.0, "tags": ["family", "museums", "food"]}, "usage": {"input_tokens": 812}} ',
    "Python（派森）语言是一种功能强大而完善的通用型计算机程序设计语言，已经具有十多年的发展历史，成熟且稳定。"
    "Python の開発は、1990 年ごろから開始されています。안녕하세요, 만나서 반갑습니다. ",
    "Great, thanks! 🎉 I'll pass it on to the team 👋 — one more thing: can we move the museum to day two? ✅ ",
)
_TEXT = "".join(itertools.islice(itertools.cycle(_SAMPLES), 1500))  # ~245,000 characters
TURNS = [_TEXT[i : i + 200] for i in range(0, 200 * 1000, 200)]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_load_encoding(benchmark: BenchmarkFixture, name: EncodingName) -> None:
    """Read the shipped .gz, check its sha256, parse the ranks, build tiktoken's CoreBPE (uncached)."""
    encoding = benchmark.pedantic(_load_encoding, args=(name,), rounds=7, iterations=1)
    assert encoding.n_vocab > 100_000


@pytest.mark.parametrize("model", [None, "openai:gpt-4"])
def test_count_1000_turns(benchmark: BenchmarkFixture, model: str | None) -> None:
    """1,000 turns of 200 characters, one count_tokens call each (the encoding already loaded)."""
    assert len(TURNS) == 1000 and all(len(turn) == 200 for turn in TURNS)
    count_tokens("warm up", model)
    total = benchmark(lambda: sum(count_tokens(turn, model) for turn in TURNS))
    assert total > 40_000


def test_count_messages_1000_turns(benchmark: BenchmarkFixture) -> None:
    """The same 1,000 turns as one chat prompt (overhead and role tokens included)."""
    messages = [ChatMessage("user" if i % 2 else "assistant", turn) for i, turn in enumerate(TURNS)]
    count_messages(messages[:1])
    total = benchmark(count_messages, messages)
    assert total > 40_000


def test_first_count_in_a_fresh_process(benchmark: BenchmarkFixture) -> None:
    """What a run that counts text beyond ASCII pays once: interpreter, ``import core.text.tokens`` (core's
    package import), import tiktoken, load o200k_base, count. Compare with the last benchmark, which stops
    before tiktoken, and the next, which counts ASCII text (core.text.ascii_tokens)."""
    argv = [sys.executable, "-c", "from core.text.tokens import count_tokens; assert count_tokens('¿hola?') == 3"]
    result = benchmark.pedantic(subprocess.run, args=(argv,), kwargs=_subprocess_kwargs(), rounds=7)
    assert result.returncode == 0, result.stderr


def test_first_ascii_count_in_a_fresh_process(benchmark: BenchmarkFixture) -> None:
    """The same for ASCII text: core.text.ascii_tokens loads its table and counts; tiktoken is never imported."""
    code = "import sys; from core.text.tokens import count_tokens; assert count_tokens('hello world') == 2"
    argv = [sys.executable, "-c", f"{code}; assert 'tiktoken' not in sys.modules"]
    result = benchmark.pedantic(subprocess.run, args=(argv,), kwargs=_subprocess_kwargs(), rounds=7)
    assert result.returncode == 0, result.stderr


def test_load_ascii_table(benchmark: BenchmarkFixture) -> None:
    """Map the shipped table of o200k_base's ASCII tokens, check its sha256, build the counter (uncached)."""
    counter = benchmark.pedantic(ascii_tokens.load, rounds=7, iterations=1)
    assert counter.count("hello world") == 2


ASCII_TURNS = [turn for turn in TURNS if turn.isascii()]


def test_count_1000_ascii_turns(benchmark: BenchmarkFixture) -> None:
    """The ASCII turns of the 1,000 (prose, code, JSON), one count_tokens call each: counted by
    core.text.ascii_tokens, its table loaded and its pieces' counts remembered, as in a run that counts them."""
    assert len(ASCII_TURNS) > 500
    count_tokens("warm up")
    total = benchmark(lambda: sum(count_tokens(turn) for turn in ASCII_TURNS))
    assert total > 20_000


def test_import_without_counting_in_a_fresh_process(benchmark: BenchmarkFixture) -> None:
    argv = [sys.executable, "-c", "import sys, core.text.tokens; assert 'tiktoken' not in sys.modules"]
    result = benchmark.pedantic(subprocess.run, args=(argv,), kwargs=_subprocess_kwargs(), rounds=7)
    assert result.returncode == 0, result.stderr


def _subprocess_kwargs() -> dict[str, object]:
    return {"env": {**os.environ, "PYTHONPATH": str(ROOT)}, "capture_output": True, "text": True, "cwd": ROOT}
