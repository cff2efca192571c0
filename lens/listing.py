"""The rows of ``flujo lens list``: recent runs, masked, with their step counts, and child runs placed under
the run that started them.

A run the store says is ``running`` is being executed only if a live process holds its claim
(``RunStore.claimed_runs``); otherwise the process that ran it is gone (killed, crashed) and the run is
shown as what it is, ``interrupted`` (``flujo resume`` takes it at once), with the process named.

The list shows no run's input or output, so the store is asked for none (``values=False``): a run's may be
tens of MB, and 20 such runs took 257 MB to list. ``--search`` must read them: in pages whose size follows
the texts it has read (``_next_size``: as many runs as ``_PAGE_CHARS`` characters of texts, at least one),
so runs of 40 MB are read one at a time and runs of a few KB 200 at a time (a query each); it masks each
run's with a ``Masker`` of its own and casefolds them a window at a time.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core import Redactor, RunRecord, RunStatus, RunStore
from lens.masking import Masker


@dataclass(frozen=True)
class RunRow:
    """A run as ``lens list`` shows it. ``depth`` is 1 for a child run shown under its parent; a child
    run whose parent is not in the list stays at depth 0 (its ``parent_run_id`` says whose it is)."""

    record: RunRecord
    steps: int
    depth: int = 0
    abandoned: bool = False  # stored as running, but no live process holds its claim: its process is gone

    @property
    def status(self) -> RunStatus:
        """The run's status as shown: ``interrupted`` for an abandoned run, else the stored one."""
        return "interrupted" if self.abandoned else self.record.status

    @property
    def note(self) -> str | None:
        """``process 4242 is gone`` for an abandoned run (from its owner, ``pid 4242 on build-01``)."""
        if not self.abandoned:
            return None
        pid = re.match(r"pid (\d+)\b", self.record.owner or "")
        return f"process {pid.group(1)} is gone" if pid else "its process is gone"


async def recent_runs(
    store: RunStore,
    *,
    redactor: Redactor,
    limit: int = 20,
    status: RunStatus | None = None,
    thread: str | None = None,
    since: float | None = None,
    search: str | None = None,
    offset: int = 0,
) -> list[RunRow]:
    """Up to ``limit`` runs, newest first (as the store lists them), masked, with their step counts, past the
    ``offset`` newest of those that match: ``status`` (a ``running`` run no live process executes is
    abandoned, and counts as ``interrupted``), ``thread``, created at ``since`` or later, and whose input or
    output, as masked, holds ``search`` (any case). The search reads the masked texts only, so a secret's
    value never matches; the store is read in pages until enough runs match. The rows' records have no
    ``input`` or ``output`` (None): the list shows neither."""
    if limit <= 0:
        return []
    masker = Masker(redactor)
    needle = search.casefold() if search else None
    direct = needle is None and status not in ("running", "interrupted")
    rows: list[RunRow] = []
    skip = 0 if direct else offset  # a direct read skips them in the store
    first, size = (offset, limit) if direct else (0, 1 if needle else max(limit, _PAGE))
    pages = _pages(store, status=status, thread=thread, since=since, first=first, size=size, values=bool(needle))
    async for records, gone in pages:
        for record in records if needle is None else _found(records, redactor, needle):
            masked = masker.run(record)
            if skip:
                skip -= 1
                continue
            rows.append(RunRow(masked, 0, abandoned=record.run_id in gone))
            if len(rows) == limit:
                break
        if len(rows) == limit or direct:
            break
    counts = await store.step_counts([row.record.run_id for row in rows])
    return [dataclasses.replace(row, steps=counts.get(row.record.run_id, 0)) for row in rows]


_PAGE = 200  # runs read at a time while looking for runs that match
_PAGE_CHARS = 4_000_000  # characters of input and output a search reads at a time, about (``_next_size``)


async def _pages(
    store: RunStore,
    *,
    status: RunStatus | None,
    thread: str | None,
    since: float | None,
    first: int,
    size: int,
    values: bool,
) -> AsyncIterator[tuple[list[RunRecord], set[str]]]:
    """The runs with ``status`` (as ``recent_runs`` counts it), in ``thread``, created at ``since`` or later,
    newest first from the ``first``, ``size`` at a time (with their input and output, ``values``: then as many
    as the last page's texts say, ``_next_size``), each page with the ids of its abandoned runs."""
    if status == "interrupted":  # stored so, or running with no live process: both lists, merged by age
        running = await _all(store, "running", thread, since, values)
        gone = await abandoned(store, running)
        stored = await _all(store, "interrupted", thread, since, values)
        merged = [*stored, *(r for r in running if r.run_id in gone)]
        yield sorted(merged, key=lambda r: r.created_at, reverse=True), gone
        return
    offset = first
    while True:
        page = await store.list_runs(
            limit=size, offset=offset, status=status, thread=thread, created_after=since, values=values
        )
        gone = await abandoned(store, page)
        read, following = len(page), _next_size(size, page) if values else size  # before they are let go of
        yield ([r for r in page if r.run_id not in gone] if status == "running" else page), gone
        del page  # a page of values is let go before the next is read
        if read < size:
            return
        offset, size = offset + read, following


def _next_size(size: int, page: Sequence[RunRecord]) -> int:
    """How many runs a search reads next: as many as hold ``_PAGE_CHARS`` characters of texts if they are
    like the ``size`` of ``page``, at least one (a run of 40 MB at a time) and at most ``_PAGE``."""
    chars = sum(_chars(run.input) + _chars(run.output) for run in page)
    return max(1, min(_PAGE, size * _PAGE_CHARS // max(chars, 1)))


def _chars(value: Any) -> int:
    """The characters of the texts in a JSON-like ``value``, keys included."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return sum(_chars(key) + _chars(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return sum(map(_chars, value))
    return 0


async def _all(
    store: RunStore, status: RunStatus, thread: str | None, since: float | None, values: bool
) -> list[RunRecord]:
    """Every run with ``status`` (as stored), a page at a time: the running and interrupted runs are few."""
    found: list[RunRecord] = []
    while True:
        page = await store.list_runs(
            limit=_PAGE, offset=len(found), status=status, thread=thread, created_after=since, values=values
        )
        found += page
        if len(page) < _PAGE:
            return found


def _found(records: list[RunRecord], redactor: Redactor, needle: str) -> Iterator[RunRecord]:
    """The ``records`` whose input or output holds ``needle`` (``_holds``), in order, without them (the list
    shows neither). Each record is taken out of ``records`` as it is looked at, so that no run's texts are
    held once looked at: the next page is not read while this one's are (a search reads 40 MB runs alone)."""
    records.reverse()
    while records:
        record = records.pop()
        if _holds(redactor, needle, record.input, record.output):
            yield dataclasses.replace(record, input=None, output=None)


def _holds(redactor: Redactor, needle: str, input: Any, output: Any) -> bool:
    """Whether a run's ``input`` or ``output``, as masked, holds ``needle`` (casefolded): what ``--search``
    looks in is their texts (anything else as JSON) joined by a line break. Masked by a ``Masker`` of its
    own, which lets go of them when it returns."""
    masker = Masker(redactor)
    texts = [
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        for value in (masker.value(input), masker.value(output))
        if value is not None
    ]
    reach = len(needle)  # a match of the casefolded needle spans at most this many characters of the text
    if len(texts) == 2 and "\n" in needle and needle in f"{texts[0][-reach:]}\n{texts[1][:reach]}".casefold():
        return True
    return any(_holds_text(text, needle) for text in texts)


_WINDOW = 1 << 20  # characters of a text casefolded at a time by a search


def _holds_text(text: str, needle: str) -> bool:
    """Whether ``text`` casefolded holds ``needle``, casefolding a window at a time: ``casefold`` maps each
    character on its own to one or more, so a match spans at most ``len(needle)`` characters of ``text``,
    and windows that overlap by that many less one find every match."""
    if len(text) <= _WINDOW:
        return needle in text.casefold()
    overlap = len(needle) - 1
    return any(needle in text[at : at + _WINDOW + overlap].casefold() for at in range(0, len(text), _WINDOW))


async def as_shown(store: RunStore, record: RunRecord) -> RunRecord:
    """``record`` as ``lens show`` and ``lens trace`` show it: ``interrupted`` when it is a ``running`` run
    whose process is gone (as ``lens list`` shows it)."""
    if await abandoned(store, [record]):
        return dataclasses.replace(record, status="interrupted")
    return record


async def abandoned(store: RunStore, records: Sequence[RunRecord]) -> set[str]:
    """The ids of the ``running`` runs of ``records`` that no live process executes. A run never claimed (no
    owner: the moment between its creation and its claim) is not judged, but for a sub-workflow's child run,
    which is never claimed: the process of the run that started it executes it, so it is abandoned when its
    top run is not ``running`` or is abandoned itself."""
    running = [r for r in records if r.status == "running"]
    judged = {r.run_id: r.run_id for r in running if r.owner is not None}  # a run -> the run whose claim tells
    known = {r.run_id: r for r in records}
    gone: set[str] = set()
    for record in running:
        if record.owner is None and record.parent_run_id is not None:
            top = await _top_run(store, record, known)
            if top is not None and top.status != "running":
                gone.add(record.run_id)
            elif top is not None and top.owner is not None:
                judged[record.run_id] = top.run_id
    if judged:
        claimed = await store.claimed_runs(sorted(set(judged.values())))
        gone |= {run for run, claim in judged.items() if claim not in claimed}
    return gone


async def _top_run(store: RunStore, record: RunRecord, known: Mapping[str, RunRecord]) -> RunRecord | None:
    """The run at the top of the child run ``record``'s parents (None when one is not in the store)."""
    for _ in range(16):  # parent links that loop (a damaged store) must not go on forever
        if record.parent_run_id is None:
            return record
        parent = known.get(record.parent_run_id) or await store.get_run(record.parent_run_id)
        if parent is None:
            return None
        record = parent
    return None


def nested(rows: Sequence[RunRow]) -> list[RunRow]:
    """``rows`` in display order: each run followed by its child runs that are in ``rows`` (oldest first,
    at depth 1, then their own children deeper), the others in their order."""
    listed = {row.record.run_id for row in rows}
    children: dict[str, list[RunRow]] = {}
    for row in rows:
        parent = row.record.parent_run_id
        if parent is not None and parent in listed:
            children.setdefault(parent, []).append(row)
    ordered: list[RunRow] = []

    def place(row: RunRow, depth: int) -> None:
        ordered.append(dataclasses.replace(row, depth=depth))
        for child in sorted(children.get(row.record.run_id, []), key=lambda r: r.record.created_at):
            if depth < 16:  # parent links that loop (a damaged store) must not recurse forever
                place(child, depth + 1)

    for row in rows:
        parent = row.record.parent_run_id
        if parent is None or parent not in listed:
            place(row, 0)
    return ordered
