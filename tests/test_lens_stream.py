"""``flujo lens trace`` into a pipe streams the trace node by node (``lens.stream``): the lines are exactly
those of printing the whole rich tree (``trace_view``), for every expansion and width."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from core.redaction import Redactor
from core.store import MemoryStore
from lens import Expansion, build_tree, load_run, trace_view
from lens.stream import trace_lines
from tests.lens_runs import DEMO, PAUSED, THREADED, record_demo, record_others


def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, color_system=None, highlight=False)


@pytest.mark.parametrize("width", [100, 44])
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
