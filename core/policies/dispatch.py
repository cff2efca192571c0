"""Runs a list of steps in order, dispatching each on its ``kind`` to its policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

from core.context import RunContext
from core.conversation import EnsembleStep
from core.policies.conditional import run_conditional
from core.policies.ensemble import run_ensemble
from core.policies.frame import Frame, child_path
from core.policies.leaf import run_agent_step, run_hitl_step
from core.policies.loop import run_loop
from core.policies.map import run_map
from core.policies.parallel import run_parallel
from core.policies.workflow import run_workflow
from core.steps.kinds import (
    AgentStep,
    ConditionalStep,
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
        return await run_agent_step(step, data, ctx, path, frame)
    if isinstance(step, HitlStep):
        return await run_hitl_step(step, data, ctx, path, frame)
    if isinstance(step, LoopStep):
        return await run_loop(step, data, ctx, path, frame, run_steps)
    if isinstance(step, ParallelStep):
        return await run_parallel(step, data, ctx, path, frame, run_steps)
    if isinstance(step, ConditionalStep):
        return await run_conditional(step, data, ctx, path, frame, run_steps)
    if isinstance(step, MapStep):
        return await run_map(step, data, ctx, path, frame, run_steps)
    if isinstance(step, WorkflowStep):
        return await run_workflow(step, data, ctx, path, frame, run_steps)
    if isinstance(step, EnsembleStep):
        return await run_ensemble(step, data, ctx, path, frame, run_steps)
    assert_never(step)
