"""A big input never takes memory out of proportion to its size: counting its tokens (a run's token limit,
a conversation's history bound) once took ~50 times the input (docs/performance.md, "Token counting")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.peak_memory import flujo_peak_rss

SIZE = 10_000_000  # characters of one letter: one 10 MB piece for the tokenizer, its worst case
LIMITED = """\
version: "0.1"
agents: {e: {model: echo}}
limits: {max_tokens: 100000000}
steps: [{kind: step, name: s, uses: agents.e}]
"""
CONVERSATION = """\
version: "0.1"
agents: {e: {model: echo}}
steps:
  - kind: loop
    name: talk
    loop:
      conversation: true
      max_loops: 2
      body: [{kind: step, name: s, uses: agents.e}]
"""


@pytest.mark.slow
@pytest.mark.parametrize("blueprint", [LIMITED, CONVERSATION], ids=["token-limit", "conversation"])
def test_a_big_input_counted_for_tokens_takes_a_few_times_its_size(tmp_path: Path, blueprint: str) -> None:
    (tmp_path / "flow.yaml").write_text(blueprint, encoding="utf-8")
    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    # Not ASCII, and over the history's bound (4,096 tokens): tiktoken is loaded, as for the big input.
    small.write_text("é" * 20_000, encoding="utf-8")
    big.write_text("B" * SIZE, encoding="ascii")
    args = ["run", "flow.yaml", "--input", "-"]
    code, baseline = flujo_peak_rss(args, stdin=small, cwd=tmp_path)
    assert code == 0
    code, peak = flujo_peak_rss(args, stdin=big, cwd=tmp_path)
    assert code == 0
    assert peak - baseline < 4 * SIZE  # about 1 times its size now; 46 times before
