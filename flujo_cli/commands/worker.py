"""``flujo worker``: take queued runs (``flujo submit``) from the store and execute them with the engine
``flujo run`` uses, several at a time (docs/scale.md).

Invariants:

* A run is executed only under its claim (``take_queued`` claims it, and its thread's claim with it), so
  no two workers, on any machine, execute one run (or two runs of one thread) at once; a worker that dies
  leaves its claim behind nowhere, and another worker resumes the run from its journal (no committed step
  runs again; the questions answered took the first of its submitted answers, so the next gets the next).
* A run that ends, pauses or fails leaves the queue (a failed run is not retried: ``flujo resume`` does
  that); an interrupted one (SIGTERM after the grace period, Ctrl-C) goes back to it, to be resumed.
* SIGTERM: stop taking runs, let those in hand finish for ``grace_s`` seconds, then interrupt them as
  Ctrl-C does; exit 0. Ctrl-C (SIGINT) interrupts them at once.
* The store unavailable (``StoreUnavailable``: its server lost, or its file locked past
  ``sqlite.busy_timeout_s``), from a run or from the worker's own polling: stop taking runs, give up the
  runs in hand without writing anything (the store refuses writes until it reconnects; their claims are
  released, or go with their connection), and try to reach the store again with a growing pause for
  ``reconnect_for_s`` seconds. Back: take runs again, the given-up ones among them, resumed from their
  journals by whichever worker claims them first. Not back in time: one line, exit code 7 (the runs stay
  resumable). A run is never recorded as failed for the store, and no task ends with an exception nobody
  retrieves.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

import flujo_cli.collection as collection
import flujo_cli.exit_codes as exit_codes
from core import StoreUnavailable
from flujo_cli.blueprint_cache import BlueprintCache
from flujo_cli.messages import fail, stderr
from flujo_cli.redacting import command_redactor

if TYPE_CHECKING:
    from rich.console import Console

    from core import Redactor, RunOutcome
    from core.store import PostgresStore, SqliteStore, Taken
    from flujo_cli.live_traces import LiveTraces

    Store = SqliteStore | PostgresStore

POLL_S = 0.2
"""How often a worker with nothing to take looks at the queue again (and at cancel requests)."""

FIRST_RETRY_S = 0.5
LONGEST_RETRY_S = 5.0
"""The pauses between two tries to reach an unavailable store: doubling from the first to the longest."""


@dataclass
class _Worker:
    store: Store
    state: str | None
    console: Console
    concurrency: int
    grace_s: float
    reconnect_for_s: float
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    cancelled: set[str] = field(default_factory=set)
    ended: Counter[str] = field(default_factory=Counter)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    interrupt_now: bool = False
    lost: StoreUnavailable | None = None  # the store became unavailable: the runs in hand are given up
    traces: LiveTraces | None = None  # runs sent to the configured collector as they end (docs/observability.md)
    cache: BlueprintCache = field(init=False)  # the settings and blueprints of its runs (flujo_cli.blueprint_cache)
    asked_cancel: float = 0.0  # when it last read the cancel requests (time.monotonic)
    unsaid: list[str] = field(default_factory=list)  # log lines not written yet (_say)
    flushing: asyncio.TimerHandle | None = None

    def __post_init__(self) -> None:
        self.cache = BlueprintCache(self.state)

    def stop(self, *, now: bool) -> None:
        """SIGTERM (``now`` False) or Ctrl-C. A second Ctrl-C exits at once, as a crash would (the claims go
        with the process; the runs in hand resume from their last commit): the first one's interrupted runs
        may be waiting for the store, up to ``sqlite.busy_timeout_s`` for a file another process keeps locked."""
        if now and self.interrupt_now:
            self._print("interrupted again: exiting now; the runs in hand resume from their last finished step")
            sys.stderr.flush()
            os._exit(exit_codes.INTERRUPTED)
        if now and self.tasks:
            self._print(f"interrupting {len(self.tasks)} run(s) in hand (Ctrl-C again exits at once)")
        self.interrupt_now = self.interrupt_now or now
        self.stopping.set()

    async def loop(self, *, until_idle: bool) -> None:
        while not self.stopping.is_set():
            try:
                if await self._round(until_idle=until_idle):
                    return
            except StoreUnavailable as exc:
                self._lose(exc)
            if self.lost is not None:
                await self._ride_out(self.lost)
        await self._wind_down()

    async def _round(self, *, until_idle: bool) -> bool:
        """Take runs up to the concurrency, wait a little, pass on cancel requests; True when idle and done."""
        took = False
        while len(self.tasks) < self.concurrency and not self.stopping.is_set() and self.lost is None:
            taken = await self.store.take_queued()
            if taken is None:
                break
            took = True
            self.tasks[taken.record.run_id] = asyncio.create_task(self._execute(taken))
        if until_idle and not took and not self.tasks and await self.store.queue_waiting() == 0:
            return True
        await self._wait(POLL_S)
        if self.lost is None:
            await self._cancel_requested()
        return False

    def _lose(self, exc: StoreUnavailable) -> None:
        """The store became unavailable: say so, once (the runs in hand will each find it out too)."""
        if self.lost is None:
            self.lost = exc
            self._print(
                f"the run store is unavailable: {escape(exc.message)}; the runs in hand stop, resumable from their"
                f" last finished step; trying to reach it again for up to {self.reconnect_for_s:g}s"
            )

    async def _ride_out(self, lost: StoreUnavailable) -> None:
        """Give up the runs in hand, then try to reach the store again until it is back (and return) or
        ``reconnect_for_s`` has passed (StoreUnavailable: exit code 7). SIGTERM or Ctrl-C end the wait."""
        for task in list(self.tasks.values()):
            task.cancel()  # their writes are refused at once: nothing of them is recorded
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()))
        since = time.monotonic()
        pause = FIRST_RETRY_S
        while True:
            try:
                await self.store.reconnect()
                break
            except StoreUnavailable as exc:
                lost = exc
            left = since + self.reconnect_for_s - time.monotonic()
            if left <= 0 or self.stopping.is_set():
                how = "stopped while trying again" if self.stopping.is_set() else "gave up after trying"
                raise StoreUnavailable(
                    f"{lost.message}; {how} for {time.monotonic() - since:.0f}s",
                    hint="the runs this worker held are saved up to their last finished step: another worker"
                    " takes them, or flujo resume RUN_ID",
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=min(pause, left))
            pause = min(pause * 2, LONGEST_RETRY_S)
        self.lost = None
        self.cancelled.clear()
        self._print(f"the run store is back after {time.monotonic() - since:.1f}s; taking runs again")

    async def _wait(self, timeout: float) -> None:
        stop = asyncio.create_task(self.stopping.wait())
        await asyncio.wait([stop, *self.tasks.values()], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()

    async def _cancel_requested(self) -> None:
        """Cancel the runs in hand that ``flujo cancel`` asked to stop: read at most twice every ``POLL_S`` (a worker
        whose runs are short would otherwise ask after each one)."""
        if not self.tasks or time.monotonic() - self.asked_cancel < POLL_S / 2:
            return
        self.asked_cancel = time.monotonic()
        for run_id in await self.store.cancel_requests(list(self.tasks)):
            if run_id not in self.cancelled and run_id in self.tasks:
                self.cancelled.add(run_id)
                self.tasks[run_id].cancel()

    async def _wind_down(self) -> None:
        if self.tasks and not self.interrupt_now:
            self._print(
                f"stopping: {len(self.tasks)} run(s) in hand get {self.grace_s:g}s to finish, then are interrupted"
            )
            deadline = time.monotonic() + self.grace_s
            while self.tasks and not self.interrupt_now and (left := deadline - time.monotonic()) > 0:
                await asyncio.wait(list(self.tasks.values()), timeout=min(left, POLL_S))
                await self._cancel_requested()
        for task in list(self.tasks.values()):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()))

    async def _execute(self, taken: Taken) -> None:
        """Execute the run ``taken`` and record how it ended; never raises (but CancelledError of its own task),
        so no task ends with an exception nobody retrieves."""
        from core import FlujoError

        run_id = taken.record.run_id
        started = time.perf_counter()
        try:
            await self._settle(taken, started)
        except StoreUnavailable as exc:  # from the run, or from recording how it ended
            self._lose(exc)
            self._report(run_id, "interrupted", "the run store is unavailable; resumable from its last finished step",
                         started)  # fmt: skip
        except FlujoError as exc:  # how it ended could not be recorded (a full disk): one line, resumable
            self._report(run_id, "unrecorded", exc.message, started)
        finally:
            self.tasks.pop(run_id, None)
            await self.store.release_run(run_id)

    async def _settle(self, taken: Taken, started: float) -> None:
        """Execute the run and record how it ended. A run that ends, pauses, fails or is cancelled leaves the
        queue in the transaction that records its status (``update_run``: ``core.store.rows.queue_rows``), so
        that one transaction finishes it; an interrupted one is given back to the queue."""
        from core import FlujoError, RunUpdate

        run_id = taken.record.run_id
        took = time.time()  # what this worker does of the run starts now (the spans it sends)
        try:
            self._say(f"started {run_id}", now=True)
            outcome = await self._resume(taken)
            if outcome is None:  # settled elsewhere while it was queued (a row an older flujo left behind)
                await self.store.leave_queued(run_id)
                self._report(run_id, "skipped", "it is no longer queued", started)
                return
        except asyncio.CancelledError:
            if self.lost is not None:  # given up: the store refuses writes, the run stays as it was
                raise self.lost from None
            if run_id in self.cancelled:
                await self.store.update_run(run_id, RunUpdate(status="cancelled", finished_at=time.time()))
                self._report(run_id, "cancelled", "", started)
            else:  # resumable: back to the queue, for this worker or another
                await self.store.leave_queued(run_id, requeue=True)
                self._report(run_id, "interrupted", "saved up to its last finished step; back in the queue", started)
        except StoreUnavailable:
            raise
        except Exception as exc:  # the blueprint is gone or changed, an agent cannot be built (or a bug): failed
            message = exc.message if isinstance(exc, FlujoError) else f"unexpected {type(exc).__name__}: {exc}"
            await self.store.update_run(run_id, RunUpdate(status="failed", error=message, finished_at=time.time()))
            self._report(run_id, "failed", message, started)
        else:  # the engine recorded how it ended, and it left the queue with that
            self._report(run_id, outcome.status, _detail(outcome), started)
            if self.traces is not None:
                await self.traces.add(self.store, run_id, redactor=self._redactor(), since=took)

    def _redactor(self) -> Redactor:
        """The redactor of the worker's settings (what it sends is masked as lens shows it)."""
        from flujo_cli.store_access import settings_with_state

        settings = settings_with_state(self.state)
        return command_redactor(settings)

    def _report(self, run_id: str, status: str, detail: str, started: float) -> None:
        self.ended[status] += 1
        seconds = time.perf_counter() - started
        self._say(f"{status} {run_id} · {seconds:.2f}s" + (f" · {detail}" if detail else ""))

    def _say(self, line: str, *, now: bool = False) -> None:
        """One line of the worker's log of its runs: through the console on a terminal; else (a service's log)
        written as it is, rendering it through rich costing more than a short run: ``now`` (a run started:
        said before it executes anything, so a killed worker's log names the runs it held) with the lines
        waiting, the others within ``POLL_S / 2`` or with the next line said ``now`` (a worker whose runs are
        short writes once per run)."""
        if self.console.is_terminal:
            self.console.print(escape(line))
            return
        self.unsaid.append(line)
        if now:
            self._flush()
        elif self.flushing is None:
            self.flushing = asyncio.get_running_loop().call_later(POLL_S / 2, self._flush)

    def _flush(self) -> None:
        """Write the log lines waiting (before anything else the worker prints)."""
        if self.flushing is not None:
            self.flushing.cancel()
            self.flushing = None
        if self.unsaid:
            self.console.file.write("".join(f"{line}\n" for line in self.unsaid))
            self.unsaid.clear()
            self.console.file.flush()

    def _print(self, text: str) -> None:
        """``text`` through the console, after the log lines waiting."""
        self._flush()
        self.console.print(text)

    async def _resume(self, taken: Taken) -> RunOutcome | None:
        """Execute the run taken from the queue as ``flujo run`` would have, with what was submitted: a fresh
        run as ``flujo run`` starts one, a run taken again (its worker died, or SIGTERM put it back) resumed
        from its journal as the transaction that took it read it (``Taken.journal``): nothing is read first."""
        from blueprints import simulated_user
        from core import Answering, Engine, RunError, StepPaths
        from core.store import RUNNABLE
        from flujo_cli.answering import given_answers_in
        from flujo_cli.commands.run import RunOverrides, _with_limits
        from flujo_cli.human import TerminalHuman

        record = taken.record
        run_id = record.run_id
        if record.status not in RUNNABLE:  # it ended, paused or was cancelled: nothing to execute
            return None
        options: dict[str, Any] = record.options or {}
        overrides = RunOverrides().over(options)
        if record.source is None or not os.path.isfile(record.source):
            raise RunError(f"the blueprint of run {run_id} ({record.source}) is no longer there")
        # The settings and --model overrides it was submitted with, the blueprint and its pipeline: loaded and
        # compiled again only when a file changed (or, for agents that keep run state, compiled for each run).
        prepared = self.cache.prepared(Path(record.source), overrides.setting_assignments(), overrides.models)
        settings, blueprint = prepared.settings, prepared.blueprint
        pipeline = _with_limits(prepared.pipeline, overrides)
        ref = options.get("simulate_user")
        person = simulated_user(blueprint, settings, ref) if isinstance(ref, str) else None
        given = TerminalHuman(
            answers=list(options.get("answers") or []),
            by_step=dict(options.get("answers_by_step") or {}),
            interactive=False,
            console=self.console,
        )
        ambiguous = given.key_by(StepPaths(pipeline))
        if ambiguous is not None:
            key, paths = ambiguous
            raise RunError(
                f"the answers key {key!r} names {len(paths)} steps: {', '.join(paths)}",
                hint=f"key the answers by a step's path instead, e.g. {paths[-1]}: ...",
            )
        answering = Answering(given=given, simulated_user=person)
        engine = Engine(store=self.store, redactor=prepared.redactor, answering=answering)
        if taken.journal is not None:
            # Re-executed from its journal (its worker died, or SIGTERM put it back in the queue), as the take
            # read it: the questions answered already took the first of its answers, and are not asked again.
            given.pass_over(given_answers_in(taken.journal))
        return await engine.start_taken(pipeline, record, taken.journal)


def _detail(outcome: RunOutcome) -> str:
    if outcome.pause is not None:
        return f"at {outcome.pause.step}: {outcome.pause.message}"
    if outcome.error is not None:
        return outcome.error.message
    return outcome.detail or ""


def work(
    *, concurrency: int, until_idle: bool, grace_s: float, reconnect_for_s: float, state: str | None, debug: bool
) -> int:
    try:
        with collection.paused():  # until the worker is ready to take runs (flujo_cli/collection.py)
            return asyncio.run(
                _work(
                    concurrency=concurrency,
                    until_idle=until_idle,
                    grace_s=grace_s,
                    reconnect_for_s=reconnect_for_s,
                    state=state,
                )
            )
    except Exception as exc:  # the CLI's top level: one clear line
        fail(exc, debug=debug)


async def _work(
    *, concurrency: int, until_idle: bool, grace_s: float, reconnect_for_s: float, state: str | None
) -> int:
    from core.store import SqliteStore, process_label
    from flujo_cli.live_traces import LiveTraces
    from flujo_cli.store_access import open_for, settings_with_state, where

    console = stderr()
    settings = settings_with_state(state)
    store = await open_for(settings)
    worker = _Worker(
        store=store,
        state=state,
        console=console,
        concurrency=concurrency,
        grace_s=grace_s,
        reconnect_for_s=reconnect_for_s,
        traces=LiveTraces.configured(settings),
    )
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: worker.stop(now=False))
    loop.add_signal_handler(signal.SIGINT, lambda: worker.stop(now=True))
    # What executing a run needs, loaded before the first run is taken rather than during it.
    for module in ("blueprints", "flujo_cli.answering", "flujo_cli.commands.run", "flujo_cli.human"):
        importlib.import_module(module)
    # What is loaded now lives as long as the worker: frozen, so that neither the collections during its runs
    # nor the ones at its exit (a quarter of a second here) scan it; collection resumes for what runs make.
    collection.loaded()
    console.print(f"worker {process_label()} on {where(settings)}: up to {concurrency} run(s) at a time")
    try:
        await worker.loop(until_idle=until_idle)
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        loop.remove_signal_handler(signal.SIGINT)
        worker._flush()
        waits = store.lock_waits if isinstance(store, SqliteStore) else 0
        await store.close()
        if waits:
            console.print(f"the store's file was busy: {waits} write(s) of this worker waited for another's lock")
        if worker.traces is not None:
            await worker.traces.close()
        total = sum(worker.ended.values())
        parts = ", ".join(f"{count} {status.replace('_', ' ')}" for status, count in sorted(worker.ended.items()))
        console.print(f"worker {process_label()}: {total} run(s)" + (f": {parts}" if parts else ""))
    return exit_codes.OK
