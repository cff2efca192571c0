"""One install stage of the Makefile, said in one line: ``python .ci/stage.py LABEL DONE -- COMMAND...``.

Prints ``LABEL: `` at once (so a slow stage shows what it is doing), runs COMMAND with its output kept in a
log, then ends the line with DONE, what pip installed and how long it took:

    flujo: installed into .venv, with the llama.cpp binding (31 packages new, 38 s)

When COMMAND fails, the line says so and the whole log follows (pip says why better than a summary could),
and the stage exits with COMMAND's exit code. Standard library only: it runs before the venv exists.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time

_INSTALLED = re.compile(r"^Successfully installed (.+)$", re.MULTILINE)


def installed_count(log: str) -> int:
    """How many packages pip's log says it installed (``Successfully installed a-1 b-2``; 0 without it)."""
    return sum(len(match.split()) for match in _INSTALLED.findall(log))


def summary(log: str, seconds: float) -> str:
    count = installed_count(log)
    new = "nothing new" if count == 0 else "1 package new" if count == 1 else f"{count} packages new"
    return f"({new}, {seconds:.0f} s)"


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python .ci/stage.py LABEL DONE -- COMMAND...", file=sys.stderr)
        return 2
    label, done, command = argv[0], argv[1], argv[3:]
    print(f"{label}: ", end="", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as log:
        try:
            code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
        except OSError as exc:  # the command itself could not be started
            print(f"failed: {command[0]}: {exc.strerror}")
            return 127
        log.seek(0)
        text = log.read()
    if code != 0:
        print(f"failed (exit code {code}); its whole log:")
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        return code if code > 0 else 1  # killed by a signal
    print(f"{done} {summary(text, time.monotonic() - started)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
