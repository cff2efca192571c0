"""``flujo lens trace`` into a pipe streams the trace node by node (``lens.stream``): the lines are exactly
those of printing the whole rich tree (``trace_view``), for every expansion and width."""

from __future__ import annotations

import io
from typing import Literal

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from core import Redactor, RunRecord, RunUpdate, StepRecord, TraceEvent
from core.store import MemoryStore
from lens import Expansion, build_tree, load_run, trace_view
from lens.stream import _ONE_CELL, _wrapped, run_lines, trace_lines
from tests.support.lens_runs import DEMO, PAUSED, THREADED, record_demo, record_others


def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, color_system=None, highlight=False)


@pytest.mark.parametrize("width", [160, 100, 61, 44, 30, 12])
@pytest.mark.parametrize("expand", [[], ["all"], ["none"], ["chat/2/clarify"]])
async def test_streamed_lines_are_the_printed_tree(width: int, expand: list[str]) -> None:
    store = MemoryStore()
    await record_demo(store)
    await record_others(store)
    compared = 0
    for run_id in (DEMO, THREADED, PAUSED):
        root = build_tree(await load_run(store, run_id, redactor=Redactor()))
        printed = _console(width)
        printed.print(trace_view(root, expand=Expansion.parse(expand)))
        whole = [line.rstrip() for line in printed.file.getvalue().splitlines()]  # type: ignore[attr-defined]
        streamed = list(trace_lines(root, _console(width), expand=Expansion.parse(expand)))
        assert streamed == whole
        compared += len(whole)
    assert compared > 40


async def test_the_first_line_comes_before_the_rest_is_laid_out() -> None:
    store = MemoryStore()
    await record_demo(store)
    root = build_tree(await load_run(store, DEMO, redactor=Redactor()))
    lines = trace_lines(root, _console(100), expand=Expansion())
    assert next(lines).startswith("run ")
    assert lines.gi_frame is not None  # type: ignore[attr-defined]  # a generator, suspended after one line


@pytest.mark.parametrize("width", [100, 30, 12])
async def test_the_run_line_from_the_record_alone_starts_the_same_lines(width: int) -> None:
    """``flujo lens trace`` into a pipe writes ``run_lines`` of the stored record before reading the run, then
    ``trace_lines`` without them: the lines of the whole tree, the record masked the same way."""
    store = MemoryStore()
    await record_demo(store)
    await record_others(store)
    secret = "sk-live-streamed-0123456789abcdef"
    await store.create_run(RunRecord("secret0000000000", f"leak {secret}", "completed", created_at=5.0))
    redactor = Redactor(secret_values=[secret])
    for run_id in (DEMO, THREADED, PAUSED, "secret0000000000"):
        record = await store.get_run(run_id)
        assert record is not None
        root = build_tree(await load_run(store, run_id, redactor=redactor, record=record))
        whole = list(trace_lines(root, _console(width), expand=Expansion()))
        head = list(run_lines(record, _console(width), redactor=redactor))
        rest = list(trace_lines(root, _console(width), expand=Expansion(), header=False))
        assert head and head + rest == whole
        assert secret not in "".join(head)


AWKWARD = [
    "a\ttab and a word far longer than any column: " + "x" * 150,
    "東京で会いましょう。" * 12 + " 🙂" * 20,
    "[bold]not markup[/] :fire: " + "word " * 40 + "\n" + "second line\n" * 12,
    "",
]


@pytest.mark.parametrize("width", [160, 80, 37, 21, 9])
@pytest.mark.parametrize("expand", [[], ["all"], ["none"]])
async def test_awkward_messages_stream_as_they_print(width: int, expand: list[str]) -> None:
    """Tabs, wide characters, words longer than the column, many lines, empty text: the grid an agent call is
    laid out in by lens.stream matches Rich's table, or is left to Rich."""
    store = MemoryStore()
    await store.create_run(RunRecord("awkward", "odd", "running", input="x", created_at=1000.0))
    messages = [{"role": role, "content": text} for role in ("system", "user", "assistant") for text in AWKWARD]
    await store.record_step(
        StepRecord("awkward", "ask", "ask", "step", "completed", input="x", output=AWKWARD[1], started_at=1000.0),
        [
            TraceEvent("agent.prompt", "ask", {"agent": "scripted", "messages": messages}, 1000.1),
            TraceEvent("agent.reply", "ask", {"output": {"text": AWKWARD[0]}, "model": "scripted"}, 1000.2),
        ],
    )
    await store.update_run("awkward", RunUpdate(status="completed", output="x", finished_at=1001.0))
    root = build_tree(await load_run(store, "awkward", redactor=Redactor()))
    printed = _console(width)
    printed.print(trace_view(root, expand=Expansion.parse(expand)))
    whole = [line.rstrip() for line in printed.file.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert list(trace_lines(root, _console(width), expand=Expansion.parse(expand))) == whole
    assert len(whole) >= 3


@pytest.mark.parametrize("overflow", ["fold", "crop", "ellipsis"])
@pytest.mark.parametrize("width", [80, 23, 7, 2, 1])
def test_a_line_wraps_as_rich_wraps_it(overflow: Literal["fold", "crop", "ellipsis"], width: int) -> None:
    """``lens.stream`` wraps a line of text without Rich's ``Text.wrap`` (too slow for a large trace): the
    same lines, but for the spaces Rich pads them with (stripped from every line written)."""
    console = _console(100)
    samples = [
        *(line for text in AWKWARD for line in text.replace("\t", " ").splitlines()),
        "a  few   spaced    words     and a long one: " + "y" * 30 + "   ",
        "   leading spaces " + "東京" * 9 + "x",
        "word " * 25,
        "x" * 41 + " then short words after a folded one " + "z" * 9,
        "short " + "w" * 17 + "   " + "v" * 3,
        "▸ call scripted · 12 messages · conversation injected: 10 turns of chat (as messages) · " + "·▸" * 20,
        "hitl.answer  asked Question 1: which city?  answered Turn 2: I would like somewhere warm, near…",
        "…" * 13 + " a…b " + "c…" * 9,
    ]
    assert all(cell_len(character) == 1 for character in _ONE_CELL)
    for plain in samples:
        rich = [line.plain.rstrip() for line in Text(plain).wrap(console, width, overflow=overflow)] or [""]
        assert [line.rstrip() for line in _wrapped(plain, width, overflow)] == rich, plain
