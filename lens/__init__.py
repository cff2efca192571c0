"""Lens: reads the run store and shows runs, their steps and their traces, redacted.

    from lens import load_tree, trace_view
    tree = await load_tree(store, "3f2a", redactor=redactor)
    console.print(trace_view(tree))

``load_tree`` (``load_run`` then ``build_tree``) and ``recent_runs`` read a ``RunStore`` and mask every
text with the ``Redactor`` given (``lens.masking``); ``build_tree`` makes the span tree (``lens.tree``); the
plain views are rich renderables (``lens.plain``), the ``--json`` documents plain data (``lens.documents``);
``open_viewer`` opens the Textual viewer (imported only then); ``run_lines`` and ``trace_lines`` write the
plain trace line by line into a pipe (``lens.stream``, imported when first asked for), ``write_trace`` the
``--json`` trace a part at a time (``lens.json_trace``, ``lens.parts``); ``parse_age``,
``prune_summary`` and ``prune_document`` word ``flujo lens prune`` (the store deletes: ``RunStore.prune_runs``);
``compared_runs``, ``compare_runs``, ``diff_lines`` and ``diff_document`` compare two runs' recorded calls for
``flujo lens diff`` (``lens.diff``; the CLI reads each run with ``core.load_recording``, its calls put in
step order by ``in_step_order``).
``parse_moment`` reads the ages and dates of ``--older-than`` and ``--since`` (``lens.ages``).
``export_run`` and ``LiveExport`` send runs to an OpenTelemetry collector (``lens.otel``: OpenTelemetry is
imported when one of them is first asked for; ``OtlpTarget`` and ``otel_installed`` import none of it).

Imports core's records, trace events and redactor, through ``core``'s front door only; ``flujo_cli``
imports lens, never the other way round.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING

from core.front_door import lazy_exports
from lens.ages import parse_age, parse_moment
from lens.documents import final_output_document, list_document, masked_document, show_document, trace_document
from lens.listing import RunRow, as_shown, nested, recent_runs
from lens.loading import load_tree
from lens.plain import Expansion, runs_table, show_view, trace_view
from lens.prune import document as prune_document
from lens.prune import summary as prune_summary
from lens.selection import focus, step_paths_named
from lens.snapshot import RunSnapshot, load_run
from lens.tree import CallNode, EventNode, GroupNode, MessageNode, Node, RunNode, StepNode, build_tree, walk

if TYPE_CHECKING:
    from lens.call_order import in_step_order
    from lens.diff import RunDiff, compare_runs, compared_runs, diff_document, diff_lines
    from lens.json_trace import write_trace
    from lens.otel.sending import LiveExport, export_run
    from lens.otel.target import EXTRA as OTEL_EXTRA
    from lens.otel.target import OtlpTarget, otel_installed
    from lens.stream import run_lines, trace_lines
    from lens.why import Provenance, calls_below, why_document, why_lines

# Imported when first asked for: only ``flujo lens trace`` into a pipe writes the trace line by line,
# ``flujo lens trace --json`` a part at a time, only ``flujo lens diff`` compares two runs, only ``--why``
# says where each message came from, and only a run sent to a collector needs OpenTelemetry.
_LAZY = {
    "run_lines": "lens.stream",
    "trace_lines": "lens.stream",
    "write_trace": "lens.json_trace",
    "RunDiff": "lens.diff",
    "compare_runs": "lens.diff",
    "compared_runs": "lens.diff",
    "diff_document": "lens.diff",
    "diff_lines": "lens.diff",
    "in_step_order": "lens.call_order",
    "Provenance": "lens.why",
    "calls_below": "lens.why",
    "why_document": "lens.why",
    "why_lines": "lens.why",
    "LiveExport": "lens.otel.sending",
    "export_run": "lens.otel.sending",
    "OTEL_EXTRA": "lens.otel.target:EXTRA",
    "OtlpTarget": "lens.otel.target",
    "otel_installed": "lens.otel.target",
}

__all__ = [
    "OTEL_EXTRA",
    "CallNode",
    "EventNode",
    "Expansion",
    "GroupNode",
    "LiveExport",
    "MessageNode",
    "Node",
    "OtlpTarget",
    "Provenance",
    "RunDiff",
    "RunNode",
    "RunRow",
    "RunSnapshot",
    "StepNode",
    "as_shown",
    "build_tree",
    "calls_below",
    "compare_runs",
    "compared_runs",
    "diff_document",
    "diff_lines",
    "export_run",
    "final_output_document",
    "focus",
    "in_step_order",
    "list_document",
    "load_run",
    "load_tree",
    "masked_document",
    "nested",
    "open_viewer",
    "otel_installed",
    "parse_age",
    "parse_moment",
    "prune_document",
    "prune_summary",
    "recent_runs",
    "run_lines",
    "runs_table",
    "show_document",
    "show_view",
    "step_paths_named",
    "trace_document",
    "trace_lines",
    "trace_view",
    "walk",
    "why_document",
    "why_lines",
    "write_trace",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


def open_viewer(
    root: RunNode, *, expand: Expansion | None = None, tz: tzinfo | None = None, whole: RunNode | None = None
) -> None:
    """Open the interactive viewer of ``root`` (a part of ``whole``, the run, when given) in the terminal and
    return when the user quits (``q``). Textual is imported here, on first use, not when lens is."""
    from lens.viewer import TraceViewer

    TraceViewer(root, expand=expand, tz=tz, whole=whole).run()
