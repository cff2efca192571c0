"""Sub-workflows end to end through the real CLI and SQLite store: docs/examples/subworkflow.yaml imports
docs/examples/review.yaml, whose HITL question pauses the parent; a run interrupted inside the child resumes
inside it. Runs are offline (scripted agents); assertions read the stored rows.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from core import RunRecord, StepRecord, TraceEvent
from core.policies.workflow import child_run_id
from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo

PARENT = str(ROOT / "docs" / "examples" / "subworkflow.yaml")
OUTPUT = "approved: Clear, but say where tea is loved. (published: true)"


async def _read(db: Path, run_id: str) -> tuple[RunRecord | None, list[StepRecord], list[TraceEvent]]:
    store = await open_store(str(db))
    try:
        return await store.get_run(run_id), await store.steps(run_id), await store.events(run_id)
    finally:
        await store.close()


def stored(db: Path, run_id: str) -> tuple[RunRecord, list[StepRecord], list[TraceEvent]]:
    record, steps, events = asyncio.run(_read(db, run_id))
    assert record is not None, f"no run {run_id}"
    return record, steps, events


def run_json(args: list[str]) -> tuple[int, dict[str, object], str]:
    code, out, err = flujo([*args, "--json"])
    return code, json.loads(out) if out.strip() else {}, err


def test_parent_and_child_run_to_completion_linked_in_the_store(state_db: Path) -> None:
    code, result, err = run_json(["run", PARENT, "--input", "tea", "--answer", "yes"])
    assert code == exit_codes.OK, err
    assert result["output"] == OUTPUT  # the child's output, and its scratchpad.approved mapped back
    parent_id = str(result["run_id"])
    child_id = child_run_id(parent_id, "review")
    child, child_steps, _ = stored(state_db, child_id)
    assert (child.parent_run_id, child.status, child.pipeline_name) == (parent_id, "completed", "review")
    assert child.input == "Tea is an old drink."  # scoped: the draft only, never the parent's context
    assert child.source == str(ROOT / "docs" / "examples" / "review.yaml")
    assert [s.path for s in child_steps] == ["critique", "approve", "verdict"]
    parent, parent_steps, _ = stored(state_db, parent_id)
    assert parent.parent_run_id is None and parent.usage.requests == 2  # the child's call counts here too
    assert [(s.path, s.kind) for s in parent_steps] == [("draft", "step"), ("review", "workflow"), ("report", "step")]


def test_hitl_inside_the_child_pauses_the_parent_and_resume_completes_it(state_db: Path) -> None:
    code, paused, err = run_json(["run", PARENT, "--input", "tea", "--no-input"])
    assert code == exit_codes.PAUSED, err
    assert paused["status"] == "paused"
    assert paused["pause"] == {
        "step": "approve",
        "message": "Clear, but say where tea is loved. Publish anyway?",
        "reason": None,  # nobody else was to answer it
        "resume": f"flujo resume {paused['run_id']} --answer '...'",
    }
    parent_id = str(paused["run_id"])
    child_id = child_run_id(parent_id, "review")
    parent, _, _ = stored(state_db, parent_id)
    child, _, _ = stored(state_db, child_id)
    assert (parent.status, parent.pause_path) == ("paused", "review/approve")
    assert (child.status, child.pause_path, child.parent_run_id) == ("paused", "approve", parent_id)

    code, _, err = flujo(["resume", child_id, "--answer", "yes"])
    assert code == exit_codes.FAILED
    assert f"run {child_id} is a sub-workflow of run {parent_id}; resume that run instead" in err

    code, resumed, err = run_json(["resume", parent_id[:8], "--answer", "yes"])
    assert code == exit_codes.OK, err
    assert resumed["output"] == OUTPUT  # the same result as the uninterrupted run
    assert "2 finished step(s) replayed from the store" in err
    for run_id in (parent_id, child_id):
        record, steps, events = stored(state_db, run_id)
        assert record.status == "completed"
        # Every step was recorded once and every agent called once: nothing ran twice.
        assert len({s.path for s in steps}) == len(steps)
        replies = Counter(e.path for e in events if e.kind == "agent.reply")
        assert set(replies.values()) == {1}, replies
    child_replies = Counter(e.path for e in stored(state_db, child_id)[2] if e.kind == "agent.reply")
    assert child_replies == {"critique": 1, "verdict": 1}


CRASHING_CHILD = """version: "0.1"
name: checker
agents:
  check: {python: "crash_skills:check"}
steps:
  - {kind: step, name: first, uses: agents.check}
  - {kind: step, name: second, uses: agents.check}
  - {kind: step, name: third, uses: agents.check}
"""

CRASH_SKILLS = '''"""A check that is interrupted (as by Ctrl-C) the first time it sees "second"; it logs each call."""
from pathlib import Path

HERE = Path(__file__).parent


def check(value):
    step = {None: "first", "first done": "second", "second done": "third"}[value]
    with open(HERE / "calls.log", "a") as log:
        log.write(step + "\\n")
    marker = HERE / "interrupted"
    if step == "second" and not marker.exists():
        marker.write_text("yes")
        raise KeyboardInterrupt
    return step + " done"
'''


def test_a_run_interrupted_inside_the_child_resumes_inside_it(state_db: Path, tmp_path: Path) -> None:
    (tmp_path / "crash_skills.py").write_text(CRASH_SKILLS, encoding="utf-8")
    (tmp_path / "checker.yaml").write_text(CRASHING_CHILD, encoding="utf-8")
    parent = tmp_path / "flow.yaml"
    parent.write_text(
        'version: "0.1"\nimports: {checker: checker.yaml}\nsteps:\n'
        "  - {kind: step, name: run_checks, uses: imports.checker}\n",
        encoding="utf-8",
    )
    code, _, err = flujo(["run", str(parent)])
    assert code == exit_codes.INTERRUPTED, err
    runs = asyncio.run(_runs(state_db))
    [parent_record] = [r for r in runs if r.parent_run_id is None]
    [child_record] = [r for r in runs if r.parent_run_id == parent_record.run_id]
    assert (parent_record.status, child_record.status) == ("running", "running")  # left as a crash leaves them

    code, resumed, err = run_json(["resume", parent_record.run_id])
    assert code == exit_codes.OK, err
    assert resumed["output"] == "third done"
    # "first" was committed in the child and replayed; "second" was in flight and ran again.
    assert (tmp_path / "calls.log").read_text().split() == ["first", "second", "second", "third"]
    assert stored(state_db, child_record.run_id)[0].status == "completed"


async def _runs(db: Path) -> list[RunRecord]:
    store = await open_store(str(db))
    try:
        return await store.list_runs()
    finally:
        await store.close()


def test_editing_an_imported_file_is_a_changed_blueprint_for_resume(state_db: Path, tmp_path: Path) -> None:
    for name in ("subworkflow.yaml", "review.yaml"):
        (tmp_path / name).write_text((ROOT / "docs" / "examples" / name).read_text(encoding="utf-8"), encoding="utf-8")
    code, paused, err = run_json(["run", str(tmp_path / "subworkflow.yaml"), "--input", "tea", "--no-input"])
    assert code == exit_codes.PAUSED, err
    parent_id = str(paused["run_id"])
    review = tmp_path / "review.yaml"
    review.write_text(review.read_text(encoding="utf-8") + "# edited after the run started\n", encoding="utf-8")

    code, _, err = run_json(["resume", parent_id, "--answer", "yes"])
    assert code == exit_codes.FAILED
    assert f"the blueprint {tmp_path / 'subworkflow.yaml'} changed since run {parent_id} started" in err
    code, result, err = run_json(["resume", parent_id, "--answer", "yes", "--force"])
    assert code == exit_codes.OK, err
    assert result["output"] == OUTPUT


def test_resuming_the_child_names_the_parent_with_the_store_it_is_in(tmp_path: Path) -> None:
    """The refusal's hint is a command that works when pasted: with the store named by --state, it says so."""
    db = tmp_path / "elsewhere.db"
    code, paused, err = run_json(["run", PARENT, "--input", "tea", "--no-input", "--state", str(db)])
    assert code == exit_codes.PAUSED, err
    parent_id = str(paused["run_id"])
    code, _, err = flujo(["resume", child_run_id(parent_id, "review"), "--answer", "yes", "--state", str(db)])
    assert code == exit_codes.FAILED
    assert f"flujo resume {parent_id} --state {db} continues inside this sub-workflow" in " ".join(err.split())
