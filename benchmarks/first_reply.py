"""How long the person waits for the first reply of ``make run``'s chat, from the Enter of their first message
to the first word of the reply, at a pseudo-terminal, as a person sees it (session 21).

Each round starts ``flujo run blueprints/examples/chat.yaml`` at a pseudo-terminal of its own, waits for the
first question, lets ``--typing`` seconds pass (a person reading the question and typing "Hi! What can you
do?": 3 s by default), sends the message and times the wait until the reply's first text (``smol ›``), then
ends the chat with ``bye``. Trees given with ``--tree`` (the default: this one) are alternated round by round,
so they share the machine's state; the medians are printed. A typing time of 0 is a message sent the moment
the question shows (the load then cannot overlap anything)::

    .venv/bin/python -m benchmarks.first_reply --rounds 8 --tree /tmp/before --tree .
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHAT = HERE.parent / "blueprints/examples/chat.yaml"
QUESTION = "(end with bye, or Ctrl-D)"
REPLY = "smol\x1b[0m › "  # the step's name in bold, then the reply's first words


def _until(fd: int, marker: str, seen: str, limit: float = 300.0) -> str:
    """What the terminal ``fd`` showed until ``marker`` (RuntimeError if the process ended or ``limit`` passed)."""
    deadline = time.monotonic() + limit
    while marker not in seen:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{marker!r} never came; the terminal showed:\n{seen[-2000:]}")
        if select.select([fd], [], [], 0.01)[0]:
            try:
                read = os.read(fd, 65536)
            except OSError:
                raise RuntimeError(f"the process ended before {marker!r}:\n{seen[-2000:]}") from None
            seen += read.decode("utf-8", "replace")
    return seen


def first_reply(tree: Path, typing: float, store: Path) -> float:
    """Seconds from the first message's Enter to the reply's first text, in one ``flujo run`` of ``tree``."""
    controller, terminal = os.openpty()
    env = {**os.environ, "PYTHONPATH": str(tree), "TERM": "xterm", "COLUMNS": "120", "FLUJO_STATE_URI": str(store)}
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", str(CHAT)],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=tree,
        env=env,
    )
    os.close(terminal)
    try:
        seen = _until(controller, QUESTION, "")
        typed = time.monotonic() + typing
        while time.monotonic() < typed:  # the person types; what the terminal shows meanwhile is read
            if select.select([controller], [], [], max(0.0, typed - time.monotonic()))[0]:
                seen += os.read(controller, 65536).decode("utf-8", "replace")
        os.write(controller, b"Hi! What can you do?\r")
        sent = time.perf_counter()
        seen = _until(controller, REPLY, seen)
        waited = time.perf_counter() - sent
        seen = _until(controller, "Your reply", seen)
        os.write(controller, b"bye\r")
        _until(controller, "completed", seen)
        process.wait(timeout=120)
        return waited
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--typing", type=float, default=3.0, help="seconds the person takes to type (default 3)")
    parser.add_argument("--tree", type=Path, action="append", help="a tree of flujo's code (default: this one)")
    args = parser.parse_args(argv)
    trees = [tree.resolve() for tree in args.tree or [HERE.parent]]
    waits: dict[Path, list[float]] = {tree: [] for tree in trees}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as folder:
        for tree in trees:  # each tree's first run compiles what it imports
            first_reply(tree, 0.0, Path(folder) / "warm.db")
        for index in range(args.rounds):
            for tree in trees if index % 2 == 0 else reversed(trees):
                waits[tree].append(first_reply(tree, args.typing, Path(folder) / f"{index}.db"))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    for tree, seconds in waits.items():
        print(
            f"{tree}: first reply {statistics.median(seconds):.2f} s after Enter (median of {len(seconds)}; "
            f"{min(seconds):.2f}–{max(seconds):.2f}), typing {args.typing:g} s"
        )


if __name__ == "__main__":
    main()
