"""Parallel policy: branches run concurrently on isolated contexts, then merge and reduce.

Branch order (as written) is kept for outputs, merging and reducing, whatever order branches finish in.
A control-flow signal from any branch propagates after all branches have settled (their committed
steps are replayed on resume); the thread turns said in every branch are kept (``RunContext.keep_said``).
``on_branch_failure: ignore`` leaves failed branches out of the output.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any, assert_never

from core.context import RunContext
from core.conversation import branch_records
from core.model.errors import ControlSignal, FlujoError, LimitReached, RunError, StepFailed, StoreUnavailable
from core.model.events import ParallelDone
from core.policies.body import BodyRunner
from core.policies.context_writes import record_output
from core.policies.frame import Frame, child_path
from core.steps.kinds import MergeStrategy, ParallelStep, ReduceMode

_MISSING = object()


def merge_contexts(ctx: RunContext, branches: list[tuple[str, RunContext]], strategy: MergeStrategy, step: str) -> None:
    """Fold the successful branch contexts back into ``ctx`` according to ``strategy``. What was said in
    the branches (conversation turns, HITL answers, thread turns) is a record, not state: every strategy
    keeps all of it, in branch order (``core.conversation.branch_records``)."""
    said = branch_records(ctx, [branch for _, branch in branches])
    _merge_state(ctx, branches, strategy, step)
    said.restore(ctx)


def _merge_state(ctx: RunContext, branches: list[tuple[str, RunContext]], strategy: MergeStrategy, step: str) -> None:
    if strategy == "no_merge":
        return
    base = dict(ctx.scratchpad)
    if strategy == "overwrite":
        if branches:
            ctx.adopt(branches[-1][1])
        return
    # Taken before merging: what each branch added is relative to the parent as the branches found it.
    base_steps = dict(ctx.steps)
    written: dict[str, tuple[str, Any]] = {}
    for name, branch in branches:
        for key, value in branch.scratchpad.items():
            if base.get(key, _MISSING) == value:
                continue
            if key in written:
                first_branch, first_value = written[key]
                if strategy == "keep_first":
                    continue
                if strategy == "error_on_conflict" and first_value != value:
                    raise StepFailed(
                        f"parallel {step!r}: branches {first_branch!r} and {name!r} both set scratchpad.{key}",
                        step=step,
                        hint="use merge_strategy: merge_scratchpad (last branch wins) or keep_first",
                    )
            written[key] = (name, value)
            ctx.scratchpad[key] = value
        for key, value in branch.steps.items():
            # A branch's own outputs replace older ones of the same name (a parallel inside a loop); between
            # branches, the first to write a name keeps it.
            if base_steps.get(key) is not value and ctx.steps.get(key) is base_steps.get(key):
                ctx.steps[key] = value


def reduce_outputs(outputs: Mapping[str, Any], mode: ReduceMode, step: str) -> Any:
    """Combine branch outputs (in branch order) into one value."""
    values = list(outputs.values())
    if mode == "keys":
        return list(outputs.keys())
    if mode == "values":
        return values
    if mode == "first":
        return values[0] if values else None
    if mode == "last":
        return values[-1] if values else None
    if mode == "concat":
        if all(isinstance(v, str) for v in values):
            return "\n".join(values)
        combined: list[Any] = []
        for value in values:
            combined.extend(value if isinstance(value, list) else [value])
        return combined
    if mode == "union":
        if all(isinstance(v, Mapping) for v in values):
            merged: dict[str, Any] = {}
            for value in values:
                merged.update(value)
            return merged
        seen: list[Any] = []
        for value in values:
            for item in value if isinstance(value, list) else [value]:
                if item not in seen:
                    seen.append(item)
        return seen
    if mode == "dedupe":
        return _dedupe(values)
    assert_never(mode)


def _dedupe(values: list[Any]) -> list[Any]:
    """The outputs one after another (lists spliced), each value kept at its first occurrence.

    Values are compared by their canonical JSON, not by Python equality: ``1``, ``1.0`` and ``true`` are three
    values, and ``{"a": 1, "b": 2}`` repeats ``{"b": 2, "a": 1}``.
    """
    seen: set[str] = set()
    kept: list[Any] = []
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            key = json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
            if key not in seen:
                seen.add(key)
                kept.append(item)
    return kept


async def run_parallel(
    step: ParallelStep, data: Any, ctx: RunContext, path: str, frame: Frame, body: BodyRunner
) -> Any:
    frame.reporter.step_started(path, step.name, step.kind)
    started = time.time()
    contexts = [(name, ctx.branch()) for name, _ in step.branches]
    try:
        results = await asyncio.gather(
            *(
                body(steps, data, branch_ctx, child_path(path, name), frame)
                for (name, steps), (_, branch_ctx) in zip(step.branches, contexts, strict=True)
            ),
            return_exceptions=True,
        )
    except asyncio.CancelledError:  # Ctrl-C: what the branches said stays said
        ctx.keep_said([branch_ctx for _, branch_ctx in contexts])
        raise
    for result in results:
        if isinstance(result, ControlSignal | StoreUnavailable) or (
            isinstance(result, BaseException) and not isinstance(result, Exception)
        ):
            ctx.keep_said([branch_ctx for _, branch_ctx in contexts])
            if isinstance(result, LimitReached):
                raise frame.restate(result)  # its siblings may have spent more after it was raised
            raise result  # a signal, or CancelledError / KeyboardInterrupt of a branch
    outputs: dict[str, Any] = {}
    succeeded: list[tuple[str, RunContext]] = []
    failures: dict[str, str] = {}
    for (name, branch_ctx), result in zip(contexts, results, strict=True):
        if isinstance(result, Exception):
            failures[name] = result.message if isinstance(result, FlujoError) else repr(result)
            if step.on_branch_failure == "propagate":
                ctx.keep_said([branch_ctx for _, branch_ctx in contexts])
                error = result if isinstance(result, FlujoError) else RunError(f"branch {name!r} failed: {result!r}")
                await frame.commit(
                    path=path, name=step.name, kind=step.kind, status="failed", started=started,
                    input=data, error=f"branch {name!r} failed: {failures[name]}", failure=error,
                )  # fmt: skip
                raise error
            continue
        outputs[name] = result
        succeeded.append((name, branch_ctx))
    try:
        merge_contexts(ctx, succeeded, step.merge_strategy, step.name)
        final = reduce_outputs(outputs, step.reduce, step.name) if step.reduce else outputs
    except FlujoError as exc:
        await frame.commit(
            path=path, name=step.name, kind=step.kind, status="failed", started=started,
            input=data, error=exc.message, failure=exc,
        )  # fmt: skip
        raise
    record_output(ctx, step.name, final)
    events = [frame.event(path, ParallelDone(tuple(outputs), failures))]
    await frame.commit(
        path=path, name=step.name, kind=step.kind, status="completed", started=started,
        input=data, output=final, events=events,
    )  # fmt: skip
    return final
