"""docs/loops.md: each block's "before" and "after" files behave the same.

- Both files of every pair in ``LOOP_PAIRS`` (tests/test_docs_examples.py) run offline through the CLI with
  the pair's input and answers. They complete with the same output and send their model agents (``scripted``
  and ``echo``) the same prompts at the same step paths (the ``agent.prompt`` trace events).
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
from tests.cli_helpers import ROOT, flujo
from tests.test_docs_examples import DOC_EXAMPLES, DOCS, LOOP_PAIRS, Run, doc_pages, fenced_blocks

LOOPS_PAGE = DOCS / "loops.md"

# Builtins and Python helpers are left out: replacing them is what the blocks are for.
MODEL_AGENTS = {"scripted", "echo"}


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
