"""``flujo test [PATH...]``: replay every case file found against its blueprint as it is now, and report each
(``flujo_cli.case_replay``: passed, diverged or failed).

A PATH is a case file (whatever its name) or a folder, searched recursively for ``*.case.yaml`` files
(``.git``, ``.flujo``, ``.venv`` and ``node_modules`` are not searched); with none, the current folder.
Cases are replayed concurrently in this process (at most ``--jobs`` at a time), each a run stored in the
run store (``--state URI``, else the one ``flujo run`` uses), so a diverged run can be looked into with
``flujo lens show RUN`` or compared with ``flujo lens diff``.

On stdout: a line per case as it finishes (a diverged one with its diff or the expectations not met, a
failed one with its file:line:col), then a summary line; with ``--json`` one JSON document instead.
``--junit FILE`` writes a JUnit XML report besides (``flujo_cli.junit_report``).

Exit codes: 0 when every case passed; 1 when any diverged or failed; 2 for a bad command line: a PATH that
does not exist or is neither a file nor a folder (a symlink loop, a FIFO), no case file found (a test run
that tests nothing is a mistake, not a success), a ``--junit`` file that cannot be written (the cases were
replayed and said); 7 when the run store cannot be used; 130 for Ctrl-C (said: how many cases were replayed).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import divert_stdout, error_line, fail, plain_console, require_file, usage_error

if TYPE_CHECKING:
    from rich.console import Console

    from flujo_cli.case_replay import CaseResult

SKIPPED_FOLDERS = frozenset({".git", ".flujo", ".venv", "node_modules"})
_COLOURS = {"passed": "green", "diverged": "yellow", "failed": "red"}


def replay_cases(
    paths: Sequence[Path], *, jobs: int, junit: Path | None, json_output: bool, state: str | None, debug: bool
) -> int:
    from blueprints import CASE_SUFFIX

    files = case_files(paths or [Path(".")], CASE_SUFFIX)
    if junit is not None and junit.is_dir():
        usage_error(f"--junit {junit} is a folder", "give the file to write, e.g. --junit reports/flujo.xml")
    console = plain_console(file=sys.stdout, soft_wrap=True, color_system="auto" if sys.stdout.isatty() else None)
    started = time.perf_counter()
    finished: list[CaseResult] = []
    try:
        with divert_stdout():  # what the cases' own code prints goes to stderr: stdout holds the results
            results = asyncio.run(
                _replay_all(files, jobs=jobs, state=state, shown=None if json_output else console, finished=finished)
            )
    except KeyboardInterrupt:  # said, as `flujo run` says it: a bare exit 130 left the user guessing
        error_line(
            f"interrupted: {len(finished)} of {len(files)} case(s) replayed; no summary and no report were written",
            "the runs of the cases cut short are stored as interrupted (flujo lens list --status interrupted);"
            " run flujo test again to judge them",
        )
        return exit_codes.INTERRUPTED
    except Exception as exc:  # the CLI's top level: a store that cannot be used, one line (unless --debug)
        fail(exc, debug=debug)
    seconds = time.perf_counter() - started
    written = junit is None or _write_report(junit, results, seconds)
    counts = {status: sum(1 for r in results if r.status == status) for status in ("passed", "diverged", "failed")}
    if json_output:
        summary: dict[str, Any] = {"cases": len(results), **counts, "seconds": round(seconds, 6)}
        document = {"cases": [r.to_dict() for r in results], "summary": summary}
        sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
    else:
        said = ", ".join(f"{count} {status}" for status, count in counts.items() if count or status == "passed")
        console.print(f"{len(results)} case(s): {said} ({seconds:.2f}s)")
    if not written:
        return exit_codes.USAGE
    return exit_codes.OK if counts["passed"] == len(results) else exit_codes.FAILED


def _write_report(junit: Path, results: Sequence[CaseResult], seconds: float) -> bool:
    """Write the JUnit XML report; False (the error said) when the file cannot be written."""
    from flujo_cli.junit_report import junit_xml

    try:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_bytes(junit_xml(results, seconds=seconds))
    except OSError as exc:
        error_line(f"cannot write --junit {junit}: {exc.strerror or exc}", "give a file in a folder you can write to")
        return False
    return True


def case_files(paths: Sequence[Path], suffix: str) -> list[Path]:
    """The case files ``paths`` name: a file as it is, a folder's ``*suffix`` files at any depth (sorted,
    ``SKIPPED_FOLDERS`` left out). A usage error for a path that does not exist, is neither a file nor a folder
    (a symlink loop, a FIFO: ``flujo_cli.messages.require_file``), or when none is found."""
    from core import not_a_file

    hint = "give case files (*.case.yaml) or folders holding them"
    found: dict[str, Path] = {}
    for path in paths:
        kind = not_a_file(path)
        if kind == "nothing":
            usage_error(f"no such file or folder: {path}", hint)
        if kind != "a folder":  # a symlink loop, a FIFO, a device: said as flujo run says it, and never opened
            require_file(path, "case file", hint)
            found.setdefault(os.path.normpath(path), Path(os.path.normpath(path)))
            continue
        for folder, folders, names in os.walk(path):
            folders[:] = sorted(name for name in folders if name not in SKIPPED_FOLDERS)
            for name in sorted(names):
                if name.endswith(suffix):
                    file = os.path.normpath(os.path.join(folder, name))
                    found.setdefault(file, Path(file))
    if not found:
        where = ", ".join(str(path) for path in paths)
        usage_error(
            f"no case file (*{suffix}) in {where}",
            f"write one from a completed run with: flujo lens export RUN --case tests/cases/NAME{suffix}",
        )
    return list(found.values())


async def _replay_all(
    files: Sequence[Path], *, jobs: int, state: str | None, shown: Console | None, finished: list[CaseResult]
) -> list[CaseResult]:
    """Every case replayed, at most ``jobs`` at a time; each said on ``shown`` and added to ``finished`` as it
    finishes (so that a Ctrl-C can say how many were)."""
    from flujo_cli.case_replay import Loaded, replay_case
    from flujo_cli.store_access import open_for, settings_with_state

    settings = settings_with_state(state)
    store = await open_for(settings, "create")
    gate = asyncio.Semaphore(jobs)
    loaded: Loaded = {}

    async def one(file: Path) -> CaseResult:
        async with gate:
            result = await replay_case(file, str(file), store, settings, loaded=loaded)
        finished.append(result)
        if shown is not None:
            say(result, shown)
        return result

    try:
        tasks = [asyncio.create_task(one(file)) for file in files]
        try:
            return list(await asyncio.gather(*tasks))
        finally:
            for task in tasks:  # one raised (the store): the others stop; nothing is left running
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await store.close()


def say(result: CaseResult, console: Console) -> None:
    """A case's line, and what explains it: the diff, the expectations not met, the hint, the run."""
    colour = _COLOURS[result.status]
    line = f"[{colour}]{result.status:<8}[/] {escape(result.headline())}"
    if result.live_from is not None:  # a case with expectations went on live from there
        line += f" · live from {escape(result.live_from)}"
    if result.digest_changed:
        line += " · the blueprint changed since it was recorded"
    console.print(line)
    if result.diff:
        console.print("\n".join(f"  {line}" for line in result.diff.split("\n")), markup=False)
    for check in result.expectations:
        if not check.ok:
            console.print(f"  expected {check.expectation}: {check.problem}", markup=False)
    if result.hint:
        console.print(f"  hint: {result.hint}", markup=False)
    if result.status == "diverged" and result.run_id is not None:
        console.print(f"  replayed run: {result.run_id} (flujo lens show {result.run_id})", markup=False)
