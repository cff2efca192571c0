"""The local model's thread defaults against the other settings and llama.cpp's own defaults, idle and beside two
busy loops (``benchmarks/local_defaults.py``), and what flujo adds over calling xllamacpp directly
(``benchmarks/local_overhead.py``); issue 36, item 5. The medians are in each benchmark's ``extra_info`` and
docs/performance.md; nothing timed is asserted (the machine is shared).

``make bench`` runs the whole sitting (10 rounds of every candidate, idle and busy: tens of minutes on a busy
2-core machine); ``make test`` runs one idle round of two candidates and one round of the overhead, to check
that both scripts still work.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import local_defaults, local_overhead, sizes
from benchmarks.sizes import size

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(size(4 * 3600, 600)),  # the whole sitting is long (FULL is set before collection)
    pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="xllamacpp is not installed"),
]


def test_thread_settings_idle_and_busy(benchmark: BenchmarkFixture) -> None:
    candidates = local_defaults.MEASURED if sizes.FULL else ("g1b1", "llama.cpp")
    tokens = size(local_defaults.GENERATED, 4)
    runs = benchmark.pedantic(
        local_defaults.sitting, args=(candidates, size(10, 1), tokens), kwargs={"busy": sizes.FULL}, rounds=1
    )
    assert {run.candidate for run in runs} == set(candidates)
    assert all(200 < run.prompt_tokens < 500 for run in runs), "a conversation of a few hundred tokens"
    summaries = local_defaults.summarise(runs)
    benchmark.extra_info["medians"] = [asdict(summary) for summary in summaries]
    print("\n" + local_defaults.table(summaries))


def test_flujo_over_xllamacpp_directly(benchmark: BenchmarkFixture) -> None:
    overhead = benchmark.pedantic(local_overhead.sitting, args=(size(10, 1),), rounds=1)
    benchmark.extra_info.update(
        {"wall_ratio": overhead.wall_ratio, "cpu_ratio": overhead.cpu_ratio, "rss_added_mb": overhead.rss_added_mb}
        | {f"{kind}_wall_s": overhead.median(kind, "wall_s") for kind in local_overhead.KINDS}
        | {f"{kind}_cpu_s": overhead.median(kind, "cpu_s") for kind in local_overhead.KINDS}
        | {f"{kind}_max_rss_mb": overhead.median(kind, "max_rss_mb") for kind in local_overhead.KINDS}
    )
    assert overhead.median("direct", "max_rss_mb") > 0
    print(f"\nflujo / direct: wall {overhead.wall_ratio:.2f}×, RSS +{overhead.rss_added_mb:.0f} MB")
