"""``flujo lens export RUN --case FILE``: a completed run written out in one format per call.

``--case FILE`` writes a case file (``blueprints.cases``) for ``flujo test``: the blueprint's path relative
to FILE's folder and its digest, the run's input and options, every call and answer it recorded
(``core.load_recording``), its final output. Everything is masked by the redactor lens builds from the
settings: the recording as lens masks it, the input, options and output with the same redactor. The store
is opened as the other lens commands open it: read only, never created.

Exporting over a case file keeps its ``expect:`` block as written. A file that is not a case file is never
replaced. The file is written whole or not at all (a temporary file renamed over it).

Exit codes: 0; 1 when no run matches or the run did not complete; 2 with no format option, or a FILE that is a
folder or an existing file that is not a case file; 7 as for the other lens commands (no store).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import flujo_cli.exit_codes as exit_codes
from flujo_cli.commands.lens import _found, _with_store  # the lens commands' store access and "no such run"
from flujo_cli.messages import error_line, stderr, usage_error

if TYPE_CHECKING:
    from core import Redactor, RunStore

# The run options a case keeps: how the run was made (not how it was answered or replayed: the recording
# holds that).
_KEPT_OPTIONS = ("simulate_user", "set", "max_tokens", "max_cost_usd")
_CASE_KEY = re.compile(r"^flujo_case\s*:", re.MULTILINE)


def export_run(run_id: str, *, case: Path | None, state: str | None, debug: bool) -> int:
    if case is None:
        usage_error(
            "say which format to export: lens export takes one format option",
            "--case FILE writes a case file that flujo test replays (docs/testing-conversations.md)",
        )
    kept = _kept_expectations(case)

    async def body(store: RunStore, redactor: Redactor, where: str) -> int:
        return await _export_case(store, redactor, where, run_id, case, kept)

    return _with_store(body, state=state, debug=debug)


def _kept_expectations(case: Path) -> str | None:
    """The ``expect:`` block of the case file at ``case`` to keep (None when there is none); a usage error
    when ``case`` is not a regular file (a folder, a symlink loop, a FIFO) or a file that is not a case file."""
    from blueprints import read_case
    from core import BlueprintError, not_a_file

    found = not_a_file(case)  # before opening it: a FIFO would wait for a writer
    if found == "nothing":
        return None
    if found is not None:  # a folder, a symlink loop, a FIFO, a device
        usage_error(
            f"{case} is {found}, not a case file", "give the case file to write, e.g. tests/cases/trip.case.yaml"
        )
    try:
        return read_case(case).expect_text
    except BlueprintError as exc:
        try:
            written = case.read_text(encoding="utf-8", errors="replace")
        except OSError:
            written = ""
        if not _CASE_KEY.search(written):
            usage_error(
                f"{case} exists and is not a case file (it has no flujo_case: key); it is not replaced",
                "give a new file name, or the case file to replace",
            )
        stderr().print(f"note: {case} is not a readable case ({exc}); it is replaced whole", highlight=False)
        return None


async def _export_case(
    store: RunStore, redactor: Redactor, where: str, run_id: str, target: Path, kept: str | None
) -> int:
    from blueprints import CASE_SUFFIX, Case, case_text
    from core import load_recording

    record = await _found(store, run_id, where)
    if record is None:
        return exit_codes.FAILED
    if record.status != "completed":
        error_line(
            f"run {record.run_id} did not complete (it is {record.status.replace('_', ' ')}): only a completed run"
            " can be kept as a case",
            f"see where it stopped with: flujo lens show {record.run_id}",
        )
        return exit_codes.FAILED
    if record.source is None:
        error_line(f"run {record.run_id} records no blueprint file", "only a run of a blueprint file can be a case")
        return exit_codes.FAILED
    recording = await load_recording(store, record.run_id, redactor)
    folder = target.absolute().parent
    blueprint = Path(os.path.relpath(Path(record.source).absolute(), folder)).as_posix()
    options = {key: value for key, value in (record.options or {}).items() if key in _KEPT_OPTIONS}
    exported = Case(
        file=target,
        blueprint=blueprint,
        recording=recording,
        digest=record.source_hash,
        input=redactor.value(record.input),
        options=redactor.value(options),
        output=redactor.value(record.output),
        expect_text=kept,
    )
    comment = (
        f"{target.as_posix()} — flujo test replays this run of {blueprint} (docs/testing-conversations.md).\n"
        f"Exported from run {record.run_id}; to accept another run, export it over this file (its expect: stays)."
    )
    folder.mkdir(parents=True, exist_ok=True)
    _write_whole(target, case_text(exported, comment=comment))
    console = stderr()
    calls, answers = len(recording.calls), len(recording.answers)
    console.print(
        f"wrote {target}: {calls} call(s) and {answers} answer(s) of run {record.run_id};"
        f" test it with: flujo test {target}",
        highlight=False,
    )
    if not target.name.endswith(CASE_SUFFIX):
        console.print(
            f"note: flujo test finds *{CASE_SUFFIX} files in a folder; {target.name} is tested when named",
            highlight=False,
        )
    if record.thread is not None:
        console.print(
            f"note: run {record.run_id} continued thread {record.thread}: the turns of its earlier runs are not in"
            " the case, and its replay starts without them",
            highlight=False,
        )
    return exit_codes.OK


def _write_whole(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` whole or not at all: a temporary file in its folder, renamed over it."""
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.absolute().parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
