"""``flujo lens export RUN --case FILE`` through the real CLI: the case file a completed run becomes (what it
holds, as YAML that reads well in a diff, masked), what it refuses (no format option, a run that did not
complete, a file that is not a case), and that exporting over a case keeps its ``expect:`` block."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest
import yaml

from core.store import open_store
from flujo_cli import exit_codes
from tests.support.case_files import export, record, record_trip, with_expectations, write_trip
from tests.support.cli_helpers import ROOT, flujo

PERSONA = ROOT / "docs" / "examples" / "persona.yaml"
DOCUMENTED_CASE = ROOT / "docs" / "examples" / "cases" / "persona.case.yaml"


def source_hash(db: Path, run_id: str) -> str | None:
    async def read() -> str | None:
        store = await open_store(str(db))
        try:
            record = await store.get_run(run_id)
            assert record is not None
            return record.source_hash
        finally:
            await store.close()

    return asyncio.run(read())


def test_a_case_file_holds_the_run(tmp_path: Path, state_db: Path) -> None:
    blueprint = write_trip(tmp_path / "flows")
    run_id = record_trip(blueprint, "--max-tokens", "5000")
    case = tmp_path / "tests" / "cases" / "trip.case.yaml"
    code, out, err = flujo(["lens", "export", run_id[:8], "--case", str(case)])
    assert code == exit_codes.OK, err
    assert out == ""
    assert f"wrote {case}: 6 call(s) and 2 answer(s) of run {run_id}" in err
    data = yaml.safe_load(case.read_text(encoding="utf-8"))
    assert list(data) == ["flujo_case", "blueprint", "digest", "input", "options", "output", "recording"]
    assert data["flujo_case"] == 1
    assert data["blueprint"] == "../../flows/trip.yaml"  # from the case file's folder
    assert data["digest"] == source_hash(state_db, run_id)
    assert data["input"] == "Plan a trip"
    assert data["options"] == {"max_tokens": 5000}
    assert data["output"] == "4 travellers, in June"
    recording = data["recording"]
    assert recording["run_id"] == run_id
    assert [(c["path"], c["kind"]) for c in recording["calls"]] == [
        ("clarification_loop/1/clarify", "agent"),
        ("clarification_loop/2/clarify", "agent"),
        ("clarification_loop/3/clarify", "agent"),
        ("count/model/1", "agent"),
        ("count/tool/1", "tool"),
        ("count/model/2", "agent"),
    ]
    tool = next(c for c in recording["calls"] if c["kind"] == "tool")
    assert (tool["tool"], tool["arguments"]) == ("add", {"a": 2, "b": 2})
    assert [(a["path"], a["question"], a["value"]) for a in recording["answers"]] == [
        ("clarification_loop/1/answer", "Who is it for?", "My family"),
        ("clarification_loop/2/answer", "By when?", "June"),
    ]


def test_texts_of_several_lines_are_literal_blocks_and_lines_are_never_folded(tmp_path: Path, state_db: Path) -> None:
    long_input = "Plan a trip" + " with many words" * 20
    run_id = record_trip(write_trip(tmp_path), input=long_input)
    case = tmp_path / "trip.case.yaml"
    export(run_id, case)
    text = case.read_text(encoding="utf-8")
    assert f"\n    - role: user\n      content: |-\n        User: {long_input}\n        Assistant: Who" in text
    assert f"\ninput: {long_input}\n" in text  # one line, however long
    assert "&id" not in text and "*id" not in text  # a message sent again is written again, not aliased


def test_a_case_file_holds_no_secret(tmp_path: Path, state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "hunter2-correct-horse-battery"
    monkeypatch.setenv("BOOKING_SERVICE_TOKEN", secret)  # its name says it is a secret: its value is masked
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0"
    blueprint = write_trip(tmp_path, BOOKING.replace("SECRET", secret))
    run_id = str(record(blueprint, "--input", f"Book a table; my key is {key}", "--answer", "no")["run_id"])
    case = tmp_path / "trip.case.yaml"
    export(run_id, case)
    text = case.read_text(encoding="utf-8")
    assert secret not in text and key not in text and "sk-" not in text
    assert "Booked with token [REDACTED] for you." in text  # the reply, as lens shows it
    assert "input: Book a table; my key is [REDACTED]\n" in text
    code, out, err = flujo(["test", str(case)])  # the masked case still replays: its masks are what was sent
    assert code == exit_codes.OK, out + err


BOOKING = """\
version: "0.1"
agents:
  clerk:
    model: scripted
    system_prompt: "Book it."
    replies: ["Booked with token SECRET for you."]
steps:
  - {kind: step, name: book, uses: agents.clerk}
  - kind: hitl
    name: answer
    message: "Booked. Anything else?"
"""


def test_export_takes_one_format_option(state_db: Path, tmp_path: Path) -> None:
    run_id = record_trip(write_trip(tmp_path))
    code, out, err = flujo(["lens", "export", run_id])
    assert code == exit_codes.USAGE
    assert out == ""
    assert err.splitlines()[0] == "error: say which format to export: lens export takes one format option"
    assert "--case FILE" in err


def test_a_run_that_did_not_complete_is_refused(tmp_path: Path, state_db: Path) -> None:
    code, out, _ = flujo(["run", str(write_trip(tmp_path)), "--input", "Plan a trip", "--no-input", "--json"])
    assert code == exit_codes.PAUSED
    paused = str(yaml.safe_load(out)["run_id"])
    case = tmp_path / "trip.case.yaml"
    code, out, err = flujo(["lens", "export", paused, "--case", str(case)])
    assert code == exit_codes.FAILED
    assert err.splitlines() == [
        f"error: run {paused} did not complete (it is paused): only a completed run can be kept as a case",
        f"hint: see where it stopped with: flujo lens show {paused}",
    ]
    assert not case.exists()
    code, _, err = flujo(["lens", "export", "nosuchrun", "--case", str(case)])
    assert code == exit_codes.FAILED and err.startswith("error: no run matches 'nosuchrun'")


def test_lens_export_never_creates_the_store(tmp_path: Path, state_db: Path) -> None:
    code, _, err = flujo(["lens", "export", "abc", "--case", str(tmp_path / "x.case.yaml")])
    assert code == exit_codes.STORE, err
    assert not state_db.exists()


def test_exporting_over_a_case_keeps_its_expectations(tmp_path: Path, state_db: Path) -> None:
    blueprint = write_trip(tmp_path)
    case = tmp_path / "trip.case.yaml"
    export(record_trip(blueprint), case)
    block = "expect:\n  # the trip ends within three questions\n  max_turns: 3\n  output_contains: June\n"
    with_expectations(case, block)
    newer = record_trip(blueprint)
    export(newer, case)
    text = case.read_text(encoding="utf-8")
    assert f"\n{block}recording:\n  run_id: {newer}\n" in text
    assert yaml.safe_load(text)["expect"] == {"max_turns": 3, "output_contains": "June"}


def test_a_file_that_is_not_a_case_is_never_replaced(tmp_path: Path, state_db: Path) -> None:
    blueprint = write_trip(tmp_path)
    before = blueprint.read_text(encoding="utf-8")
    code, _, err = flujo(["lens", "export", record_trip(blueprint), "--case", str(blueprint)])
    assert code == exit_codes.USAGE
    assert err.splitlines()[0] == (
        f"error: {blueprint} exists and is not a case file (it has no flujo_case: key); it is not replaced"
    )
    assert blueprint.read_text(encoding="utf-8") == before
    code, _, err = flujo(["lens", "export", "abc", "--case", str(tmp_path)])
    assert code == exit_codes.USAGE and err.startswith(f"error: {tmp_path} is a folder")


def test_the_documented_case_is_what_export_writes(tmp_path: Path, state_db: Path) -> None:
    """docs/examples/cases/persona.case.yaml is a real export of docs/examples/persona.yaml: written again from
    a new run (from the same place, a copy of the repository's docs), only the run ids differ."""
    examples = tmp_path / "docs" / "examples"
    examples.mkdir(parents=True)
    shutil.copy(PERSONA, examples / "persona.yaml")
    run_id = str(record(Path("docs/examples/persona.yaml"), "--simulate-user", "agents.tester")["run_id"])
    export(run_id, Path("docs/examples/cases/persona.case.yaml"))

    def without_ids(text: str) -> str:
        # An id of 16 digits (one in 2,000) is written quoted, so that YAML reads it as text.
        return re.sub(r"'?\b[0-9a-f]{16}\b'?", "RUN", text)

    written = (examples / "cases" / "persona.case.yaml").read_text(encoding="utf-8")
    assert without_ids(written) == without_ids(DOCUMENTED_CASE.read_text(encoding="utf-8"))
