"""docs/loops.md: each block's "before" and "after" files behave the same, and its line-savings table is true.

- Both files of every pair in ``LOOP_PAIRS`` (tests/docs/test_examples.py) run offline through the CLI with
  the pair's input and answers. They complete with the same output and send their model agents (``scripted``
  and ``echo``) the same prompts at the same step paths (the ``agent.prompt`` trace events).
- The line-savings table of docs/loops.md lists exactly the pairs in ``SAVINGS``, and every count and
  percentage in it is recomputed from the files. A YAML line is a line that is neither blank nor a comment.
- The Python helper that docs/loops.md shows is the file in docs/examples/, byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from flujo_cli import exit_codes
from tests.docs.test_examples import DOC_EXAMPLES, DOCS, LOOP_PAIRS, Run, doc_pages, fenced_blocks
from tests.support.cli_helpers import ROOT, flujo

LOOPS_PAGE = DOCS / "loops.md"

# The typical loops of the table in docs/loops.md ("How many lines they save"): (explicit, friendly).
SAVINGS = (
    ("docs/examples/refine_explicit.yaml", "docs/examples/refine_friendly.yaml"),
    ("docs/examples/research_explicit.yaml", "docs/examples/research_friendly.yaml"),
    ("docs/examples/map_hooks_before.yaml", "docs/examples/map_hooks_after.yaml"),
)

# Builtins and Python helpers are left out: replacing them is what the blocks are for.
MODEL_AGENTS = {"scripted", "echo"}

_LINK = r"\[(?P<{0}_text>[\w.]+)\]\(examples/(?P<{0}>[\w.]+\.yaml)\)"
TABLE_ROW = re.compile(
    r"^\| [^|]+ \| "
    + _LINK.format("explicit")
    + r" \| "
    + _LINK.format("friendly")
    + r" \| (?P<lines>\d+ → \d+) \| (?P<saving>-?\d+\.\d%) \| (?P<steps>\d+ → \d+) \| (?P<steps_saving>-?\d+\.\d%) \|$",
    re.MULTILINE,
)


def yaml_lines(text: str) -> int:
    """The lines that are neither blank nor a comment (a line with a comment after a value counts)."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def steps_part(text: str) -> str:
    """The text from the top-level ``steps:`` key to the end."""
    start = re.search(r"^steps:", text, re.MULTILINE)
    assert start is not None, "no top-level steps: key"
    return text[start.start() :]


def saving(explicit: int, friendly: int) -> str:
    return f"{100 * (explicit - friendly) / explicit:.1f}%"


def model_prompts(db: Path, run_id: str) -> list[tuple[str, Any]]:
    """(step path, messages) of every prompt sent to a model agent in the run, in order."""

    async def read() -> list[tuple[str, Any]]:
        store = await open_store(str(db))
        try:
            events = await store.events(run_id)
        finally:
            await store.close()
        return [
            (event.path, event.payload["messages"])
            for event in events
            if event.kind == "agent.prompt" and event.payload["agent"] in MODEL_AGENTS
        ]

    return asyncio.run(read())


def by_path(prompt: tuple[str, Any]) -> str:
    return prompt[0]


def run_example(example: str, run: Run, db: Path) -> tuple[Any, list[tuple[str, Any]]]:
    args = ["run", str(ROOT / example), "--json", "--no-input"]
    if run.input is not None:
        args += ["--input", run.input]
    for answer in run.answers:
        args += ["--answer", answer]
    code, out, err = flujo(args)
    result = json.loads(out) if out.strip() else {}
    assert code == exit_codes.OK and result.get("status") == "completed", f"{example} did not complete:\n{err}"
    return result["output"], model_prompts(db, result["run_id"])


@pytest.mark.parametrize("pair", list(LOOP_PAIRS), ids=lambda pair: Path(pair[1]).stem)
def test_both_forms_give_the_same_output_and_prompts(pair: tuple[str, str], state_db: Path) -> None:
    before, after = pair
    run = LOOP_PAIRS[pair]
    output_before, prompts_before = run_example(before, run, state_db)
    output_after, prompts_after = run_example(after, run, state_db)
    assert output_before == output_after == run.output
    assert prompts_after, f"{after} sends no prompt to a model agent: nothing to compare"
    # Sorted by step path (stable): parallel branches may record their prompts in either order.
    assert sorted(prompts_before, key=by_path) == sorted(prompts_after, key=by_path), (
        f"{before} and {after} send different prompts"
    )


def test_pairs_are_shown_in_the_loops_page() -> None:
    text = LOOPS_PAGE.read_text(encoding="utf-8")
    for pair in LOOP_PAIRS:
        for example in pair:
            assert f"# {example} " in text, f"docs/loops.md does not show {example}"


def test_line_savings_table_matches_the_files() -> None:
    rows = list(TABLE_ROW.finditer(LOOPS_PAGE.read_text(encoding="utf-8")))
    listed = tuple((f"docs/examples/{row['explicit']}", f"docs/examples/{row['friendly']}") for row in rows)
    assert listed == SAVINGS, f"the line-savings table in docs/loops.md lists {listed}, expected {SAVINGS}"
    for row in rows:
        assert row["explicit_text"] == row["explicit"] and row["friendly_text"] == row["friendly"]
        explicit = (DOC_EXAMPLES / row["explicit"]).read_text(encoding="utf-8")
        friendly = (DOC_EXAMPLES / row["friendly"]).read_text(encoding="utf-8")
        counts = yaml_lines(explicit), yaml_lines(friendly)
        steps = yaml_lines(steps_part(explicit)), yaml_lines(steps_part(friendly))
        expected = {
            "lines": f"{counts[0]} → {counts[1]}",
            "saving": saving(*counts),
            "steps": f"{steps[0]} → {steps[1]}",
            "steps_saving": saving(*steps),
        }
        shown = {key: row[key] for key in expected}
        assert shown == expected, f"docs/loops.md, row for {row['explicit']}: shows {shown}, the files give {expected}"
    for pair in SAVINGS:
        assert pair in LOOP_PAIRS, f"{pair} is not in LOOP_PAIRS, so nothing checks that both forms agree"


def test_yaml_lines_skip_blanks_and_comments() -> None:
    text = '# header\nversion: "0.1"\n\n  # indented comment\nsteps:   # trailing comment counts\n  - {name: a}\n'
    assert yaml_lines(text) == 3
    assert yaml_lines(steps_part(text)) == 2
    assert saving(25, 27) == "-8.0%" and saving(32, 28) == "12.5%"


def test_documented_python_helpers_are_the_example_files() -> None:
    shown: set[str] = set()
    for page in doc_pages():
        for block in fenced_blocks(page.read_text(encoding="utf-8"), "python"):
            header = re.match(r"# (docs/examples/[\w/.-]+\.py)\b", block)
            if header is None:
                continue
            name = header.group(1)
            assert block == (ROOT / name).read_text(encoding="utf-8"), f"{page.name}: the block for {name} differs"
            shown.add(name)
    files = {path.relative_to(ROOT).as_posix() for path in DOC_EXAMPLES.glob("*.py")}
    assert files <= shown, f"Python files in docs/examples/ not shown in any docs page: {sorted(files - shown)}"
