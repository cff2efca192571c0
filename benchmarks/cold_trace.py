"""The cold command: ``flujo lens trace RUN --tui`` on the 10,000-event run of benchmarks/test_lens.py, from
starting the process to the viewer's first frame, in a pseudo-terminal (issue 6).

    .venv/bin/python benchmarks/cold_trace.py [ROUNDS] [DB]

Writes the run to DB (a temporary file by default; reused when it exists), then starts the real command
ROUNDS times (default 7) in a pseudo-terminal of 120×40 and times each until the first frame shows the run's
tree (the root's label, the run id, is on the screen), then sends ``q``. Prints every round and the median.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.test_lens import RUN, _write  # the benchmark's own run

FLUJO = Path(sys.executable).with_name("flujo")
# Profile the command with COLD_TRACE_PREFIX=".venv/bin/python -m cProfile -o trace.prof"
PREFIX = os.environ.get("COLD_TRACE_PREFIX", "").split()
SEEN = b"benchbench"  # the run id is in the tree's root label and the status line


def once(db: Path) -> float:
    primary, secondary = pty.openpty()
    os.set_blocking(primary, False)
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "FLUJO_STATE_URI": str(db), "TERM": "xterm-256color"}
    started = time.perf_counter()
    process = subprocess.Popen(
        [*PREFIX, str(FLUJO), "lens", "trace", RUN, "--tui"],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=env,
    )
    os.close(secondary)
    screen = b""
    elapsed = None
    while elapsed is None:
        ready, _, _ = select.select([primary], [], [], 30)
        if not ready:
            process.kill()
            raise SystemExit(f"no first frame in 30 s; the screen so far: {screen[-2000:]!r}")
        try:
            screen += os.read(primary, 65536)
        except OSError:
            raise SystemExit(f"the command ended before its first frame: {screen[-2000:]!r}") from None
        if SEEN in screen and b"\x1b[?1049h" in screen:  # the alternate screen, then the run on it
            elapsed = time.perf_counter() - started
    os.write(primary, b"q")
    try:
        while process.poll() is None:
            if select.select([primary], [], [], 0.1)[0]:
                os.read(primary, 65536)
    except OSError:
        pass
    process.wait(10)
    os.close(primary)
    return elapsed


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    db = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.gettempdir()) / "flujo-cold-trace.db"
    if not db.exists():
        asyncio.run(_write(db))
    once(db)  # warms the file system cache and the .pyc files, as a second command would find them
    times = [once(db) for _ in range(rounds)]
    print(" ".join(f"{t * 1000:.0f}" for t in times), "ms")
    print(f"median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
