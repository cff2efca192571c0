"""Ctrl-C as ``flujo run`` starts (while the command line is read, the settings load, the store opens or the
blueprint loads) ends the process with one clear line and exit code 130, never a traceback: in particular the
store's connection is closed before the event loop is, so its thread never calls into a closed loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli_helpers import EXAMPLES, ROOT

pytestmark = pytest.mark.slow

# ``flujo run`` whose first SQLite connection waits, once it was asked for, until the event loop closes (at
# most HOLD_S seconds): Ctrl-C then lands while the store opens, and a connection left behind would answer
# into the closed loop. It writes MARKER when the connection is asked for.
_HELD_CONNECT = """\
import asyncio, pathlib, runpy, sqlite3, sys, threading
marker, hold_s, *argv = sys.argv[1:]
closed, real_connect, real_close = threading.Event(), sqlite3.connect, asyncio.BaseEventLoop.close
def close(loop):
    real_close(loop)
    closed.set()
def connect(*args, **kwargs):
    if not pathlib.Path(marker).exists():
        pathlib.Path(marker).touch()
        closed.wait(float(hold_s))
    return real_connect(*args, **kwargs)
asyncio.BaseEventLoop.close, sqlite3.connect = close, connect
sys.argv = ["flujo", *argv]
runpy.run_module("flujo_cli.main", run_name="__main__")
"""


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(tmp_path / "flujo.db")},
    )


def _run_args() -> list[str]:
    return ["run", str(EXAMPLES / "clarify.yaml"), "--input", "a goal"]


def test_ctrl_c_while_the_store_opens_closes_it_before_the_loop(tmp_path: Path) -> None:
    marker = tmp_path / "connecting"
    process = _start([sys.executable, "-c", _HELD_CONNECT, str(marker), "3", *_run_args()], tmp_path)
    try:
        while not marker.exists() and process.poll() is None:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate()
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Traceback" not in stderr and "Event loop is closed" not in stderr, stderr
    assert process.returncode == 130, stderr
    assert "interrupted before the run started" in stderr


# The console script's start, writing MARKER once the ``flujo_cli`` package is imported: from then on flujo
# answers Ctrl-C (before, Python itself does, with its traceback, as for any Python program).
_MARKED_START = """\
import pathlib, sys
marker, *argv = sys.argv[1:]
sys.argv = ["flujo", *argv]
import flujo_cli
pathlib.Path(marker).touch()
from flujo_cli.main import main
main()
"""


@pytest.mark.parametrize("delay", [0.0, 0.3, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0, 3.0])
def test_ctrl_c_at_any_moment_of_the_start_gives_one_line_and_exit_130(tmp_path: Path, delay: float) -> None:
    # The clarify example pauses at its first question when stdin is not a terminal; Ctrl-C may also come after.
    marker = tmp_path / "imported"
    process = _start([sys.executable, "-c", _MARKED_START, str(marker), *_run_args()], tmp_path)
    while not marker.exists() and process.poll() is None:  # the event: flujo's code is running
        time.sleep(0.02)
    time.sleep(delay)  # when the signal lands after it, not how long anything takes: nothing here is timed
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    _, stderr = process.communicate()
    assert "Traceback" not in stderr and "Event loop is closed" not in stderr, stderr
    assert process.returncode in (130, 4), stderr  # interrupted, or it had already paused at its question
    if process.returncode == 130:
        assert "error: interrupted" in stderr, stderr


# The console script's start, with Ctrl-C pressed once the ``flujo_cli`` package is imported, while Python
# still loads the command line (Typer and the commands).
_CTRL_C_WHILE_LOADING = """\
import os, signal, sys
sys.argv = ["flujo", *sys.argv[1:]]
import flujo_cli
os.kill(os.getpid(), signal.SIGINT)
from flujo_cli.main import main
main()
"""


def test_ctrl_c_while_the_command_line_loads_gives_one_line_and_exit_130(tmp_path: Path) -> None:
    process = _start([sys.executable, "-c", _CTRL_C_WHILE_LOADING, *_run_args()], tmp_path)
    _, stderr = process.communicate()
    assert "Traceback" not in stderr, stderr
    assert process.returncode == 130, stderr
    assert stderr == "error: interrupted before the command started\n"
    assert not (tmp_path / "flujo.db").exists()  # nothing ran


def test_importing_flujo_cli_elsewhere_leaves_ctrl_c_alone(tmp_path: Path) -> None:
    check = "import flujo_cli, signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    process = _start([sys.executable, "-c", check], tmp_path)
    out, stderr = process.communicate()
    assert out.strip() == "True", stderr


# ``flujo run`` whose process gets a Ctrl-C once the command has ended (it paused at its question, exit 4),
# while Python exits: as if the key was pressed just as the pause line was printed.
_CTRL_C_AFTER_THE_COMMAND = """\
import os, signal, sys, time
import flujo_cli.main
sys.argv = ["flujo", *sys.argv[1:]]
try:
    flujo_cli.main.main()
finally:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)  # where a handler would run
"""


def test_ctrl_c_once_the_command_has_ended_keeps_its_exit_code(tmp_path: Path) -> None:
    process = _start([sys.executable, "-c", _CTRL_C_AFTER_THE_COMMAND, *_run_args()], tmp_path)
    _, stderr = process.communicate()
    assert "Traceback" not in stderr, stderr
    assert process.returncode == 4 and "paused at get_goal" in stderr, stderr


# ``flujo run`` in a process where the in-process llama.cpp server runs (here a stand-in entry): the process
# ends with os._exit once the command is done, so nothing registered to run at exit does (llama.cpp's static
# objects, destroyed at a normal exit, are used by a server thread still generating: SIGSEGV).
_WITH_A_LOCAL_SERVER = """\
import atexit, sys
from pathlib import Path
import flujo_cli.main
from core.agents import local_server
if sys.argv[1] == "server":
    local_server._servers[Path("model.gguf")] = (object(), "http://127.0.0.1:1/v1")
atexit.register(lambda: print("exited normally", flush=True))
sys.argv = ["flujo", *sys.argv[2:]]
flujo_cli.main.main()
"""


@pytest.mark.parametrize("server", ["server", "none"])
def test_a_process_that_runs_a_local_model_ends_with_its_exit_code_at_once(tmp_path: Path, server: str) -> None:
    process = _start([sys.executable, "-c", _WITH_A_LOCAL_SERVER, server, *_run_args()], tmp_path)
    stdout, stderr = process.communicate()
    assert process.returncode == 4 and "paused at get_goal" in stderr, stderr
    assert ("exited normally" in stdout) is (server == "none")


def test_a_ctrl_c_wrapped_by_a_library_is_still_a_ctrl_c() -> None:
    """A Ctrl-C while pydantic builds a model's validator (at import, as a command starts) comes out as a
    SchemaError that only names the interrupt; one raised from a KeyboardInterrupt keeps it as its cause.
    Both are exit 130 and one line, never a traceback (flujo_cli.main)."""
    import pydantic_core

    from flujo_cli.main import _ctrl_c_inside

    built = pydantic_core.SchemaError('Error building "model" validator:\n  KeyboardInterrupt: ')
    assert _ctrl_c_inside(built) and not _ctrl_c_inside(ValueError("KeyboardInterrupt"))
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise RuntimeError("wrapped") from interrupt
    except RuntimeError as wrapped:
        assert _ctrl_c_inside(wrapped)


# The console script's start, where Python can only report a Ctrl-C as "Exception ignored in" (pydantic-core
# building a validator, a finalizer): here a finalizer raises it as the command line is built.
_CTRL_C_SWALLOWED = """\
import sys
sys.argv = ["flujo", *sys.argv[1:]]
import flujo_cli
import flujo_cli.one_command as one_command
real_narrowed = one_command.narrowed
class Dropped:
    def __del__(self):
        raise KeyboardInterrupt
def narrowed(*args):
    Dropped()
    return real_narrowed(*args)
one_command.narrowed = narrowed
from flujo_cli.main import main
main()
"""


def test_a_ctrl_c_python_could_only_report_still_ends_the_command(tmp_path: Path) -> None:
    process = _start([sys.executable, "-c", _CTRL_C_SWALLOWED, *_run_args()], tmp_path)
    _, stderr = process.communicate()
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert process.returncode == 130, stderr
    assert stderr == "error: interrupted before the command started\n"
    assert not (tmp_path / "flujo.db").exists()  # the run never started
