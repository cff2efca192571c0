"""``flujo lens list | show RUN | trace RUN | diff RUN_A RUN_B | prune``: look into the run store, redacted.

Results go to stdout (text, or one JSON document with ``--json``); messages to stderr. ``list``, ``show``,
``trace`` and ``diff`` open the store with ``mode="read"``: they never create it (a missing store is exit
code 7 with the path it looked at) and never change it. Every text they print went through the ``Redactor``
built from the settings, as ``flujo run`` builds it (lens masks again what the store holds; see
``lens.masking``).

Every command takes ``--state URI`` (``flujo_cli.store_access``); a run id that matches nothing is said
with the store looked in and how to look in another. ``diff`` reads its second run from ``--other-state
URI`` when given (both stores opened read-only), from the same store otherwise.

Exit codes: 0 (for ``diff``, whether the runs differ or not: its output says which); 1 when no run matches
the id (or ``--step`` matches no step, or ``--final-output`` of a run without one); 2 for a bad command
line (or ``--step``/``--expand`` given a name that several steps have: the message lists their paths); 7
when the store is missing or cannot be read, or an id prefix is ambiguous (the message names the
candidates), as for ``flujo resume``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from rich.console import RenderableType

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import error_line, fail, plain_console, stderr, usage_error
from flujo_cli.redacting import command_redactor

if TYPE_CHECKING:
    from core import Redactor, RunRecord, RunStatus, RunStore
    from lens import Expansion, RunNode


@dataclass(frozen=True)
class TraceOptions:
    step: str | None = None
    expand: Sequence[str] = ()
    tui: bool | None = None  # None: the viewer when stdout is a terminal (and no --json)
    why: bool = False  # --why: each call's messages with where they came from, instead of the trace


@dataclass(frozen=True)
class ListOptions:
    """Which runs ``flujo lens list`` shows: ``--status``, ``--thread``, ``--since``, ``--search``, ``--offset``,
    ``--limit``."""

    status: str | None = None
    thread: str | None = None
    since: str | None = None
    search: str | None = None
    offset: int = 0
    limit: int = 20


def list_runs(options: ListOptions, *, json_output: bool, state: str | None = None, debug: bool) -> int:
    from lens import parse_moment

    checked = _status(options.status)
    try:
        since = None if options.since is None else parse_moment(options.since, now=time.time())
    except ValueError as exc:
        usage_error(f"--since {exc}")
    if options.search is not None and not options.search.strip():
        usage_error("--search needs a text to look for", 'for example: --search "Lisbon"')

    async def body(store: RunStore, redactor: Redactor, where: str) -> int:
        from lens import list_document, masked_document, nested, recent_runs, runs_table

        rows = await recent_runs(
            store, redactor=redactor, limit=options.limit, status=checked, thread=options.thread, since=since,
            search=options.search, offset=options.offset,
        )  # fmt: skip
        if json_output:
            _print_json(masked_document(list_document(rows), redactor))
        elif not rows:
            # --limit 0 asks for none: the store may hold runs, so it is an option that matched nothing too
            filtered = (
                options.status or options.thread or options.since or options.search or options.offset
                or options.limit == 0
            )  # fmt: skip
            which = " matching those options" if filtered else ""
            stderr().print(f"no runs{which} in {where}", highlight=False)
        else:
            _print(runs_table(nested(rows)))
        return exit_codes.OK

    return _with_store(body, state=state, debug=debug)


def show_run(run_id: str, *, final_output: bool, json_output: bool, state: str | None = None, debug: bool) -> int:
    async def body(store: RunStore, redactor: Redactor, where: str) -> int:
        from lens import (
            StepNode,
            as_shown,
            final_output_document,
            load_tree,
            masked_document,
            show_document,
            show_view,
            walk,
        )

        found = await _found(store, run_id, where)
        if found is None:
            return exit_codes.FAILED
        found = await as_shown(store, found)
        tree = await load_tree(store, run_id, redactor=redactor, record=found, kinds=_blueprint_kinds(found))
        record = tree.record
        if final_output:
            if record.output is None and record.status != "completed":
                error_line(
                    f"run {record.run_id} has no final output: it is {record.status.replace('_', ' ')}",
                    f"see where it stopped with: flujo lens show {record.run_id}",
                )
                return exit_codes.FAILED
            if json_output:
                _print_json(masked_document(final_output_document(record), redactor))
            else:
                _print_output(record.output)
            return exit_codes.OK
        if json_output:
            _print_json(masked_document(show_document(tree), redactor))
        else:
            own = [n for n in walk(tree) if isinstance(n, StepNode) and n.record and n.run_id == record.run_id]
            _print(show_view(tree, steps=len(own)))
        return exit_codes.OK

    return _with_store(body, state=state, debug=debug)


def trace_run(run_id: str, options: TraceOptions, *, json_output: bool, state: str | None = None, debug: bool) -> int:
    from lens import Expansion

    expansion = Expansion.parse(options.expand)
    if expansion.everything and expansion.nothing:
        usage_error("--expand all and --expand none contradict each other", "give one of them")
    terminal = sys.stdout.isatty() and sys.stdin.isatty()  # the viewer reads keys and draws on the screen
    interactive = options.tui if options.tui is not None else (terminal and not json_output and not options.why)
    if interactive and json_output:
        usage_error("--tui and --json do not go together", "drop one of them")
    if interactive and not terminal:
        usage_error("--tui needs a terminal", "without it, the trace is printed (add --plain to be explicit)")
    shown: list[RunNode] = []
    shown_expansion: list[Expansion] = []

    async def body(store: RunStore, redactor: Redactor, where: str) -> int:
        from lens import as_shown, load_tree, masked_document, trace_document, trace_view

        record = await _found(store, run_id, where)
        if record is None:
            return exit_codes.FAILED
        record = await as_shown(store, record)
        if json_output and options.step is None and not expansion.paths:  # the whole run: written as it is read
            from lens import write_trace

            await write_trace(
                store,
                record,
                redactor=redactor,
                write=sys.stdout.write,
                flush=sys.stdout.flush,
                kinds=_blueprint_kinds(record),
            )
            return exit_codes.OK
        piped = not interactive and not json_output and not sys.stdout.isatty()
        console = plain_console(file=sys.stdout, color_system=None, width=_width())
        # Into a pipe, the run's own line needs its record only: written now, before its steps and events
        # are read (a second for 10,000 events), unless --step or --expand NAME may yet turn it into an error.
        early = piped and options.step is None and not expansion.paths and not options.why
        if early:
            from lens import run_lines

            _write_lines(run_lines(record, console, redactor=redactor))
            sys.stdout.flush()
        whole = await load_tree(store, run_id, redactor=redactor, record=record, kinds=_blueprint_kinds(record))
        if _ambiguous(whole, options.step, expansion.paths):
            return exit_codes.USAGE
        expanded = _expanded(whole, expansion)
        tree = _focused(whole, options.step) if expanded is not None else None
        if tree is None or expanded is None:
            return exit_codes.FAILED
        shown_expansion.append(expanded)
        if interactive:  # with --why too: its detail pane says why each message is there
            shown.extend((tree, whole))  # the viewer runs its own event loop, after this one is closed
            # The tree lives until the process ends: out of the collector's sight (frozen while it is
            # paused, before it can scan them), its objects are not scanned at every collection while the
            # viewer runs (with a 10,000-event run, that was 0.3 s at opening alone).
            gc.freeze()
        elif options.why:
            _print_why(whole, tree, json_output=json_output)
        elif json_output:
            _print_json(masked_document(trace_document(tree), redactor))
        elif not piped:
            _print(trace_view(tree, expand=expanded))
        else:  # into a pipe or a file: each node written as it is laid out (lens.stream)
            from lens import trace_lines

            for line in trace_lines(tree, console, expand=expanded, header=not early):
                sys.stdout.write(line + "\n")
        return exit_codes.OK

    code = _with_store(body, state=state, debug=debug)
    if shown:
        from lens import open_viewer

        try:
            open_viewer(shown[0], expand=shown_expansion[0], whole=shown[1])
        except Exception as exc:  # the CLI's top level
            fail(exc, debug=debug)
    return code


def diff_runs(
    run_a: str,
    run_b: str,
    *,
    every: bool,
    json_output: bool,
    state: str | None = None,
    other_state: str | None = None,
    debug: bool,
) -> int:
    """``flujo lens diff``: runs ``run_a`` (in ``state``'s store) and ``run_b`` (in ``other_state``'s, or the
    same) compared call by call (``lens.diff``)."""

    async def main() -> int:
        from contextlib import AsyncExitStack

        from core import load_recording
        from flujo_cli.store_access import open_for, settings_with_state, where
        from lens import (
            as_shown,
            compare_runs,
            compared_runs,
            diff_document,
            diff_lines,
            in_step_order,
            masked_document,
        )

        settings = settings_with_state(state)
        other = settings if other_state is None else settings_with_state(other_state)
        redactor = command_redactor(settings)
        async with AsyncExitStack() as stores:
            store_a = await open_for(settings, "read")
            stores.push_async_callback(store_a.close)
            store_b = store_a
            if where(other) != where(settings):
                store_b = await open_for(other, "read")
                stores.push_async_callback(store_b.close)
            record_a = await _found(store_a, run_a, where(settings))
            if other_state is None:
                record_b = await _found(store_b, run_b, where(other))
            else:
                record_b = await _found_in_other(store_b, run_b, where(other))
            if record_a is None or record_b is None:
                return exit_codes.FAILED
            read = []
            for store, record in ((store_a, record_a), (store_b, record_b)):
                recording = await load_recording(store, record.run_id, redactor)
                calls = await in_step_order(store, record.run_id, recording.calls)
                read.append((await as_shown(store, record), calls))
        a, b = compared_runs(redactor, *read)
        result = compare_runs(a, b)
        if json_output:
            _print_json(masked_document(diff_document(result, every=every), redactor))
        else:
            _write_lines(diff_lines(result, every=every))
        return exit_codes.OK

    return _command(main, debug=debug)


def prune_runs(
    *, older_than: str | None, keep: int | None, dry_run: bool, json_output: bool, state: str | None = None, debug: bool
) -> int:
    from lens import parse_moment

    if older_than is None and keep is None:
        usage_error("say which runs to delete: --older-than AGE, --keep N, or both", "for example: --older-than 30d")
    try:
        created_before = None if older_than is None else parse_moment(older_than, now=time.time())
    except ValueError as exc:
        usage_error(f"--older-than {exc}")

    async def body(store: RunStore, redactor: Redactor, where: str) -> int:
        from lens import prune_document, prune_summary

        result = await store.prune_runs(created_before=created_before, keep=keep, dry_run=dry_run)
        if json_output:
            _print_json(prune_document(result, dry_run=dry_run))
        else:
            _write_lines(prune_summary(result, dry_run=dry_run))
        return exit_codes.OK

    return _with_store(body, state=state, debug=debug, mode="existing")


async def _found(store: RunStore, run_id: str, where: str) -> RunRecord | None:
    """The record of the run ``run_id`` names in the store (as stored: not masked); when none, say so,
    naming the store and how to look in another (a prefix matching several runs is a ``StoreError`` naming
    them)."""
    from flujo_cli.store_access import elsewhere

    record = await store.get_run(run_id)
    if record is None:
        error_line(f"no run matches {run_id!r} in {where}", elsewhere("list its runs with: flujo lens list"))
    return record


async def _found_in_other(store: RunStore, run_id: str, where: str) -> RunRecord | None:
    """As ``_found``, in the store ``--other-state`` names (the option to change, if it is the wrong one)."""
    import shlex

    record = await store.get_run(run_id)
    if record is None:
        error_line(
            f"no run matches {run_id!r} in {where}",
            f"list its runs with: flujo lens list --state {shlex.quote(where)}; or give another --other-state",
        )
    return record


def _blueprint_kinds(record: RunRecord) -> Mapping[str, str]:
    """The kinds of the run's steps by step path, from its blueprint file when that file is still the one the
    run started with (its hash): what labels a paused or stopped loop's iterations as iterations, before the
    loop records itself (when it ends). Empty for a finished run (its records say), a blueprint changed,
    moved or now invalid. Read when first asked: only a run with a container not recorded yet has the
    blueprint loaded (which imports the modules its callables are in)."""
    if record.status == "completed" or record.source is None or record.source_hash is None:
        return {}
    return _BlueprintKinds(record.source, record.source_hash)


class _BlueprintKinds(Mapping[str, str]):
    """``_blueprint_kinds``'s mapping: the blueprint at ``source`` is loaded on the first look-up."""

    def __init__(self, source: str, source_hash: str) -> None:
        self._source, self._hash = source, source_hash
        self._kinds: dict[str, str] | None = None

    def _loaded(self) -> dict[str, str]:
        if self._kinds is None:
            from blueprints import load_blueprint
            from core import FlujoError

            try:
                blueprint = load_blueprint(self._source)
            except (FlujoError, OSError, ValueError):  # gone, unreadable or invalid now: the records alone say
                self._kinds = {}
            else:
                self._kinds = blueprint.step_kinds() if blueprint.tree_hash == self._hash else {}
        return self._kinds

    def __getitem__(self, path: str) -> str:
        return self._loaded()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def _expanded(tree: RunNode, expansion: Expansion) -> Expansion | None:
    """``expansion`` with its step names resolved to the paths of ``tree``'s steps; None (the error said)
    when a value names no step of the run, with the closest names as a suggestion."""
    import difflib

    from lens import StepNode, walk

    resolved, unknown = expansion.resolved(tree)
    if not unknown:
        return resolved
    names = sorted({n.name for n in walk(tree) if isinstance(n, StepNode)})
    close = difflib.get_close_matches(unknown[0], names, n=3, cutoff=0.6)
    shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
    hint = f"did you mean {' or '.join(close)}?" if close else (f"its steps: {shown}" if names else "it has no steps")
    error_line(f"--expand {unknown[0]}: run {tree.run_id} has no step of that name or path", hint)
    return None


def _ambiguous(tree: RunNode, step: str | None, expand: Sequence[str]) -> bool:
    """Whether a bare step name given to ``--step`` or ``--expand`` names several steps of one blueprint of
    the run (a step inside a loop, map or parallel step of the same name); the error lists their paths."""
    from lens import step_paths_named

    for option, value in (*(("--step", step),), *(("--expand", value) for value in expand)):
        if value is None or "/" in value.strip("/"):
            continue
        paths = step_paths_named(tree, value.strip("/"))
        if paths:
            error_line(
                f"{option} {value}: {len(paths)} steps of run {tree.run_id} are named {value!r}: {', '.join(paths)}",
                f"give one of them as a path, e.g. {option} {paths[-1]}",
            )
            return True
    return False


def _focused(tree: RunNode, step: str | None) -> RunNode | None:
    from lens import StepNode, focus, walk

    if step is None:
        return tree
    found = focus(tree, step)
    if found is None:
        names = sorted({n.name for n in walk(tree) if isinstance(n, StepNode)})
        shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
        error_line(f"run {tree.run_id} has no step {step!r}", f"its steps: {shown}" if names else "it has no steps")
    return found


def _status(status: str | None) -> RunStatus | None:
    from core import RunStatus

    known: tuple[str, ...] = get_args(RunStatus)
    if status is not None and status not in known:
        usage_error(f"unknown status {status!r}", f"one of: {', '.join(known)}")
    return status  # type: ignore[return-value]  # checked against get_args(RunStatus) above


def _with_store(
    body: Callable[[RunStore, Redactor, str], Awaitable[int]],
    *,
    state: str | None,
    debug: bool,
    mode: Literal["read", "existing"] = "read",
) -> int:
    """Open the run store ``--state`` or the settings name (never creating it), build the redactor, run
    ``body`` with them and the store's name (``flujo_cli.store_access.where``)."""

    async def main() -> int:
        from flujo_cli.store_access import open_for, settings_with_state, where

        settings = settings_with_state(state)
        redactor = command_redactor(settings)
        store = await open_for(settings, mode)
        try:
            return await body(store, redactor, where(settings))
        finally:
            await store.close()

    return _command(main, debug=debug)


def _command(main: Callable[[], Coroutine[Any, Any, int]], *, debug: bool) -> int:
    """Run a lens command's ``main`` to its exit code: an error is one line (``fail``), Ctrl-C exit 130."""
    # A large run is hundreds of thousands of objects, none of them garbage: the cyclic collector would
    # scan them again and again while they are read and printed. It is back on when the command returns.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED
    except Exception as exc:  # the CLI's top level: one clear line, never a traceback (unless --debug)
        fail(exc, debug=debug)
    finally:
        if collecting:
            gc.enable()


def _print(renderable: RenderableType) -> None:
    """Print to stdout: in colour on a terminal; plain, without trailing spaces, into a pipe or a file."""
    if sys.stdout.isatty():
        plain_console().print(renderable)
        return
    console = plain_console(file=sys.stdout, color_system=None, width=_width())
    with console.capture() as captured:
        console.print(renderable)
    _write_lines(line.rstrip() for line in captured.get().splitlines())


def _width() -> int:
    """Columns for output into a pipe: the terminal's if stderr is one, else 100."""
    import shutil

    return shutil.get_terminal_size((100, 24)).columns if sys.stderr.isatty() else 100


def _write_lines(lines: Any) -> None:
    sys.stdout.write("".join(f"{line}\n" for line in lines))


def _print_output(output: Any) -> None:
    """The run's output as ``flujo run`` prints it: a text as it is, anything else as indented JSON."""
    text = output if isinstance(output, str) else json.dumps(output, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _print_why(whole: RunNode, tree: RunNode, *, json_output: bool) -> None:
    """``--why``: each agent call of ``tree`` (``whole`` focused on ``--step``) with where each of its messages
    came from (read from all of ``whole``'s calls: a turn's origin is given by the first call that sent it),
    and what was left out."""
    from lens import Provenance, calls_below, why_document, why_lines

    provenance = Provenance(whole.children)
    calls = calls_below(tree.children)
    if json_output:
        _print_json({"run_id": tree.run_id, **why_document(calls, provenance)})
        return
    for call in calls:
        sys.stdout.write("\n".join(why_lines(call, provenance)) + "\n")


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
