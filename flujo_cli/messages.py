"""Every user-facing error message is composed here: one line, then a hint, then an exit code.

Tracebacks are shown only with ``--debug`` (or FLUJO_DEBUG=1). Every console flujo prints through is made
by ``plain_console``: Rich's emoji codes are off, so a user's or a model's ``:x:`` is printed as written, never as
an emoji (flujo's own texts use none); its markup is escaped where text is put into it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn, TextIO

from rich.console import Console
from rich.markup import escape

import flujo_cli.exit_codes as exit_codes

_stderr: Console | None = None
_results: TextIO | None = None  # stdout while a run's own code runs (divert_stdout)


def plain_console(**options: Any) -> Console:
    """A Rich console that prints text as it is: no emoji codes (``:x:``), no highlighting."""
    return Console(emoji=False, highlight=False, **options)


def stderr() -> Console:
    """The console for progress and messages (stdout is kept for results)."""
    global _stderr
    if _stderr is None:
        _stderr = plain_console(stderr=True, soft_wrap=True)
    return _stderr


@contextlib.contextmanager
def divert_stdout() -> Iterator[None]:
    """While a run's own code runs (a ``python:`` agent or tool, a module a blueprint imports), ``print``
    writes to stderr: stdout holds only the results (``--json``'s document, the run's output), never a line a
    function printed. ``results_stdout`` gives stdout back for a moment (a prompt read with ``input()``)."""
    global _results
    if _results is not None:  # already diverted
        yield
        return
    _results, sys.stdout = sys.stdout, sys.stderr
    try:
        yield
    finally:
        sys.stdout, _results = _results, None


@contextlib.contextmanager
def results_stdout() -> Iterator[None]:
    """stdout as it was before ``divert_stdout``, for the length of the block (as it is, when not diverted)."""
    if _results is None:
        yield
        return
    diverted, sys.stdout = sys.stdout, _results
    try:
        yield
    finally:
        sys.stdout = diverted


def exit_code_for(exc: BaseException) -> int:
    from core import BlueprintError, ConfigError, PromptTooLarge, ProviderError, ReplayDiverged, StoreError

    if isinstance(exc, PromptTooLarge):
        return exit_codes.PROMPT_TOO_LARGE
    if isinstance(exc, ReplayDiverged):
        return exit_codes.REPLAY_DIVERGED
    if isinstance(exc, BlueprintError):
        return exit_codes.BLUEPRINT
    if isinstance(exc, ConfigError | ProviderError):
        return exit_codes.CONFIG
    if isinstance(exc, StoreError):
        return exit_codes.STORE
    return exit_codes.FAILED


def error_line(message: str, hint: str | None = None) -> None:
    console = stderr()
    console.print(f"[bold red]error:[/] {escape(message)}")
    if hint:
        console.print(f"[dim]hint:[/] {escape(hint)}")


def warning_line(message: str) -> None:
    """Something went wrong beside the command's work, which went on (a trace that could not be sent): one
    line, saying what to do about it."""
    stderr().print(f"[yellow]warning:[/] {escape(message)}")


def fail(exc: BaseException, *, debug: bool, code: int | None = None) -> NoReturn:
    """Report ``exc`` as one clear line (plus hint) and exit; with ``debug`` print the traceback first."""
    from core import FlujoError

    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, BrokenPipeError) and stdout_reader_gone():
        output_closed()
    if isinstance(exc, OSError) and cannot_write(exc):  # the disk's, not flujo's: say what it is
        if not _stdout_writable():  # ``> /dev/full``: Python's own flush at exit would fail again
            quiet_stdout()
        what = exc.filename if exc.filename is not None else "the output"
        error_line(
            f"cannot write {what}: {exc.strerror}", "make room there, or write elsewhere; runs are stored as they go"
        )
        raise SystemExit(exit_codes.USAGE if code is None else code)
    if isinstance(exc, FlujoError):
        error_line(str(exc), exc.hint)
    else:
        error_line(f"unexpected {type(exc).__name__}: {exc}", "run again with --debug and report this as a bug")
    raise SystemExit(exit_code_for(exc) if code is None else code)


# A write the disk refused (full, over quota, failing, read-only, too large): not a bug of flujo's.
_CANNOT_WRITE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})


def cannot_write(exc: BaseException) -> bool:
    """Whether ``exc`` is a write the disk refused (``flujo run ... > /dev/full``): ``fail`` says so in a line."""
    return isinstance(exc, OSError) and exc.errno in _CANNOT_WRITE


def _stdout_writable() -> bool:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        return False
    return True


def stdout_reader_gone() -> bool:
    """Whether what reads flujo's stdout has stopped reading (``flujo lens trace RUN | head``): the write end
    of a pipe whose reader closed polls as an error. Told apart so that a broken pipe elsewhere (an agent's
    subprocess, say) is still reported as the error it is."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no stdout, or not a file descriptor
        return False


def output_closed() -> NoReturn:
    """Stop quietly because the reader of stdout went away, as a command ended by SIGPIPE does (exit 141):
    what was written stays written, and nothing a run stores depends on its output being read."""
    quiet_stdout()
    raise SystemExit(exit_codes.OUTPUT_CLOSED)


def quiet_stdout() -> None:
    """Send what is still written to stdout, whose reader went away, to the null device: Python's own flush at
    exit would fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def require_file(path: Path, what: str, hint: str | None = None) -> None:
    """Stop with a usage error unless ``path`` is a regular file to read as a ``what`` ("blueprint file"):
    ``no such blueprint file: PATH`` (with ``hint``), or what is there instead (``PATH is a folder, not a
    blueprint file``: a folder, ``/dev/null`` and a FIFO are not missing files, and a FIFO is never opened)."""
    from core import not_a_file

    found = not_a_file(path)
    if found == "nothing":
        usage_error(f"no such {what}: {path}", hint)
    if found is not None:
        a = "an" if what[:1] in "aeiou" else "a"
        usage_error(f"{path} is {found}, not {a} {what}", f"give the path of {a} {what}")


def not_utf8_at(text: str) -> int | None:
    """Where (a byte offset) ``text`` held the first byte that is not UTF-8 when it was read, None when it
    held none: Python gives such bytes of the command line and of stdin as lone surrogates
    (``surrogateescape``), which no text written later (the store, JSON, the terminal) can encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return len(text[: exc.start].encode("utf-8", "surrogateescape"))
    return None


def require_text(text: str, what: str) -> str:
    """``text``, or stop with a usage error when it is not UTF-8 text (``--input is not UTF-8 text (byte 2)``)."""
    at = not_utf8_at(text)
    if at is not None:
        usage_error(f"{what} is not UTF-8 text (byte {at})", "give it as UTF-8 text")
    return text


def usage_error(message: str, hint: str | None = None) -> NoReturn:
    error_line(message, hint)
    raise SystemExit(exit_codes.USAGE)


def flujo_command() -> str:
    """``flujo`` as the person can type it again from where they are, for the commands a message suggests.

    ``flujo`` when this one was found on PATH; the path it was started by (``.venv/bin/flujo`` after ``make
    run``, where the virtual environment is not activated) when it was started by a path."""
    import shlex
    import shutil
    from pathlib import Path

    started = sys.argv[0] if sys.argv else ""
    if Path(started).name not in ("flujo", "flujo.exe"):
        return "flujo"  # python -m flujo_cli.main, or flujo called as a library
    on_path = shutil.which("flujo")
    if on_path is not None and Path(on_path).resolve() == Path(started).resolve():
        return "flujo"
    return shlex.quote(started)
