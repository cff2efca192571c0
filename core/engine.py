"""The engine: runs a compiled Pipeline against injected ports and returns a RunOutcome.

Invariants:
- The run record is created before the first step and updated when the run ends, pauses or fails.
- Leaf steps commit as they finish, so a crash loses at most the step in flight; ``resume`` replays the
  committed steps from the journal (same outputs, same context effects) and executes only the rest.
- Control-flow signals become outcomes here and only here: Pause → ``paused`` (with the question),
  LimitReached → ``limit_reached``, Abort → ``aborted``. FlujoErrors become ``failed``.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

from core.context import RunContext
from core.errors import Abort, FlujoError, LimitReached, Pause, RunError
from core.policies.dispatch import run_steps
from core.policies.frame import Frame
from core.ports import HumanInput, HumanQuestion, NullReporter, Reporter, RunRecord, RunStatus, RunStore
from core.redaction import Redactor
from core.steps import Pipeline
from core.store.codec import normalize
from core.usage import ZERO_USAGE, Usage


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended. ``error`` is set for failed runs; ``pause`` for paused ones."""

    run_id: str
    status: RunStatus
    output: Any = None
    error: FlujoError | None = None
    failed_step: str | None = None
    pause: Pause | None = None
    detail: str | None = None
    usage: Usage = ZERO_USAGE
    replayed: int = 0  # leaf steps taken from the journal of an earlier attempt (resume)

    @property
    def ok(self) -> bool:
        return self.status == "completed"


class NoHuman:
    """A human who is never there: every HITL question pauses the run."""

    async def ask(self, question: HumanQuestion) -> str | None:
        return None


def _environment_redactor() -> Redactor:
    """The redactor of an engine built without one: the secret values of the process environment."""
    from core.config import Settings, secret_values  # lazy: pydantic only when needed

    return Redactor(secret_values=secret_values(Settings()))


def new_run_id() -> str:
    return secrets.token_hex(8)


class Engine:
    """Executes pipelines. One engine may run many pipelines; it holds no per-run state."""

    def __init__(
        self,
        *,
        store: RunStore,
        human: HumanInput | None = None,
        reporter: Reporter | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.store = store
        self.human: HumanInput = human or NoHuman()
        self.reporter: Reporter = reporter or NullReporter()
        self.redactor = redactor or _environment_redactor()

    async def run(
        self, pipeline: Pipeline, input: Any = None, *, run_id: str | None = None, thread: str | None = None
    ) -> RunOutcome:
        """Start a new run of ``pipeline`` with ``input`` as the first step's input."""
        run_id = run_id or new_run_id()
        await self.store.create_run(
            RunRecord(
                run_id=run_id,
                pipeline_name=pipeline.name,
                status="running",
                source=pipeline.source,
                source_hash=pipeline.source_hash,
                input=input,
                created_at=time.time(),
                thread=thread,
            )
        )
        # The input as the store gives it back (a JSON round trip), which is what a resumed run starts from.
        return await self._execute(pipeline, normalize(input), run_id, journal_from_store=False)

    async def resume(self, pipeline: Pipeline, run_id: str) -> RunOutcome:
        """Continue a paused or crashed run: committed steps are replayed, the rest executed. A sub-workflow's
        child run is resumed through its parent (RunError here)."""
        record = await self.store.get_run(run_id)
        if record is None:
            raise RunError(f"no run {run_id!r}", hint="list runs with: flujo lens list")
        if record.parent_run_id is not None:  # its input and context come from the parent (a sub-workflow)
            raise RunError(
                f"run {record.run_id} is a sub-workflow of run {record.parent_run_id}; resume that run instead",
                hint=f"flujo resume {record.parent_run_id} continues inside this sub-workflow",
            )
        await self.store.update_run(record.run_id, status="running")
        return await self._execute(pipeline, record.input, record.run_id, journal_from_store=True)

    async def _execute(self, pipeline: Pipeline, input: Any, run_id: str, *, journal_from_store: bool) -> RunOutcome:
        journal = {}
        if journal_from_store:
            journal = {step.path: step for step in await self.store.steps(run_id)}
        frame = Frame(
            run_id=run_id,
            store=self.store,
            human=self.human,
            reporter=self.reporter,
            redactor=self.redactor,
            limits=pipeline.limits,
            journal=journal,
        )
        outcome = await self._settle(pipeline, input, run_id, frame)
        return replace(outcome, replayed=frame.replays)

    async def _settle(self, pipeline: Pipeline, input: Any, run_id: str, frame: Frame) -> RunOutcome:
        """Run the steps and turn how they ended (value, signal or error) into a stored outcome."""
        ctx = RunContext(initial_prompt=input)
        try:
            output = await run_steps(pipeline.steps, input, ctx, "", frame)
        except Pause as pause:
            await self.store.update_run(
                run_id, status="paused", usage=frame.usage, pause_path=pause.path, pause_message=pause.message
            )
            return RunOutcome(run_id=run_id, status="paused", pause=pause, usage=frame.usage)
        except LimitReached as limit:
            await self.store.update_run(
                run_id, status="limit_reached", error=limit.detail, usage=frame.usage, finished_at=time.time()
            )
            return RunOutcome(run_id=run_id, status="limit_reached", detail=limit.detail, usage=frame.usage)
        except Abort as abort:
            await self.store.update_run(
                run_id, status="aborted", error=abort.reason, usage=frame.usage, finished_at=time.time()
            )
            return RunOutcome(run_id=run_id, status="aborted", detail=abort.reason, usage=frame.usage)
        except FlujoError as error:
            await self.store.update_run(
                run_id, status="failed", error=error.message, usage=frame.usage, finished_at=time.time()
            )
            return RunOutcome(
                run_id=run_id, status="failed", error=error, failed_step=frame.failed_step(error), usage=frame.usage
            )
        except Exception as exc:  # an injected port (store, human input) broke: record it, never leave "running"
            failure = RunError(f"{type(exc).__name__}: {exc}", hint="run again with --debug to see where")
            await self.store.update_run(
                run_id, status="failed", error=failure.message, usage=frame.usage, finished_at=time.time()
            )  # if the store itself is what broke, this raises and the caller sees the store's error
            return RunOutcome(run_id=run_id, status="failed", error=failure, usage=frame.usage)
        await self.store.update_run(
            run_id, status="completed", output=output, usage=frame.usage, finished_at=time.time()
        )
        return RunOutcome(run_id=run_id, status="completed", output=output, usage=frame.usage)
