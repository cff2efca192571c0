"""The ``--json`` documents of ``flujo lens list | show | trace``: plain data, stable keys (docs/cli.md).

Built from masked records only (``lens.masking``); ``masked_document`` masks the finished document once
more, keys included, so a value that reached a document some other way is masked too.

Shapes:

* a run: ``{"run_id", "blueprint", "status", "parent_run_id", "thread", "source", "created_at",
  "finished_at", "duration_s", "usage", "error", "pause", "steps"}`` (``pause`` is ``{"path", "message"}``
  or null; ``steps`` the number of steps recorded, in ``list``);
* a node of the tree: ``{"type": "step", "path", "name", "kind", "status", "started_at", "duration_s",
  "input", "output", "error", "usage", "children"}`` (``trace`` adds ``"events"``: ``{"kind", "ts",
  "payload"}`` in order); ``{"type": "iteration" | "item" | "branch" | "group", "key", "path",
  "children"}``; a child run: the run's keys with ``"type": "run"``, ``"path"`` (of the step that started
  it) and ``"children"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core import Redactor, RunRecord, TraceEvent
from lens.labels import run_duration
from lens.listing import RunRow
from lens.masking import Masker
from lens.tree import GroupNode, Node, RunNode, StepNode

_GROUP_TYPES = {"iteration": "iteration", "item": "item", "branch": "branch"}


def list_document(rows: Sequence[RunRow]) -> dict[str, Any]:
    """``{"runs": [run...]}``, newest first; a run whose process is gone is ``interrupted``, its
    ``status_note`` saying so (``process 4242 is gone``)."""
    return {
        "runs": [
            run_document(row.record) | {"status": row.status, "status_note": row.note, "steps": row.steps}
            for row in rows
        ]
    }


def show_document(root: RunNode) -> dict[str, Any]:
    """``{"run": run (with "input" and "output"), "steps": [node...]}``."""
    return {"run": run_with_values(root.record), "steps": _nodes(root.children, events=False)}


def trace_document(root: RunNode) -> dict[str, Any]:
    """``{"run": run (with "input", "output" and its run-level "events"), "spans": [node...]}``."""
    run = run_with_values(root.record) | {"events": _events(root)}
    return {"run": run, "spans": _nodes(root.children, events=True)}


def final_output_document(record: RunRecord) -> dict[str, Any]:
    return {"run_id": record.run_id, "status": record.status, "output": record.output}


def masked_document(document: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    masked = Masker(redactor).value(document)
    assert isinstance(masked, dict)
    return masked


def run_document(record: RunRecord) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "blueprint": record.pipeline_name,
        "status": record.status,
        "parent_run_id": record.parent_run_id,
        "thread": record.thread,
        "source": record.source,
        "created_at": record.created_at,
        "finished_at": record.finished_at,
        "duration_s": run_duration(record),
        "usage": record.usage.to_dict(),
        "error": record.error,
        "pause": {"path": record.pause_path, "message": record.pause_message} if record.pause_path else None,
    }


def run_with_values(record: RunRecord) -> dict[str, Any]:
    """A run with its ``input`` and ``output`` (``show`` and ``trace``)."""
    return run_document(record) | {"input": record.input, "output": record.output}


def _nodes(nodes: Sequence[Node], *, events: bool) -> list[dict[str, Any]]:
    return [found for node in nodes if (found := node_document(node, events=events)) is not None]


def node_document(node: Node, *, events: bool = True) -> dict[str, Any] | None:
    """A node of ``spans`` (``steps`` in ``show``, without ``events``): a step, an iteration (item, branch,
    group) or a child run, with everything below it, its ``children`` last; None for the other nodes (an
    agent call, a message, an event: a step's ``events`` hold them)."""
    if isinstance(node, StepNode):
        return _step(node, events=events)
    if isinstance(node, GroupNode):
        kind = _GROUP_TYPES.get(node.word, "group")
        return {"type": kind, "key": node.key, "path": node.path, "children": _nodes(node.children, events=events)}
    if isinstance(node, RunNode):
        child = run_with_values(node.record) | {"type": "run", "path": node.path}
        if events:
            child["events"] = _events(node)
        return child | {"children": _nodes(node.children, events=events)}
    return None


def _step(node: StepNode, *, events: bool) -> dict[str, Any]:
    record = node.record
    data: dict[str, Any] = {
        "type": "step",
        "path": node.path,
        "name": node.name,
        "kind": record.kind if record else None,
        "status": node.status,
        "started_at": record.started_at if record else None,
        "duration_s": record.duration_s if record else None,
        "input": record.input if record else None,
        "output": record.output if record else None,
        "error": record.error if record else None,
        "usage": node.own_usage.to_dict() if record or node.interrupted else None,
    }
    if events:
        data["events"] = _events(node)
    data["children"] = _nodes(node.children, events=events)
    return data


def trace_event(event: TraceEvent) -> dict[str, Any]:
    """An event of a ``trace`` document: ``{"kind", "ts", "payload"}``."""
    return {"kind": event.kind, "ts": event.ts, "payload": dict(event.payload)}


def _events(node: StepNode | RunNode) -> list[dict[str, Any]]:
    return [trace_event(e) for e in node.events]
