"""The engine: runs a compiled Pipeline against injected ports and returns a RunOutcome.

Invariants:
- The run record is created before the first step and updated when the run ends, pauses or fails.
- Leaf steps commit as they finish, so a crash loses at most the step in flight; ``resume`` replays the
  committed steps from the journal (same outputs, same context effects) and executes only the rest.
- Control-flow signals become outcomes here and only here: Pause → ``paused`` (with the question),
  LimitReached → ``limit_reached``, Abort → ``aborted``. FlujoErrors become ``failed``, except
  ``StoreUnavailable``: the store is gone (or stayed locked), so nothing more is written and it propagates
  to the caller; the run stays as its last commit left it, resumable.
- A run in a thread (``core.conversation``) stores the turns it added to it whenever it stops, before its
  status, so a run recorded as ended always has its turns.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from core.answering.order import Answering
from core.context import RunContext
from core.conversation import ThreadBinding, bind_thread, check_thread
from core.model.calls import HumanQuestion
from core.model.codec import normalize
from core.model.errors import (
    Abort,
    FlujoError,
    LimitReached,
    Pause,
    ReplayStop,
    ResumeRefused,
    RunError,
    StoreUnavailable,
)
from core.model.records import Journal, RunRecord, RunStatus, RunUpdate
from core.model.usage import ZERO_USAGE, Usage
from core.policies.dispatch import run_steps
from core.policies.frame import Frame
from core.ports import HumanInput, NullReporter, Reporter, RunStore
from core.steps.kinds import Pipeline
from core.text.redaction import Redactor

if TYPE_CHECKING:  # only types here: a replay's and a simulated person's code loads when one is used
    from core.replay.replayer import Replay


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
    from core.settings.config import Settings, secret_values  # lazy: pydantic only when needed

    return Redactor(secret_values=secret_values(Settings()))


def _check_resumable(record: RunRecord, pipeline: Pipeline, *, force: bool) -> None:
    if record.status == "completed":
        raise ResumeRefused(
            f"run {record.run_id} already completed; there is nothing to resume",
            hint=f"start a new run with: flujo run {record.source or 'FILE'}",
        )
    changed = record.source_hash is not None and record.source_hash != pipeline.source_hash
    if changed and not force:
        where = f"the blueprint {record.source}" if record.source else "the blueprint"
        raise ResumeRefused(
            f"{where} changed since run {record.run_id} started",
            hint="restore it, or resume with --force to go on with the changed file"
            " (finished steps keep their recorded results)",
        )


def busy_refusal(record: RunRecord) -> ResumeRefused:
    """The refusal of a resume while another live process executes ``record``'s run (holds its claim)."""
    owner = f" ({record.owner})" if record.owner else ""
    return ResumeRefused(
        f"run {record.run_id} is being executed by another flujo process{owner}",
        hint="wait for it to finish or pause; a run whose process died can be resumed",
    )


def new_run_id() -> str:
    return os.urandom(8).hex()  # what secrets.token_hex(8) returns, without importing secrets (hmac, random)


class Engine:
    """Executes pipelines. One engine may run many pipelines; it holds no per-run state."""

    def __init__(
        self,
        *,
        store: RunStore,
        human: HumanInput | None = None,
        reporter: Reporter | None = None,
        redactor: Redactor | None = None,
        answering: Answering | None = None,
        replay: Replay | None = None,
    ) -> None:
        self.store = store
        self.answering = answering or Answering()  # who answers before the human (core.answering.order)
        # The recording the run is served from (``flujo run --replay``: core.replay), if any.
        self.replay = replay
        self.human: HumanInput = human or NoHuman()
        self.reporter: Reporter = reporter or NullReporter()
        self.redactor = redactor or _environment_redactor()

    async def run(
        self,
        pipeline: Pipeline,
        input: Any = None,
        *,
        run_id: str | None = None,
        thread: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> RunOutcome:
        """Start a new run of ``pipeline`` with ``input`` as the first step's input.

        With ``thread``, the run continues that conversation (``core.conversation``): RunError before anything
        is stored when the name is not valid or the pipeline has no ``conversation: true`` loop."""
        if thread is not None:
            check_thread(pipeline, thread)
        record = pipeline.new_run(run_id or new_run_id(), input, thread=thread, options=options)
        await self.store.create_run(record)
        if not await self.store.claim_run(record.run_id):
            raise RunError(f"run {record.run_id} is already being executed", hint="every run needs a new id")
        try:
            # The input as the store gives it back (a JSON round trip), which is what a resumed run starts from.
            return await self._execute(pipeline, replace(record, input=normalize(input)), journal_from_store=False)
        finally:
            await self.store.release_run(record.run_id)

    async def resume(
        self,
        pipeline: Pipeline,
        run_id: str,
        *,
        force: bool = False,
        options: dict[str, Any] | None = None,
        claimed: bool = False,
    ) -> RunOutcome:
        """Continue a paused, failed, interrupted or crashed run: committed steps are replayed, the rest
        executed (in the same thread, if the run has one). ``run_id`` may be a unique prefix.

        Refused (``ResumeRefused``) when the run completed, when another live process is executing it
        (a crashed process holds no claim, so its run resumes), or when ``pipeline`` is not the blueprint
        the run started with (its source hash differs) unless ``force``; a sub-workflow's child run is
        resumed through its parent. ``options`` replaces the run's recorded ``RunRecord.options``. With
        ``claimed`` the caller (``flujo resume``, which claimed the run to take it out of the queue) holds its
        claim: it is neither taken nor released here. A worker's run taken again goes through ``start_taken``."""
        record = await self.store.get_run(run_id)
        if record is None:
            raise RunError(f"no run matches {run_id!r}", hint="list runs with: flujo lens list")
        if record.parent_run_id is not None:  # its input and context come from the parent (a sub-workflow)
            raise ResumeRefused(
                f"run {record.run_id} is a sub-workflow of run {record.parent_run_id}; resume that run instead",
                hint=f"flujo resume {record.parent_run_id} continues inside this sub-workflow",
            )
        full_id = record.run_id
        if not claimed and not await self.store.claim_run(full_id):
            raise busy_refusal(record)
        try:
            # Read again under the claim: the process that held it may have finished the run meanwhile.
            record = await self.store.get_run(full_id)
            assert record is not None
            _check_resumable(record, pipeline, force=force)
            await self.store.update_run(full_id, RunUpdate(status="running", options=options))
            if options is not None:  # the options the run goes on with (its end writes them back, with its report)
                record = replace(record, options=options)
            return await self._execute(pipeline, record, journal_from_store=True)
        finally:
            if not claimed:
                await self.store.release_run(full_id)

    async def start_taken(self, pipeline: Pipeline, record: RunRecord, earlier: Journal | None = None) -> RunOutcome:
        """Execute a queued run which the caller took from the queue: it holds the run's claim, and ``record``
        is the run as taking it read it (marked running). A run never started (``earlier`` None): as ``run``
        does once it has created and claimed a run, nothing to read back, no journal. A run taken again, after
        its worker died or was stopped: resumed from ``earlier``, what it had recorded as the same transaction
        read it (``Journal``), with nothing read from the store first. ``ResumeRefused``, as ``resume`` would
        refuse it, when ``pipeline`` is not the blueprint the run was submitted with (its source hash differs)."""
        _check_resumable(record, pipeline, force=False)
        return await self._execute(pipeline, record, journal_from_store=False, earlier=earlier)

    async def _execute(
        self, pipeline: Pipeline, record: RunRecord, *, journal_from_store: bool, earlier: Journal | None = None
    ) -> RunOutcome:
        run_id = record.run_id
        journal = {}
        if journal_from_store:
            journal = {step.path: step for step in await self.store.steps(run_id)}
        thread = await bind_thread(self.store, record)
        if thread is not None:
            self.reporter.note(thread.note)
        heard = thread if thread is not None else await self._replayed_thread(record)
        frame = Frame(
            run_id=run_id,
            store=self.store,
            human=self.human,
            reporter=self.reporter,
            redactor=self.redactor,
            limits=pipeline.limits,
            journal=journal,
            thread=heard,
            started=None if journal_from_store else {},  # a new run has no earlier attempts to count
            answering=self.answering,
            replay=self.replay,
        )
        if earlier is not None:  # its journal, attempts and interrupted calls as the worker's take read them
            frame.go_on_from(earlier)
        elif journal_from_store:  # what an earlier process sent and never recorded the reply of still counts
            await frame.count_interrupted()
        if (journal_from_store or earlier is not None) and self.replay is not None:
            self.replay.resumed(frame.journal)  # what the journal holds was served by the process that made it,
            self.replay.restore((record.options or {}).get("replay_report"))  # and it goes on as it left off
        ctx = RunContext(initial_prompt=record.input)
        try:
            outcome = await self._outcome(pipeline, record.input, run_id, frame, ctx)
        except asyncio.CancelledError:  # Ctrl-C (or a caller's cancel) outside a prompt: keep what was said
            if thread is not None:
                await self.store.record_thread_turns(run_id, ctx.thread_turns)
            update = RunUpdate(status="interrupted", usage=frame.usage, options=self._replay_options(record))
            await self.store.update_run(run_id, update)  # (a resumed replay goes on from its report)
            raise
        finally:  # the run's MCP servers stop with it, however it ended
            problems = await frame.tool_sessions.aclose() if frame.tool_sessions is not None else []
            for problem in problems:
                self.reporter.note(f"a tool's server did not stop cleanly: {problem}")
        if thread is not None:  # before the status: a run that ends "completed" has its turns stored
            await self.store.record_thread_turns(run_id, ctx.thread_turns)
        if self.replay is not None and outcome.status == "completed":  # a recorded call never made diverges
            self.replay.finish()
        options = self._replay_options(record)
        await self.store.update_run(
            run_id,
            RunUpdate(
                status=outcome.status,
                output=outcome.output,
                error=outcome.error.message if outcome.error is not None else outcome.detail,
                usage=frame.usage,
                pause_path=outcome.pause.path if outcome.pause is not None else None,
                pause_message=outcome.pause.message if outcome.pause is not None else None,
                finished_at=None if outcome.status == "paused" else time.time(),
                options=options,
            ),
        )  # if the store itself is what broke, this raises and the caller sees the store's error
        return replace(outcome, replayed=frame.replays)

    def _replay_options(self, record: RunRecord) -> dict[str, Any] | None:
        """The run's options with its replay's report (``replay_report``: whether it replayed its recording
        cleanly, and where not), written whenever the run stops; None when it replays nothing."""
        if self.replay is None:
            return None
        return {**(record.options or {}), "replay_report": self.replay.summary()}

    async def _replayed_thread(self, record: RunRecord) -> ThreadBinding | None:
        """A replay of a run that continued a thread, itself in none: its conversation opens with what the
        recorded run's did (the turns of the thread's runs before it), so that its prompts can be the same.
        The replay adds nothing to the thread (its turns are stored only for a run in the thread)."""
        recording = self.replay.recording if self.replay is not None else None
        if recording is None or recording.thread is None:
            return None
        return await bind_thread(self.store, replace(record, run_id=recording.run_id, thread=recording.thread))

    async def _outcome(self, pipeline: Pipeline, input: Any, run_id: str, frame: Frame, ctx: RunContext) -> RunOutcome:
        """Run the steps and turn how they ended (value, signal or error) into an outcome."""
        try:
            output = await run_steps(pipeline.steps, input, ctx, "", frame)
        except Pause as pause:
            return RunOutcome(run_id=run_id, status="paused", pause=pause, usage=frame.usage)
        except ReplayStop as stop:  # the replay diverged and stops: the run fails where it diverged
            return RunOutcome(
                run_id=run_id, status="failed", error=stop.error, failed_step=stop.error.path, usage=frame.usage
            )
        except LimitReached as limit:
            return RunOutcome(run_id=run_id, status="limit_reached", detail=limit.detail, usage=frame.usage)
        except Abort as abort:
            return RunOutcome(run_id=run_id, status="aborted", detail=abort.reason, usage=frame.usage)
        except StoreUnavailable:
            raise  # not the run's failure, and it could not be recorded: the run stays resumable
        except FlujoError as error:
            return RunOutcome(
                run_id=run_id, status="failed", error=error, failed_step=frame.failed_step(error), usage=frame.usage
            )
        except Exception as exc:  # an injected port (store, human input) broke: record it, never leave "running"
            failure = RunError(f"{type(exc).__name__}: {exc}", hint="run again with --debug to see where")
            return RunOutcome(run_id=run_id, status="failed", error=failure, usage=frame.usage)
        return RunOutcome(run_id=run_id, status="completed", output=output, usage=frame.usage)
