"""What flujo adds to the local model: ``flujo run blueprints/examples/chat.yaml`` (two replies) against a
script that calls xllamacpp directly for the same two replies (issue 36, item 5; issue 15 measured 1.10× wall
and +31 MB).

- ``flujo``: ``python -m flujo_cli.main run blueprints/examples/chat.yaml -a "Hi! What can you do?" -a "What is
  the biggest ocean?" -a bye``, its run written to a SQLite store in a temporary folder;
- ``direct``: this module with ``--direct``: no flujo import; it starts ``xllamacpp.Server`` with the parameters
  flujo gives it (``core/agents/local_server.py``, passed on its command line), waits for ``/health`` and streams
  the same two chat completions (the blueprint's system prompt, worked examples and settings: temperature 0,
  at most 100 tokens) with the standard library, printing the replies.

Both are whole processes, alternated round by round (the first of each pair alternating too); the figures
are the medians of their wall-clock times, CPU times and peak RSS (``os.wait4``), and the ratios and
difference of the medians (CPU time moves less than wall-clock time with the machine's other work). Nothing
is downloaded::

    .venv/bin/python -m benchmarks.local_overhead --rounds 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHAT = ROOT / "blueprints/examples/chat.yaml"
ANSWERS = ("Hi! What can you do?", "What is the biggest ocean?")
SYSTEM = "You are SmolLM, a small and friendly assistant running on this computer. Reply in one or two short sentences."
EXAMPLES = (
    ("Hi!", "Hello! What would you like to talk about?"),
    ("What is the capital of Italy?", "The capital of Italy is Rome."),
    ("Give me a tip for sleeping well.", "Go to bed at the same time every night."),
)
KINDS = ("flujo", "direct")


def _reply(base_url: str, messages: list[dict[str, str]]) -> str:
    body = {"messages": messages, "temperature": 0, "max_tokens": 100, "stream": True}
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Connection": "close"},
    )
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    parts: list[str] = []
    with direct.open(request, timeout=900) as response:
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data: {"):
                chunk: dict[str, Any] = json.loads(line[6:])
                delta = (chunk.get("choices") or [{}])[0].get("delta") or {}
                parts.append(delta.get("content") or "")
                print(parts[-1], end="", flush=True)
    print()
    return "".join(parts)


def direct(model: str, threads: int, batch_threads: int) -> None:
    """The two replies through xllamacpp alone, with flujo's server parameters."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = 4096
    params.kv_unified = True
    params.n_parallel = 4
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = batch_threads
    params.n_gpu_layers = 0
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.ui = False
    params.verbosity = 0
    params.n_predict = 256
    params.sampling.penalty_repeat = 1.1
    params.sampling.dry_multiplier = 0.8
    server = xllamacpp.Server(params)
    address = str(server.listening_address).rstrip("/")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while True:
        try:
            with opener.open(f"{address}/health", timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.02)
    messages = [{"role": "system", "content": SYSTEM}]
    for user, assistant in EXAMPLES:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    for answer in ANSWERS:
        messages.append({"role": "user", "content": answer})
        messages.append({"role": "assistant", "content": _reply(f"{address}/v1", messages)})
    os._exit(0)  # as flujo does: the server's destructor can block (core/agents/local_server.py)


@dataclass
class Cost:
    wall_s: float
    cpu_s: float  # user + system, every thread of the process (the server's included)
    max_rss_mb: float


@dataclass
class Overhead:
    costs: dict[str, list[Cost]] = field(default_factory=lambda: {kind: [] for kind in KINDS})

    def median(self, kind: str, what: str) -> float:
        return float(statistics.median(float(getattr(cost, what)) for cost in self.costs[kind]))

    @property
    def wall_ratio(self) -> float:
        return self.median("flujo", "wall_s") / self.median("direct", "wall_s")

    @property
    def cpu_ratio(self) -> float:
        return self.median("flujo", "cpu_s") / self.median("direct", "cpu_s")

    @property
    def rss_added_mb(self) -> float:
        return self.median("flujo", "max_rss_mb") - self.median("direct", "max_rss_mb")


def _argv(kind: str) -> list[str]:
    if kind == "flujo":
        argv = [sys.executable, "-m", "flujo_cli.main", "run", str(CHAT)]
        for answer in (*ANSWERS, "bye"):
            argv += ["-a", answer]
        return argv
    from core.agents.local_server import default_model_path

    model = str(default_model_path())
    return [sys.executable, "-m", "benchmarks.local_overhead", "--direct", model, *map(str, _threads())]


def _threads() -> tuple[int, int]:
    """flujo's default threads on this machine, read as a ``model: local`` with no settings starts."""
    from core.agents.local_server import default_batch_threads, default_threads

    return default_threads(), default_batch_threads()


def run(kind: str, store: Path) -> Cost:
    """One ``kind`` process: its wall-clock time and peak RSS (its own, from ``os.wait4``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(store)}
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(_argv(kind), env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{kind} failed ({child.returncode}): {err.read().decode()[-2000:]}")
    return Cost(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def sitting(rounds: int) -> Overhead:
    overhead = Overhead()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "runs.db"
        run("flujo", store)  # creates the store, compiles what the first run imports
        for index in range(rounds):
            for kind in KINDS if index % 2 == 0 else reversed(KINDS):
                overhead.costs[kind].append(run(kind, store))
    return overhead


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--direct", nargs=3, metavar=("MODEL", "THREADS", "BATCH_THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.direct:
        direct(args.direct[0], int(args.direct[1]), int(args.direct[2]))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    overhead = sitting(args.rounds)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    for kind in KINDS:
        walls = sorted(cost.wall_s for cost in overhead.costs[kind])
        print(
            f"{kind}: wall median {overhead.median(kind, 'wall_s'):.2f} s ({walls[0]:.2f}–{walls[-1]:.2f}), "
            f"CPU median {overhead.median(kind, 'cpu_s'):.2f} s, "
            f"peak RSS median {overhead.median(kind, 'max_rss_mb'):.0f} MB"
        )
    print(
        f"flujo / direct: wall {overhead.wall_ratio:.2f}×, CPU {overhead.cpu_ratio:.2f}×, "
        f"RSS +{overhead.rss_added_mb:.0f} MB"
    )


if __name__ == "__main__":
    main()
