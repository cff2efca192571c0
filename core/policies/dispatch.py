"""Runs a list of steps in order, dispatching each on its ``kind`` to its policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

from core.context import RunContext
from core.policies.frame import Frame, child_path
from core.policies.leaf import run_agent_step, run_hitl_step
from core.steps.kinds import (
    AgentStep,
    ConditionalStep,
    EnsembleStep,
    HitlStep,
    LoopStep,
    MapStep,
    ParallelStep,
    Step,
    WorkflowStep,
)


async def run_steps(steps: Sequence[Step], data: Any, ctx: RunContext, prefix: str, frame: Frame) -> Any:
    """Run ``steps`` in order; each step's output is the next one's input. Returns the last output."""
    for step in steps:
        data = await run_step(step, data, ctx, child_path(prefix, step.name), frame)
    return data


async def run_step(step: Step, data: Any, ctx: RunContext, path: str, frame: Frame) -> Any:
    if isinstance(step, AgentStep):
        return await run_agent_step(step, data, ctx, path, frame, run_steps)
    if isinstance(step, HitlStep):
        return await run_hitl_step(step, data, ctx, path, frame)
    # The policy of a step that runs steps is imported by the first step of its kind (with the parts of the
    # conversation it uses): a run of agent and hitl steps alone loads none of them.
    if isinstance(step, LoopStep):
        from core.policies.loop import run_loop

        return await run_loop(step, data, ctx, path, frame, run_steps)
    if isinstance(step, ParallelStep):
        from core.policies.parallel import run_parallel

        return await run_parallel(step, data, ctx, path, frame, run_steps)
    if isinstance(step, ConditionalStep):
        from core.policies.conditional import run_conditional

        return await run_conditional(step, data, ctx, path, frame, run_steps)
    if isinstance(step, MapStep):
        from core.policies.map import run_map

        return await run_map(step, data, ctx, path, frame, run_steps)
    if isinstance(step, WorkflowStep):
        from core.policies.workflow import run_workflow

        return await run_workflow(step, data, ctx, path, frame, run_steps)
    if isinstance(step, EnsembleStep):
        from core.policies.ensemble import run_ensemble

        return await run_ensemble(step, data, ctx, path, frame, run_steps)
    assert_never(step)
