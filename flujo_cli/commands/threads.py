"""``flujo threads list | show NAME | delete NAME | fork NAME NEW``: the conversations runs continue with
``--thread NAME``.

Results go to stdout (text, or one JSON document with ``--json``); messages to stderr. Each takes
``--state URI`` and never creates a store (a missing one is exit code 7, naming where it looked). An unknown
thread is one line naming the store and exit code 1 (as an unknown run id is for ``resume``); a name
that cannot be a thread's is a usage error (2). ``delete`` asks nothing: it deletes the thread's turns,
takes its runs out of it (they stay in the run store) and says what it removed. ``fork`` starts thread NEW
with a copy of NAME's first turns (``core.conversation.threads.fork_thread``) under NEW's claim, as a run of NEW
would take it; a NEW that exists, or that a run executes right now, is one line and exit code 1; ``--at-turn``
past NAME's turns is a usage error (2).

JSON shapes (stable): a thread is ``{"name", "runs", "turns", "tokens", "first_run_at", "last_run_at"}``
(counts, and run creation times in seconds since the epoch); ``list`` prints ``{"threads": [thread...]}``,
``show`` ``{"thread": thread, "turns": [{"run_id", "index", "role", "content", "text", "tokens"}...]}`` (``content``
what was said, as agents are sent it; ``text`` what a person reads of it: a structured reply's question or
message, or the step's ``turn_text``), ``delete`` ``{"deleted": thread}``, ``fork`` ``{"forked": {"from": NAME,
"turns": N, "run_id": the fork's run, "thread": thread}}``. The transcript shows ``text``; a fork's run is headed
``fork of NAME`` instead of its status.

``show`` masks secrets in the turns as lens does (``core.text.redaction``): the store keeps them as typed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import error_line, fail, stderr, usage_error
from flujo_cli.redacting import command_redactor

if TYPE_CHECKING:
    from core import RunRecord, RunStore, ThreadSummary, ThreadTurn
    from core.store import PostgresStore, SqliteStore


def list_threads(*, json_output: bool, state: str | None = None, debug: bool) -> int:
    async def body(store: RunStore, where: str) -> int:
        threads = await store.list_threads()
        if json_output:
            _print_json({"threads": [_summary_data(t) for t in threads]})
        elif not threads:
            stderr().print(f"no threads in {where} yet; start one with: flujo run FILE --thread NAME", highlight=False)
        else:
            _print_lines(_table(threads))
        return exit_codes.OK

    return _with_store(body, state=state, debug=debug)


def show_thread(name: str, *, json_output: bool, state: str | None = None, debug: bool) -> int:
    _check_name(name)

    async def body(store: RunStore, where: str) -> int:
        summary = await store.get_thread(name)
        if summary is None:
            return _unknown(name, where)
        turns = _masked(await store.thread_turns(name))
        if json_output:
            _print_json({"thread": _summary_data(summary), "turns": [_turn_data(t) for t in turns]})
            return exit_codes.OK
        statuses = {}
        for run_id in dict.fromkeys(t.run_id for t in turns):
            record = await store.get_run(run_id)
            statuses[run_id] = (_status(record), _when(record.created_at)) if record else ("?", "")
        _print_lines(_transcript(summary, turns, statuses))
        return exit_codes.OK

    return _with_store(body, state=state, debug=debug)


def delete_thread(name: str, *, json_output: bool, state: str | None = None, debug: bool) -> int:
    _check_name(name)

    async def body(store: RunStore, where: str) -> int:
        removed = await store.delete_thread(name)
        if removed is None:
            return _unknown(name, where)
        if json_output:
            _print_json({"deleted": _summary_data(removed)})
        else:
            _print_lines(
                [
                    f"deleted thread {name}: {_count(removed.turns, 'turn')} of {_count(removed.runs, 'run')}"
                    " (the runs stay in the run store)"
                ]
            )
        return exit_codes.OK

    return _with_store(body, state=state, debug=debug, mode="existing")


def fork_thread(
    name: str, new: str, *, at_turn: int | None, json_output: bool, state: str | None = None, debug: bool
) -> int:
    _check_name(name)
    _check_name(new)

    async def body(store: SqliteStore | PostgresStore, where: str) -> int:
        from core import RunError, new_run_id
        from core import fork_thread as fork
        from flujo_cli.run_claims import hold_thread

        summary = await store.get_thread(name)
        if summary is None:
            return _unknown(name, where)
        if at_turn is not None and at_turn > summary.turns:
            error_line(
                f"--at-turn {at_turn}: thread {name} has {_count(summary.turns, 'turn')}",
                f"give a number from 1 to {summary.turns}" if summary.turns else "fork it without --at-turn",
            )
            return exit_codes.USAGE
        run_id = new_run_id()
        try:
            await hold_thread(store, new)  # no run of NEW starts meanwhile (released when the store closes)
            forked = await fork(store, name, new, run_id=run_id, at_turn=at_turn)
        except RunError as exc:  # NEW exists, or a run of it executes right now
            error_line(exc.message, exc.hint)
            return exit_codes.FAILED
        record = await store.get_run(run_id)
        assert forked is not None and record is not None
        if json_output:
            _print_json(
                {"forked": {"from": name, "turns": forked.turns, "run_id": run_id, "thread": _summary_data(forked)}}
            )
        else:
            copied = (
                f"all {_count(forked.turns, 'turn')}"
                if forked.turns == summary.turns
                else (f"its first {forked.turns} of {summary.turns} turns")
            )
            _print_lines(
                [
                    f"forked thread {name} into {new}: {copied}",
                    f"continue it with: flujo run {_file(record)} --thread {new}{_state_option(state)}",
                ]
            )
        return exit_codes.OK

    return _with_store(body, state=state, debug=debug, mode="existing")


def _with_store(
    body: Callable[[SqliteStore | PostgresStore, str], Awaitable[int]],
    *,
    state: str | None,
    debug: bool,
    mode: Literal["read", "existing"] = "read",
) -> int:
    """Open the run store ``--state`` or the settings name (never creating it: a missing one is exit code
    7, naming where it looked), run ``body`` with it and its name, close it; errors as one line."""

    async def main() -> int:
        from flujo_cli.store_access import open_for, settings_with_state, where

        settings = settings_with_state(state)
        store = await open_for(settings, mode)
        try:
            return await body(store, where(settings))
        finally:
            await store.close()

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED
    except Exception as exc:  # the CLI's top level: one clear line, never a traceback (unless --debug)
        fail(exc, debug=debug)


def _masked(turns: Sequence[ThreadTurn]) -> list[ThreadTurn]:
    """``turns`` with secrets masked as lens masks them: the store keeps what was typed, as typed."""
    from core import load_settings
    from flujo_cli.user_cache import kept_settings

    settings = load_settings(check=kept_settings())
    redactor = command_redactor(settings)
    return [
        replace(
            turn,
            content=redactor.text(turn.content),
            shown=redactor.text(turn.shown) if turn.shown is not None else None,
        )
        for turn in turns
    ]


def _status(record: RunRecord) -> str:
    """A run's status as a transcript heads it; a fork's run (``flujo threads fork``) says what it copied."""
    from core import FORK_OPTION

    fork = (record.options or {}).get(FORK_OPTION)
    if isinstance(fork, dict) and isinstance(fork.get("thread"), str):
        return f"fork of {fork['thread']}"
    return record.status


def _file(record: RunRecord) -> str:
    """The blueprint of ``record`` as a command to paste names it: relative to the working directory when
    inside it, else its path; ``FILE`` when it has none."""
    import os
    import shlex

    if record.source is None:
        return "FILE"
    relative = os.path.relpath(record.source)
    return shlex.quote(record.source if relative.startswith("..") else relative)


def _state_option(state: str | None) -> str:
    from flujo_cli.store_access import settings_with_state, state_option

    return state_option(settings_with_state(state))


def _check_name(name: str) -> None:
    from core import RunError, check_thread_name

    try:
        check_thread_name(name)
    except RunError as exc:
        usage_error(exc.message, exc.hint)


def _unknown(name: str, where: str) -> int:
    from flujo_cli.store_access import elsewhere

    error_line(f"no thread named {name!r} in {where}", elsewhere("list its threads with: flujo threads list"))
    return exit_codes.FAILED


def _table(threads: Sequence[ThreadSummary]) -> list[str]:
    rows = [("THREAD", "RUNS", "TURNS", "TOKENS", "LAST RUN")] + [
        (t.name, str(t.runs), str(t.turns), str(t.tokens), _when(t.last_run_at)) for t in threads
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return [
        f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]:>{widths[3]}}  {row[4]}"
        for row in rows
    ]


def _transcript(summary: ThreadSummary, turns: Sequence[ThreadTurn], runs: dict[str, tuple[str, str]]) -> list[str]:
    """The thread's turns grouped by run, oldest first, each as a ``User:`` / ``Assistant:`` line."""
    lines = [
        f"thread {summary.name}: {_count(summary.runs, 'run')}, {_count(summary.turns, 'turn')},"
        f" {_count(summary.tokens, 'token')}"
    ]
    current = None
    for turn in turns:
        if turn.run_id != current:
            current = turn.run_id
            status, when = runs[current]
            lines += ["", f"run {current} · {status} · {when}"]
        label = f"  {turn.role.capitalize()}: "
        first, *rest = turn.text.split("\n")
        lines.append(label + first)
        lines.extend(" " * len(label) + line for line in rest)  # a long turn stays under its label
    return lines


def _summary_data(summary: ThreadSummary) -> dict[str, Any]:
    return {
        "name": summary.name,
        "runs": summary.runs,
        "turns": summary.turns,
        "tokens": summary.tokens,
        "first_run_at": summary.first_run_at,
        "last_run_at": summary.last_run_at,
    }


def _turn_data(turn: ThreadTurn) -> dict[str, Any]:
    return {
        "run_id": turn.run_id,
        "index": turn.index,
        "role": turn.role,
        "content": turn.content,
        "text": turn.text,
        "tokens": turn.tokens,
    }


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")


def _print_lines(lines: Sequence[str]) -> None:
    sys.stdout.write("".join(f"{line}\n" for line in lines))
