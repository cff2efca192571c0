"""Golden tests of what lens prints: the plain views rendered into a 100-column console with
no colour, times in UTC, from the runs of tests/support/lens_runs.py (fixed ids and clock). The expected texts are
tests/data/lens/*.txt and *.json; after a deliberate change, rewrite them with
``LENS_UPDATE_GOLDEN=1 pytest tests/lens/test_plain.py`` and read the diff."""

from __future__ import annotations

import io
import json
import os
from collections.abc import AsyncIterator
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, RenderableType

from core import Redactor, RunStore
from core.store import MemoryStore, open_store
from lens import (
    Expansion,
    RunNode,
    build_tree,
    focus,
    list_document,
    load_run,
    nested,
    recent_runs,
    runs_table,
    show_document,
    show_view,
    trace_document,
    trace_view,
)
from lens.preview import collapse
from tests.support.lens_runs import DEMO, PAUSED, PAUSED_PARENT, THREADED, record_demo, record_others

GOLDEN = Path(__file__).parents[1] / "data" / "lens"
WIDTH = 100


def render(renderable: RenderableType) -> str:
    console = Console(file=io.StringIO(), width=WIDTH, color_system=None, highlight=False)
    console.print(renderable)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def check(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LENS_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs; see the module docstring to update it"


def check_json(name: str, document: dict[str, Any]) -> None:
    check(name, json.dumps(document, indent=2, ensure_ascii=False) + "\n")


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    opened: RunStore = MemoryStore() if request.param == "memory" else await open_store(str(tmp_path / "flujo.db"))
    await record_demo(opened)
    await record_others(opened)
    try:
        yield opened
    finally:
        await opened.close()


async def tree(store: RunStore, run_id: str) -> RunNode:
    return build_tree(await load_run(store, run_id, redactor=Redactor()))


async def test_list(store: RunStore) -> None:
    rows = await recent_runs(store, redactor=Redactor())
    check("list.txt", render(runs_table(nested(rows), tz=UTC)))
    check_json("list.json", list_document(rows))


async def test_show(store: RunStore) -> None:
    demo = await load_run(store, DEMO, redactor=Redactor())
    check("show_demo.txt", render(show_view(build_tree(demo), tz=UTC, steps=len(demo.steps))))
    check_json("show_demo.json", show_document(build_tree(demo)))


async def test_trace_collapses_long_prompts_and_says_how_to_expand_them(store: RunStore) -> None:
    demo = await tree(store, DEMO)
    check("trace_demo.txt", render(trace_view(demo)))
    check_json("trace_demo.json", trace_document(demo))


async def test_trace_expanded(store: RunStore) -> None:
    demo = await tree(store, DEMO)
    check("trace_demo_expand_all.txt", render(trace_view(demo, expand=Expansion.parse(["all"]))))
    check("trace_demo_expand_none.txt", render(trace_view(demo, expand=Expansion.parse(["none"]))))
    # One step whole, the others as they were; a step name works as well as its path.
    by_path = render(trace_view(demo, expand=Expansion.parse(["chat/2/clarify"])))
    check("trace_demo_expand_path.txt", by_path)
    assert render(trace_view(demo, expand=Expansion.parse(["chat/2"]))) == by_path


async def test_trace_of_one_step(store: RunStore) -> None:
    demo = await tree(store, DEMO)
    focused = focus(demo, "reviews")
    assert focused is not None
    check("trace_demo_step_reviews.txt", render(trace_view(focused)))
    by_name = focus(demo, "critique")  # a step of the child run, by name
    assert by_name is not None and render(trace_view(by_name)) == render(
        trace_view(focus(demo, "publish/critique"))  # type: ignore[arg-type]
    )
    assert focus(demo, "nothing-like-it") is None


async def test_paused_runs_show_where_they_wait(store: RunStore) -> None:
    check("show_paused.txt", render(show_view(await tree(store, PAUSED), tz=UTC)))
    check("show_paused_in_child.txt", render(show_view(await tree(store, PAUSED_PARENT), tz=UTC)))
    check("trace_threaded.txt", render(trace_view(await tree(store, THREADED))))


def test_collapse_counts_what_it_hides() -> None:
    assert collapse("one\ntwo\nthree") == collapse("one\ntwo\nthree", lines=3)
    assert collapse("a\nb\nc\nd").complete  # one line more than fits is shown, never "1 more line"
    folded = collapse("a\nb\nc\nd\ne")
    assert (folded.shown, folded.hidden_lines, folded.hidden_chars) == ("a\nb\nc", 2, 4)
    long = collapse("x" * 250, lines=3, line_chars=200)
    assert (long.shown, long.hidden_lines, long.hidden_chars) == ("x" * 199 + "…", 0, 51)
