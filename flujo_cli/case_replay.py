"""One case file replayed against its blueprint as it is now (``flujo test``), into a ``CaseResult``.

The blueprint is found relative to the case file, loaded and compiled as ``flujo run`` does, under the
settings the recorded run had (its ``--set`` values); its agents are built with a missing API key left for
a real call to report (``build_agent(defer_missing_key=True)``): a served call calls nothing, so a case
never needs a key unless its replay goes live. The engine is given the case's recording
(``core.Replay``), its answers, the simulated person the run had, and nobody to ask: a question the
recording has no answer for diverges (or, once live, pauses the run).

A case without ``expect:`` replays with mode ``stop`` and has ``passed`` when every call was served, none
recorded was left unmade and the final output equals the recorded one; ``diverged`` (with where, why and
a unified diff) otherwise. A case with ``expect:`` replays with mode ``live`` (its models must be reachable
from the first divergence on) and has passed when the run completed and every expectation holds.
``failed``: the case file or the blueprint cannot be used, or the run failed for another reason. The
digest of a blueprint that changed since the recording is only shown.

The replayed run is stored like any other run (``flujo lens show RUN``), with the option ``case``: the
case file it replayed.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from flujo_cli.redacting import command_redactor

if TYPE_CHECKING:
    from blueprints import Blueprint, Case, ExpectationResult, RunFacts
    from core import Pipeline, Replay, RunOutcome, RunStore, Settings

Status = Literal["passed", "diverged", "failed"]
# The blueprints loaded so far by one flujo test, by file and the settings given with --set: cases of one
# blueprint load (and validate) it once; each is compiled on its own (its agents keep state).
Loaded = dict[tuple[str, tuple[str, ...]], "Blueprint"]


@dataclass(frozen=True)
class CaseResult:
    """How one case replayed. ``step``: the step path it diverged or failed at (``output`` for its final
    output); ``place``: the file:line:col of what is broken (the case file, its blueprint); ``reason``: one
    line; ``diff``: the unified diff of a divergence; ``run_id``: the replayed run (stored); ``replay``: what
    the replay served (``Replay.report()``); ``live_from``: where a case with expectations left its
    recording (its calls made for real from there on)."""

    case: str
    status: Status
    seconds: float = 0.0
    reason: str | None = None
    step: str | None = None
    place: str | None = None
    diff: str | None = None
    hint: str | None = None
    run_id: str | None = None
    digest_changed: bool = False
    replay: Mapping[str, Any] | None = None
    expectations: tuple[ExpectationResult, ...] = ()
    live_from: str | None = None

    def headline(self) -> str:
        """What happened, after the status: ``FILE at STEP: reason``, or ``FILE:LINE:COL: reason``."""
        head = self.place or (f"{self.case} at {self.step}" if self.step else self.case)
        return f"{head}: {self.reason}" if self.reason else head

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "status": self.status,
            "seconds": round(self.seconds, 6),
            "reason": self.reason,
            "step": self.step,
            "place": self.place,
            "diff": self.diff,
            "hint": self.hint,
            "run_id": self.run_id,
            "digest_changed": self.digest_changed,
            "replay": dict(self.replay) if self.replay is not None else None,
            "expectations": [result.to_dict() for result in self.expectations],
            "live_from": self.live_from,
        }


async def replay_case(
    file: Path, shown: str, store: RunStore, base: Settings, *, loaded: Loaded | None = None
) -> CaseResult:
    """Replay the case at ``file`` (named ``shown`` in results) into ``store``, under the settings ``base``
    (those of the command) and the case's own; ``loaded``: the blueprints loaded by earlier cases. A store
    that fails raises; anything else is a result."""
    from core import BlueprintError, FlujoError, StoreError

    started = time.perf_counter()
    try:
        result = await _replay(file, shown, store, base, {} if loaded is None else loaded)
    except StoreError:
        raise  # not the case's failure: the command reports it (exit code 7)
    except BlueprintError as exc:  # the case file or its blueprint: file:line:col
        place = str(exc.position) if exc.position is not None else None
        result = CaseResult(shown, "failed", reason=exc.message, place=place, hint=exc.hint)
    except FlujoError as exc:  # a setting, a simulated person naming nothing, an agent that cannot be built
        result = CaseResult(shown, "failed", reason=exc.message, hint=exc.hint)
    return replace(result, seconds=time.perf_counter() - started)


async def _replay(file: Path, shown: str, store: RunStore, base: Settings, loaded: Loaded) -> CaseResult:
    from blueprints import compile_pipeline, load_blueprint, read_case, simulated_user
    from core import (
        Answering,
        BlueprintError,
        Engine,
        Replay,
        overrides_from_assignments,
        use_bounds,
    )
    from core.agents import build_agent
    from flujo_cli.store_access import settings_with_state

    case = read_case(file, bounds=base.bounds)
    given = tuple(case.options.get("set") or ())
    settings = settings_with_state(base.state_uri, overrides_from_assignments(given)) if given else base
    use_bounds(settings.bounds)  # this task's: what the blueprint's templates and expressions may make and do
    blueprint_file = Path(os.path.normpath(case.blueprint_path))
    if not blueprint_file.is_file():
        raise BlueprintError(
            f"the blueprint {case.blueprint} is not there (looked for {blueprint_file})",
            position=case.blueprint_at,
            hint="blueprint: is the path from the case file's folder to the blueprint file",
        )
    key = (str(blueprint_file.resolve()), given)
    blueprint = loaded.get(key) or loaded.setdefault(key, load_blueprint(blueprint_file, settings=settings))
    factory = functools.partial(build_agent, defer_missing_key=True)
    pipeline = compile_pipeline(blueprint, settings, agent_factory=factory)
    pipeline = _with_limits(pipeline, case.options)
    person_ref = case.options.get("simulate_user")
    person = simulated_user(blueprint, settings, person_ref, agent_factory=factory) if person_ref else None
    recording = case.recording
    replay = Replay(recording, "live" if case.expect is not None else "stop")
    redactor = command_redactor(settings)
    engine = Engine(
        store=store,
        redactor=redactor,
        answering=Answering(replay=recording.replayed_answers(), simulated_user=person),
        replay=replay,
    )
    outcome = await engine.run(pipeline, case.input, options={**case.options, "case": shown})
    changed = case.digest is not None and case.digest != pipeline.source_hash
    result = CaseResult(shown, "passed", run_id=outcome.run_id, digest_changed=changed, replay=replay.report())
    if case.expect is not None:
        return await _expected(result, case, outcome, replay, store, redactor.value(outcome.output))
    return _compared(result, case, outcome, replay, redactor.value(outcome.output))


def _with_limits(pipeline: Pipeline, options: Mapping[str, Any]) -> Pipeline:
    """``pipeline`` with the limits the recorded run was given on its command line."""
    tokens, cost = options.get("max_tokens"), options.get("max_cost_usd")
    limits = pipeline.limits
    if tokens is not None:
        limits = replace(limits, max_tokens=tokens)
    if cost is not None:
        limits = replace(limits, max_cost_usd=cost)
    return replace(pipeline, limits=limits)


def _compared(result: CaseResult, case: Case, outcome: RunOutcome, replay: Replay, output: Any) -> CaseResult:
    """A case without expectations: served throughout, and the same output."""
    from core import canonical, unified, value_lines

    first = replay.log.divergences[0] if replay.log.divergences else None
    if first is not None:
        return replace(result, status="diverged", step=first.path, reason=first.reason, diff=first.diff)
    if outcome.status != "completed":
        return _unfinished(result, outcome)
    if canonical(output) != canonical(case.output):
        diff = unified(value_lines(case.output), value_lines(output), path="output")
        reason = "the final output differs from the recorded one"
        return replace(result, status="diverged", step="output", reason=reason, diff=diff)
    return result


async def _expected(
    result: CaseResult, case: Case, outcome: RunOutcome, replay: Replay, store: RunStore, output: Any
) -> CaseResult:
    """A case with expectations: the run completed (live from its first divergence) and each holds."""
    from blueprints import check_expectations

    assert case.expect is not None
    if outcome.status != "completed":
        first = replay.log.divergences[0] if replay.log.divergences else None
        return _unfinished(replace(result, live_from=first.path if first is not None else None), outcome)
    checked = tuple(check_expectations(case.expect, await run_facts(store, outcome.run_id, output)))
    failing = [check for check in checked if not check.ok]
    first = replay.log.divergences[0] if replay.log.divergences else None
    result = replace(result, expectations=checked, live_from=first.path if first is not None else None)
    if failing:
        return replace(result, status="diverged", reason=f"{len(failing)} of {len(checked)} expectation(s) not met")
    return result


def _unfinished(result: CaseResult, outcome: RunOutcome) -> CaseResult:
    """A replayed run that did not complete, for a reason other than a divergence: a question nobody
    answers (the run paused) is a change of behaviour (diverged); an error, a limit or an abort failed it."""
    if outcome.status == "paused" and outcome.pause is not None:
        reason = f"the run asked a question the recording has no answer for: {outcome.pause.message}"
        return replace(
            result, status="diverged", step=outcome.pause.path, reason=reason, hint="nobody answers in flujo test"
        )
    error = outcome.error
    reason = error.message if error is not None else outcome.detail or outcome.status
    hint = error.hint if error is not None else None
    return replace(result, status="failed", step=outcome.failed_step, reason=reason, hint=hint)


async def run_facts(store: RunStore, run_id: str, output: Any) -> RunFacts:
    """What run ``run_id`` (and its sub-workflows' runs) did that expectations look at; ``output`` its
    final output, masked."""
    from blueprints import RunFacts

    questions: list[tuple[str, str]] = []
    tools: list[tuple[str, str]] = []
    conversations: list[tuple[str, int]] = []
    await _facts(store, run_id, "", questions, tools, conversations)
    record = await store.get_run(run_id)
    if record is not None and record.pause_path is not None:  # the question it stopped at was asked too
        questions.append((record.pause_path, record.pause_path.rsplit("/", 1)[-1]))
    return RunFacts(output, tuple(questions), tuple(tools), tuple(conversations))


async def _facts(
    store: RunStore,
    run_id: str,
    prefix: str,
    questions: list[tuple[str, str]],
    tools: list[tuple[str, str]],
    conversations: list[tuple[str, int]],
) -> None:
    from core import ChildRunStarted, EnsembleDone, LoopExited, QuestionAnswered, ToolCalled

    names = {step.path: step.name for step in await store.steps(run_id)}
    children: list[tuple[str, str]] = []
    for event in await store.events(run_id):
        data, path = event.data, f"{prefix}{event.path}"
        if isinstance(data, QuestionAnswered):
            questions.append((path, names.get(event.path) or event.path.rsplit("/", 1)[-1]))
        elif isinstance(data, ToolCalled):
            tools.append((path, data.tool))
        elif isinstance(data, LoopExited):
            conversations.append((path, data.iterations))
        elif isinstance(data, EnsembleDone):
            conversations.append((path, data.turn_count))
        elif isinstance(data, ChildRunStarted):
            children.append((event.path, data.child_run_id))
    for path, child in children:
        await _facts(store, child, f"{prefix}{path}/", questions, tools, conversations)
