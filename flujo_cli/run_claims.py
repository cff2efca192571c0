"""What a run executed by ``flujo run`` or ``flujo resume`` holds besides what the engine takes: its
thread's claim, and for a resume, the run's own claim taken before the engine starts (docs/scale.md).

Invariants:

* Runs of one thread never execute at once, whoever executes them (this command or ``flujo worker``): a
  run of a thread executes only under the thread's claim (``core.store.rows.claims.thread_key``). When another
  live process holds it, the run is refused before anything is stored or executed — one line naming the
  run that holds the thread, exit code 1 — rather than left waiting for a run that may be waiting for a
  person itself. A worker passes over a queued run whose thread is held, and takes it later.
* ``flujo resume`` of a run still in the queue (``flujo submit``) takes it out of the queue under the
  run's claim, once the thread's claim is held too: from then on the run is this process's, as if it had
  been started with ``flujo run``; no worker takes it again, whether it ends, pauses or is interrupted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core import RunRecord
    from core.store import PostgresStore, SqliteStore

    Store = SqliteStore | PostgresStore


async def hold_thread(store: Store, name: str) -> None:
    """Claim thread ``name`` for the run about to execute; RunError naming its holder when it is held."""
    from core import RunError

    if await store.claim_thread(name):
        return
    running = [run for run in await store.list_runs(limit=5, status="running", thread=name) if run.owner]
    holder = f": run {running[0].run_id} is being executed by {running[0].owner}" if running else ""
    raise RunError(
        f"thread {name} is in use{holder}",
        hint="runs of one thread take turns: continue when that run has finished or paused, or use another thread",
    )


async def take_for_resume(store: Store, record: RunRecord) -> None:
    """Claim ``record``'s run and its thread for a resume, and take the run out of the queue (ResumeRefused
    when another process executes the run, RunError when another run of its thread executes)."""
    from core import busy_refusal

    if not await store.claim_run(record.run_id):
        raise busy_refusal(record)
    try:
        if record.thread is not None:
            await hold_thread(store, record.thread)
        await store.leave_queued(record.run_id)
    except BaseException:
        await store.release_run(record.run_id)
        raise
