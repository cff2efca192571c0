"""Read the default chat's replies side by side: scripted conversations through ``flujo run``, printed.

``make run`` starts ``blueprints/examples/chat.yaml``, a conversation with the small model on this machine
(``model: local``). Whether it makes sense is judged by reading, so this runs about ten short
conversations a new user would plausibly type (a greeting, a factual question, cooking tonight, a follow-up
that needs the previous answer, a joke, thanks, bye) through the real blueprint with ``--answers`` and
prints each exchange, with marks for what is easy to see mechanically:

- ``ROLE``: a reply holds a role line (``User:``, ``Assistant:``, ``Smol:``...), the model talking as the person;
- ``REPEAT``: a reply says one sentence twice, or repeats the previous reply;
- ``LONG``: a reply of more than 60 words (the blueprint asks for one or two short sentences).

Usage (the model needs ``make install``)::

    .venv/bin/python -m benchmarks.chat_quality                       # the real blueprint
    .venv/bin/python -m benchmarks.chat_quality --blueprint other.yaml --seed 7
    .venv/bin/python -m benchmarks.chat_quality --set temperature=0.2 --set top_k=20 --only cook

``--set KEY=VALUE`` overrides one of the first agent's ``model_settings`` (a copy of the blueprint is run);
``--seed`` sends a sampling seed, so two variants are compared on the same draws. Not a test: nothing here
asserts, a 135M model's words are for a person to judge (tests/cli/test_local_model.py checks the structure).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from core.store import open_store

ROOT = Path(__file__).resolve().parents[1]
CHAT = ROOT / "blueprints" / "examples" / "chat.yaml"

# name → what the person types, in order; "bye" ends the chat.
CONVERSATIONS: dict[str, list[str]] = {
    "greeting": ["Hi!", "I'm fine, thanks. How are you?", "bye"],
    "capital": ["What is the capital of France?", "And of Spain?", "bye"],
    "cook": ["What should I cook tonight?", "Something with chicken, please.", "thanks!", "bye"],
    "recipe": ["Give me a quick breakfast idea.", "How long does it take to make?", "bye"],
    "joke": ["Tell me a joke.", "Another one!", "bye"],
    "name": ["Hi! My name is Ada.", "What is my name?", "bye"],
    "sleep": ["I can't sleep well. Any tips?", "What else can I do?", "bye"],
    "explain": ["What is a computer?", "Explain it to a child.", "bye"],
    "who": ["Who are you?", "What can you do?", "goodbye"],
    "thanks": ["How do I boil an egg?", "Thanks, that helps!", "bye"],
}
ROLE_LINE = re.compile(r"^\s*(user|assistant|smol|human|ai|you|system)\s*:", re.IGNORECASE | re.MULTILINE)


@dataclass
class Exchange:
    said: str
    reply: str | None  # None: the chat ended before the model answered this


def variant(blueprint: Path, settings: dict[str, Any], directory: Path) -> Path:
    """``blueprint`` itself, or a copy whose first agent's ``model_settings`` take ``settings``."""
    if not settings:
        return blueprint
    data = yaml.safe_load(blueprint.read_text(encoding="utf-8"))
    agent = next(iter(data["agents"].values()))
    agent["model_settings"] = {**agent.get("model_settings", {}), **settings}
    copy = directory / blueprint.name
    copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return copy


def replies(db: Path, run_id: str) -> list[str]:
    async def read() -> list[str]:
        async with await open_store(str(db)) as store:
            return [str(e.payload["output"]) for e in await store.events(run_id) if e.kind == "agent.reply"]

    return asyncio.run(read())


def converse(blueprint: Path, said: list[str], db: Path) -> tuple[list[Exchange], float, str]:
    """Run ``blueprint`` answering with ``said``; the exchanges, seconds, and the run's status."""
    command = [sys.executable, "-m", "flujo_cli.main", "run", str(blueprint), "--json", "--state", str(db)]
    for answer in said:
        command += ["-a", answer]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        return [], seconds, f"failed (exit {done.returncode}): {done.stderr.strip()[-300:]}"
    answered = replies(db, result["run_id"])
    exchanges = [Exchange(text, answered[n] if n < len(answered) else None) for n, text in enumerate(said)]
    return exchanges, seconds, str(result["status"])


def marks(reply: str, previous: str | None) -> list[str]:
    found = []
    if ROLE_LINE.search(reply):
        found.append("ROLE")
    sentences = [s.strip().lower() for s in re.split(r"(?<=[.!?])\s+", reply) if len(s.strip()) > 12]
    if len(sentences) != len(set(sentences)) or (previous is not None and reply.strip() == previous.strip()):
        found.append("REPEAT")
    if len(reply.split()) > 60:
        found.append("LONG")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blueprint", type=Path, default=CHAT)
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--seed", type=int, default=None, help="a sampling seed sent with every request")
    parser.add_argument("--only", action="append", default=[], help="only the conversations of these names")
    options = parser.parse_args(argv)
    settings: dict[str, Any] = {}
    for item in options.settings:
        key, _, value = item.partition("=")
        settings[key] = yaml.safe_load(value)
    if options.seed is not None:
        settings["seed"] = options.seed
    chosen = {name: said for name, said in CONVERSATIONS.items() if not options.only or name in options.only}
    counts: dict[str, int] = {"ROLE": 0, "REPEAT": 0, "LONG": 0}
    words = 0
    answered = 0
    with tempfile.TemporaryDirectory() as directory:
        blueprint = variant(options.blueprint.resolve(), settings, Path(directory))
        db = Path(directory) / "flujo.db"
        print(f"# {options.blueprint} {json.dumps(settings) if settings else ''}".rstrip())
        for name, said in chosen.items():
            exchanges, seconds, status = converse(blueprint, said, db)
            print(f"\n## {name} ({status}, {seconds:.1f} s)")
            previous: str | None = None
            for exchange in exchanges:
                print(f"  you  › {exchange.said}")
                if exchange.reply is None:
                    continue
                found = marks(exchange.reply, previous)
                for mark in found:
                    counts[mark] += 1
                words += len(exchange.reply.split())
                answered += 1
                flag = f"  [{' '.join(found)}]" if found else ""
                print(f"  smol › {exchange.reply.strip()}{flag}")
                previous = exchange.reply
    average = words / answered if answered else 0
    tally = ", ".join(f"{mark} {count}" for mark, count in counts.items())
    print(f"\n# {answered} replies, {average:.0f} words on average; {tally}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
