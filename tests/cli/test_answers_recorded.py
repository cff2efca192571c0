"""``--simulate-user`` and ``--replay-answers`` are recorded with the run, like ``--set`` and the limits: a
resumed run keeps answering as it started (docs/cli.md, flujo resume), unless the flag is given to
``flujo resume`` again, which then wins and is recorded for the next resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from core.store import open_store
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

# The simulated person answers every question; the step between them fails until the file "fixed" exists.
SIMULATED = """\
version: "0.1"
agents:
  person: {model: scripted, replies: ["July"]}
  other: {model: scripted, replies: ["May"]}
  flaky: {command: [sh, -c, 'cat > /dev/null; if [ -e "%(dir)s/fixed" ]; then echo ok; else exit 3; fi']}
steps:
  - {kind: hitl, name: month, message: "Which month?"}
  - {kind: step, name: flaky, uses: agents.flaky}
  - {kind: hitl, name: day, message: "Which day?"}
"""

TWO_QUESTIONS = """\
version: "0.1"
steps:
  - {kind: hitl, name: month, message: "Which month?"}
  - {kind: hitl, name: day, message: "Which day?"}
"""

# The same questions with one more between them: replaying an earlier run pauses at the new one.
THREE_QUESTIONS = """\
version: "0.1"
steps:
  - {kind: hitl, name: month, message: "Which month?"}
  - {kind: hitl, name: time, message: "What time?"}
  - {kind: hitl, name: day, message: "Which day?"}
"""


def _json(args: list[str]) -> tuple[int, dict[str, Any]]:
    code, out, err = flujo([*args, "--no-input", "--json"])
    assert out, err
    return code, json.loads(out)


def _sources(document: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {note["step"]: (note["source"], note["by"]) for note in document["answers"]}


def test_a_resumed_run_keeps_its_simulated_person_unless_resume_names_another(state_db: Path) -> None:
    Path("bp.yaml").write_text(SIMULATED % {"dir": state_db.parent.parent}, encoding="utf-8")
    failed = [_json(["run", "bp.yaml", "--simulate-user", "agents.person"]) for _ in range(2)]
    assert [code for code, _ in failed] == [exit_codes.FAILED] * 2
    (state_db.parent.parent / "fixed").touch()

    code, kept = _json(["resume", failed[0][1]["run_id"]])
    assert code == exit_codes.OK and kept["output"] == "July"  # not a pause at "day"
    assert _sources(kept) == {"day": ("simulated", "agents.person")}

    code, changed = _json(["resume", failed[1][1]["run_id"], "--simulate-user", "agents.other"])
    assert code == exit_codes.OK and changed["output"] == "May"
    assert _sources(changed) == {"day": ("simulated", "agents.other")}


def test_a_resumed_run_keeps_replaying_the_run_it_started_from_unless_resume_names_another(state_db: Path) -> None:
    Path("two.yaml").write_text(TWO_QUESTIONS, encoding="utf-8")
    Path("three.yaml").write_text(THREE_QUESTIONS, encoding="utf-8")
    _, first = _json(["run", "two.yaml", "--answer", "June", "--answer", "3"])
    _, second = _json(["run", "two.yaml", "--answer", "June", "--answer", "9"])
    paused = [_json(["run", "three.yaml", "--replay-answers", first["run_id"][:6]]) for _ in range(2)]
    assert [(code, doc["pause"]["step"]) for code, doc in paused] == [(exit_codes.PAUSED, "time")] * 2

    code, kept = _json(["resume", paused[0][1]["run_id"], "--answer", "noon"])
    assert code == exit_codes.OK and kept["output"] == "3", kept  # "day" replayed from the first run
    assert _sources(kept)["day"] == ("replayed", first["run_id"])

    code, changed = _json(["resume", paused[1][1]["run_id"], "--answer", "noon", "--replay-answers", second["run_id"]])
    assert code == exit_codes.OK and changed["output"] == "9"
    # ... and the run now records the second one: it is what a later resume would replay.
    assert _options(state_db, paused[1][1]["run_id"])["replay_answers"] == second["run_id"]


def _options(db: Path, run_id: str) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async with await open_store(str(db), mode="read") as store:
            record = await store.get_run(run_id)
            assert record is not None
            return dict(record.options or {})

    return asyncio.run(read())
