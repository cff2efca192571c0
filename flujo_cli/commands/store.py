"""``flujo store copy FROM TO``: move a run store between SQLite and PostgreSQL (``core.store.rows.transfer``).

FROM is opened for reading only (never created; a missing store is exit code 7, naming it); TO is created
as needed and must hold no run. The result line says what was copied and that the counts read back from
TO match FROM's; ``--json`` prints ``{"from", "to", "runs", "steps", "events", "turns"}`` (the stores
named without passwords). Exit codes: 0 copied; 2 FROM and TO are the same; 7 a store cannot be used,
TO holds runs already, or the counts differ.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import fail, stderr, usage_error


def copy_store(from_uri: str, to_uri: str, *, json_output: bool, debug: bool) -> int:
    from core.store import describe

    source_name, target_name = describe(from_uri), describe(to_uri)
    if source_name == target_name:
        usage_error(f"FROM and TO are the same store ({source_name})", "copy into another file or database")

    async def main() -> int:
        from core.store import copy_runs
        from flujo_cli.store_access import open_for, settings_with_state

        settings = settings_with_state(None)
        source = await open_for(replace(settings, state_uri=from_uri), "read")
        try:
            target = await open_for(replace(settings, state_uri=to_uri), "create")
            try:
                copied, _ = await copy_runs(source, target, progress=None if json_output else _progress)
            finally:
                await target.close()
        finally:
            await source.close()
        if json_output:
            document = {"from": source_name, "to": target_name, **copied.__dict__}
            sys.stdout.write(json.dumps(document) + "\n")
        else:
            stderr().print(
                f"copied {copied.runs} runs ({copied.steps} steps, {copied.events} events, {copied.turns} thread"
                f" turns) from {source_name} to {target_name}; the counts read back match",
                highlight=False,
            )
        return exit_codes.OK

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED
    except Exception as exc:  # the CLI's top level: one clear line, never a traceback (unless --debug)
        fail(exc, debug=debug)


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty() and (done == total or done % 100 == 0):
        sys.stderr.write(f"\rcopied {done}/{total} runs")
        sys.stderr.write("\n" if done == total else "")
