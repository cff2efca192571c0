"""The values shell completion offers from the project, one function per kind of value, attached to the
parameters that take it (``autocompletion=`` in ``flujo_cli.main``): run ids, thread names, the agents of a
blueprint, the steps of a run.

Each takes the command's context (what the line holds so far: ``--state``, the blueprint FILE, the RUN_ID) and
the word being completed, and returns ``(value, description)`` pairs, newest first where that means something;
Typer keeps those that start with the word. Each reads the run store with ``core.store.peek_store`` (which
never fails and never writes) or the blueprint file with PyYAML: none imports the engine, pydantic or the async
stores, so a completion costs little more than Python's start. What is not there (no store, no file, an id
that names no run) gives no values.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from core.store import StorePeek

Values = list[tuple[str, str]]

MAX_RUNS = 50
"""How many run ids a completion offers (the newest); typing the start of an id narrows them."""
FINISHED = ("completed",)  # the one status ``flujo resume`` refuses
CANCELLABLE = ("queued", "running")  # what ``flujo cancel`` stops (docs/scale.md)
EXPAND_WORDS = (("all", "every prompt whole"), ("none", "one line per agent call"))


def run_ids(ctx: typer.Context, incomplete: str) -> Values:
    """Run ids (``lens show``, ``lens trace``, ``lens diff``, ``--replay``): the newest top-level runs, each
    described by its status, blueprint and start."""
    return _runs(ctx, incomplete)


def resumable_run_ids(ctx: typer.Context, incomplete: str) -> Values:
    """Run ids for ``flujo resume``: the runs it would continue (all but the completed)."""
    return _runs(ctx, incomplete, excluding=FINISHED)


def cancellable_run_ids(ctx: typer.Context, incomplete: str) -> Values:
    """Run ids for ``flujo cancel``: queued and running runs."""
    return _runs(ctx, incomplete, statuses=CANCELLABLE)


def thread_names(ctx: typer.Context, incomplete: str) -> Values:
    """Thread names (``--thread``, ``threads show|delete|fork``), the one with the latest run first."""
    with _peek(ctx) as peek:
        if peek is None:
            return []
        return [(t.name, f"{_count(t.runs, 'run')}, latest {_when(t.last_run_at)}") for t in peek.threads()]


def agent_refs(ctx: typer.Context, incomplete: str) -> Values:
    """``agents.NAME`` for ``--simulate-user``: the agents of the blueprint FILE on the line (``run``,
    ``submit``), or of the run RUN_ID continues (``resume``), each described by its model."""
    from flujo_cli.completion.blueprint_agents import agent_names

    typed = ctx.params.get("file")  # as typed: completion converts no value (flujo_cli.completion.shells)
    file = Path(typed) if isinstance(typed, str | Path) else _run_source(ctx)
    if file is None:
        return []
    return [(f"agents.{name}", model) for name, model in agent_names(file)]


def step_names(ctx: typer.Context, incomplete: str) -> Values:
    """What ``lens trace RUN_ID --step`` takes, from the steps RUN_ID recorded: the steps' names; once a ``/`` is
    typed, run paths (``chat/3/clarify``, and the iterations above them) and step paths (``chat/clarify``)."""
    with _peek(ctx) as peek:
        if peek is None:
            return []
        run_id = peek.run_id(str(ctx.params.get("run_id") or ""))
        steps = peek.steps(run_id) if run_id is not None else []
    kinds = {step.path: step.kind for step in steps}
    if "/" not in incomplete:
        return list(dict.fromkeys((step.name, step.kind) for step in steps))
    paths: dict[str, str] = {}
    for step in steps:
        parts = step.path.split("/")
        for end in range(1, len(parts) + 1):
            path = "/".join(parts[:end])
            paths.setdefault(path, kinds.get(path, "iteration or branch"))
        paths.setdefault(_step_path(step.path, kinds), step.kind)
    return list(paths.items())


def expand_values(ctx: typer.Context, incomplete: str) -> Values:
    """What ``lens trace --expand`` takes: ``all``, ``none``, or the steps ``--step`` takes."""
    return [*EXPAND_WORDS, *step_names(ctx, incomplete)]


def shell_names(incomplete: str) -> Values:
    """The shells ``flujo completion`` writes scripts for."""
    return [("bash", ""), ("zsh", ""), ("fish", "")]


def _runs(
    ctx: typer.Context, incomplete: str, *, statuses: Iterable[str] | None = None, excluding: Iterable[str] = ()
) -> Values:
    with _peek(ctx) as peek:
        if peek is None:
            return []
        found = peek.runs(
            prefix=incomplete,
            limit=MAX_RUNS,
            statuses=None if statuses is None else tuple(statuses),
            excluding=tuple(excluding),
        )
    return [(run.run_id, f"{run.status}, {run.pipeline_name}, {_when(run.created_at)}") for run in found]


def _run_source(ctx: typer.Context) -> Path | None:
    """The blueprint file of the run the line names (``flujo resume RUN_ID``)."""
    with _peek(ctx) as peek:
        if peek is None:
            return None
        run_id = peek.run_id(str(ctx.params.get("run_id") or ""))
        source = peek.source(run_id) if run_id is not None else None
    return Path(source) if source is not None else None


def _step_path(path: str, kinds: dict[str, str]) -> str:
    """The step path of the step at run path ``path``: the names of the recorded steps it is in, and its own,
    without the iterations, items and branches between them (``chat/3/clarify`` → ``chat/clarify``)."""
    parts = path.split("/")
    return "/".join(parts[end - 1] for end in range(1, len(parts) + 1) if "/".join(parts[:end]) in kinds)


@contextmanager
def _peek(ctx: typer.Context) -> Iterator[StorePeek | None]:
    """A look at the store the line names (``--state``, else the one the command would find), closed at the
    end; None when there is none."""
    from core.store import peek_store, project_state_uri

    state = ctx.params.get("store")
    peek = peek_store(project_state_uri(state if isinstance(state, str) else None, env=os.environ))
    try:
        yield peek
    finally:
        if peek is not None:
            peek.close()


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
