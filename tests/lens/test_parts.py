"""``flujo lens trace RUN --json`` written a part at a time (lens/parts.py, lens/json_trace.py): byte for byte the
document built whole (``trace_document`` of ``build_tree``, masked) for the runs of the golden tests and for
runs of every shape made at random (loops of loops, maps, parallel branches whose steps interleave in time,
steps without records, events at odd paths, child runs, paused runs), cut as finely as it can be (one row per
part) and not at all; on SQLite, PostgreSQL and in memory. Its first bytes are written before any event of the
run is read; each distinct text is masked once."""

from __future__ import annotations

import asyncio
import io
import json
import random
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import pytest

from core import Redactor, RunRecord, RunStore, RunUpdate, StepRecord, TraceEvent, Usage
from core.store import MemoryStore, open_store
from lens import build_tree, load_run, masked_document, trace_document
from lens.json_trace import write_trace
from lens.parts import RunParts
from tests.support.lens_runs import (
    CHILD,
    DEMO,
    PAUSED,
    PAUSED_CHILD,
    PAUSED_PARENT,
    THREADED,
    record_demo,
    record_others,
)

GOLDEN_RUNS = [DEMO, CHILD, PAUSED, PAUSED_PARENT, PAUSED_CHILD, THREADED]


async def whole(store: RunStore, run_id: str, redactor: Redactor) -> str:
    """The document as ``flujo lens trace RUN --json`` wrote it before it was written a part at a time."""
    record = await store.get_run(run_id)
    tree = build_tree(await load_run(store, run_id, redactor=redactor, record=record))
    return json.dumps(masked_document(trace_document(tree), redactor), ensure_ascii=False) + "\n"


async def streamed(store: RunStore, run_id: str, redactor: Redactor, *, rows: int | None = None) -> str:
    """The document written a part at a time, of ``rows`` rows (the default when None)."""
    record = await store.get_run(run_id)
    assert record is not None
    out = io.StringIO()
    more = {} if rows is None else {"rows": rows}
    await write_trace(store, record, redactor=redactor, write=out.write, flush=out.flush, **more)
    return out.getvalue()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    opened: RunStore
    if request.param == "sqlite":
        opened = await open_store(str(tmp_path / "flujo.db"))
    elif request.param == "postgres":  # a real server (tests/support/postgres_server.py), a new schema per test
        opened = await open_store(request.getfixturevalue("postgres_uri"))
    else:
        opened = MemoryStore()
    try:
        yield opened
    finally:
        await opened.close()


async def test_the_golden_runs_are_written_as_they_were(store: RunStore) -> None:
    await record_demo(store, secret="sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")
    await record_others(store)
    redactor = Redactor()
    for run_id in GOLDEN_RUNS:
        expected = await whole(store, run_id, redactor)
        for rows in (0, 1, 2, None):
            assert await streamed(store, run_id, redactor, rows=rows) == expected, (run_id, rows)


# Runs made at random -------------------------------------------------------------------------------------------

KINDS = {"loop": "1 2 3 4 5 6", "map": "0 1 2 3 4", "parallel": "style facts tone", "conditional": "yes no"}
ROOT = "5eed000000000000"


class RandomRun:
    """A run of random shape written to a store as the engine writes one (a step's record and its events
    together, a container's record after its steps), with times that interleave like parallel branches',
    and the odd rows a store may hold."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = 1000.0
        self.writes: list[tuple[str, StepRecord | None, list[TraceEvent]]] = []
        self.children: list[tuple[str, str]] = []  # (child run id, path of the step that started it)

    def tick(self) -> float:
        self.clock += self.rng.choice((0.001, 0.002, 0.01))
        return self.clock if self.rng.random() > 0.1 else self.clock - self.rng.random()  # now and then, earlier

    def steps(self, prefix: str, depth: int) -> None:
        for n in range(self.rng.randint(1, 3)):
            name = self.rng.choice(("ask", "answer", "check", "plan", "sk-proj-abcdefghijklmnopqrstuvwxyz012345"))
            path = f"{prefix}/{name}" if prefix else name
            if any(write[1] is not None and write[1].path == path for write in self.writes):
                path = f"{path}{n}"
            roll = self.rng.random()
            if depth < 3 and roll < 0.45:
                self.container(path, depth)
            elif roll < 0.55:
                self.workflow(path)
            else:
                self.leaf(path)

    def container(self, path: str, depth: int) -> None:
        kind = self.rng.choice(sorted(KINDS))
        started = self.tick()
        keys = KINDS[kind].split()[: self.rng.randint(1, 6)]
        for key in keys:
            self.steps(f"{path}/{key}", depth + 1)
            if self.rng.random() < 0.05:  # an event at an iteration's own path
                self.writes.append(("events", None, [TraceEvent("loop.note", f"{path}/{key}", {"n": 1}, self.tick())]))
            if self.rng.random() < 0.05:  # a step recorded at an iteration's own path (a summary, say)
                record = StepRecord(ROOT, f"{path}/{key}", key, "summarize", "completed", started_at=self.tick())
                self.writes.append(
                    ("step", record, [TraceEvent("history.summarized", f"{path}/{key}", {}, self.tick())])
                )
        if self.rng.random() < 0.1:
            self.rng.shuffle(self.writes)  # written out of order: the store's order is not the tree's
        if self.rng.random() < 0.9:  # else: its record never written (interrupted)
            record = StepRecord(ROOT, path, path.rpartition("/")[2], kind, "completed", input="in", output=len(keys),
                                started_at=started, duration_s=0.5)  # fmt: skip
            self.writes.append(("step", record, [TraceEvent("loop.exit", path, {"reason": "done"}, self.tick())]))

    def leaf(self, path: str) -> None:
        started = self.tick()
        turn = f"Turn {self.rng.randint(1, 5)}: somewhere warm in June, near the sea, with good trains and food."
        events = [
            TraceEvent("agent.call", path, {"attempt_started_at": started}, self.tick()),
            TraceEvent("agent.prompt", path, {"agent": "scripted", "messages": [{"role": "user", "content": turn}]},
                       self.tick()),
            TraceEvent("agent.reply", path, {"output": "ok", "token": "sk-secret-value-1234567890"}, self.tick()),
        ]  # fmt: skip
        if self.rng.random() < 0.15:  # its tool loop's turns and calls, below it
            for kind, n in (("model", 1), ("tool", 1), ("model", 2)):
                call = StepRecord(ROOT, f"{path}/{kind}/{n}", f"{kind} {n}", kind, "completed", started_at=self.tick())
                self.writes.append(("step", call, [TraceEvent("tool.call", call.path, {"tool": "t"}, self.tick())]))
        if self.rng.random() < 0.8:
            record = StepRecord(ROOT, path, path.rpartition("/")[2], "step", "completed", input=turn, output="ok",
                                started_at=started, duration_s=0.01, usage=Usage(requests=1))  # fmt: skip
            self.writes.append(("step", record, events))
        else:
            self.writes.append(("events", None, events[: self.rng.randint(1, 3)]))

    def workflow(self, path: str) -> None:
        child = f"c{len(self.children):015d}"
        self.children.append((child, path))
        started = self.tick()
        record = StepRecord(ROOT, path, path.rpartition("/")[2], "workflow", "completed", started_at=started)
        payload = {"child_run_id": child, "pipeline": "sub"}
        self.writes.append(("step", record, [TraceEvent("workflow.child", path, payload, started)]))

    async def write(self, store: RunStore) -> None:
        await store.create_run(RunRecord(ROOT, "random", "running", input="go", created_at=999.0))
        self.steps("", 0)
        if self.rng.random() < 0.3:
            self.writes.append(("events", None, [TraceEvent("run.note", "", {"said": "hello"}, self.tick())]))
        for _, record, events in self.writes:
            if record is None:
                await store.record_events(ROOT, events)
            else:
                await store.record_step(record, events)
        for child, _ in self.children:
            await store.create_run(RunRecord(child, "sub", "running", parent_run_id=ROOT, created_at=self.tick()))
            step = StepRecord(child, "inner", "inner", "step", "completed", started_at=self.tick())
            await store.record_step(step, [TraceEvent("agent.reply", "inner", {"output": "x"}, self.tick())])
            await store.update_run(child, RunUpdate(status="completed", output="x", finished_at=self.tick()))
        paths = [record.path for _, record, _ in self.writes if record is not None]
        if paths and self.rng.random() < 0.3:
            where = self.rng.choice([*paths, "later/step"])
            await store.update_run(ROOT, RunUpdate(status="paused", pause_path=where, pause_message="ok?"))
        else:
            await store.update_run(ROOT, RunUpdate(status="completed", output="done", finished_at=self.tick()))


@pytest.mark.parametrize("seed", range(80))
def test_runs_of_any_shape_are_written_as_built_whole(seed: int) -> None:
    async def check() -> None:
        store = MemoryStore()
        await RandomRun(seed).write(store)
        redactor = Redactor()
        expected = await whole(store, ROOT, redactor)
        for rows in (0, 1, 3, None):
            assert await streamed(store, ROOT, redactor, rows=rows) == expected, rows

    asyncio.run(check())


async def test_a_random_run_in_a_database_is_written_as_built_whole(store: RunStore) -> None:
    for seed in (3, 7, 11):
        random_run = RandomRun(seed)
        if seed != 3:
            continue
        await random_run.write(store)
        redactor = Redactor()
        expected = await whole(store, ROOT, redactor)
        for rows in (0, 2, None):
            assert await streamed(store, ROOT, redactor, rows=rows) == expected, rows


# Order and masking ---------------------------------------------------------------------------------------------


class Watched:
    """A store whose reads of events, and the writes of the document, are noted in one log, in order."""

    def __init__(self, store: RunStore, log: list[str]) -> None:
        self.store = store
        self.log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def events(self, run_id: str, *, kind: str | None = None) -> list[TraceEvent]:
        found = await self.store.events(run_id, kind=kind)
        self.log.extend("read event" for _ in found)
        return found

    async def event_page(self, run_id: str, **bounds: Any) -> list[tuple[int, TraceEvent]]:
        found = await self.store.event_page(run_id, **bounds)
        self.log.extend("read event" for _ in found)
        return found

    async def marks(self, run_id: str, of: Literal["steps", "events"], **bounds: Any) -> list[Any]:
        found = await self.store.marks(run_id, of, **bounds)
        self.log.extend("read where an event is" for _ in found if of == "events")
        return found


async def _conversation(store: RunStore, iterations: int) -> None:
    """A loop of ``iterations`` agent calls, each sent the latest turns again (as benchmarks/test_lens.py)."""
    await store.create_run(RunRecord(ROOT, "chat", "running", created_at=1000.0))
    turns: list[dict[str, str]] = []
    for i in range(1, iterations + 1):
        turns.append({"role": "user", "content": f"Turn {i}: somewhere warm in June, near the sea, with trains."})
        prompt = {"agent": "scripted", "messages": [{"role": "system", "content": "Plan a trip."}, *turns[-10:]]}
        events = [TraceEvent("agent.prompt", f"chat/{i}/ask", prompt, 1000.0 + i),
                  TraceEvent("agent.reply", f"chat/{i}/ask", {"output": f"Question {i}?"}, 1000.5 + i)]  # fmt: skip
        await store.record_step(StepRecord(ROOT, f"chat/{i}/ask", "ask", "step", "completed", started_at=1000.0 + i,
                                           output=f"Question {i}?"), events)  # fmt: skip
        turns.append({"role": "assistant", "content": f"Question {i}?"})
    loop = StepRecord(ROOT, "chat", "chat", "loop", "completed", started_at=1000.0)
    await store.record_step(loop, [TraceEvent("loop.exit", "chat", {"reason": "max_loops"}, 2000.0 + iterations)])
    await store.update_run(ROOT, RunUpdate(status="completed", output="done", finished_at=3000.0 + iterations))


async def test_its_first_bytes_are_written_before_any_event_is_read(tmp_path: Path) -> None:
    """The order, not a time: the run's fields are out before its events are read, and the document is
    written while its events are read, not after the last one."""
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        await _conversation(store, 1_500)
        log: list[str] = []
        record = await store.get_run(ROOT)
        assert record is not None
        watched: Any = Watched(store, log)
        out = io.StringIO()

        def write(text: str) -> None:
            out.write(text)
            log.append("wrote")

        await write_trace(watched, record, redactor=Redactor(), write=write, flush=lambda: None)
        assert log[0] == "wrote" and out.getvalue().startswith('{"run": {"run_id": "5eed000000000000"')
        reads = [n for n, entry in enumerate(log) if entry == "read event"]
        writes = [n for n, entry in enumerate(log) if entry == "wrote"]
        assert len(reads) == 3_001  # each event read once, with its values
        assert sum(1 for n in writes if n < reads[-1]) > 3  # parts written before the last event is read
        assert out.getvalue() == await whole(store, ROOT, Redactor())


class CountingRedactor(Redactor):
    def __init__(self) -> None:
        super().__init__()
        self.masked: Counter[str] = Counter()

    def text(self, text: str) -> str:
        self.masked[text] += 1
        return super().text(text)


async def test_each_distinct_text_is_masked_once(tmp_path: Path) -> None:
    """A turn comes back in the ten prompts after it: the redactor's expressions run on it once (not once per
    record and again per document, nor once per prompt)."""
    async with await open_store(str(tmp_path / "flujo.db")) as store:
        await _conversation(store, 400)
        record = await store.get_run(ROOT)
        assert record is not None
        redactor = CountingRedactor()
        out = io.StringIO()
        await write_trace(store, record, redactor=redactor, write=out.write, flush=out.flush)
        assert any(text.startswith("Turn 17: somewhere warm") for text in redactor.masked)
        assert redactor.masked.most_common(1)[0][1] == 1
        assert out.getvalue() == await whole(store, ROOT, Redactor())


def test_a_part_holds_at_most_so_many_rows() -> None:
    """The parts of the run above (one step and two events per iteration) are read ``rows`` rows at a time."""

    async def check() -> list[int]:
        store = MemoryStore()
        await _conversation(store, 100)
        record = await store.get_run(ROOT)
        assert record is not None
        from lens.masking import Masker
        from lens.parts import Opened, Whole

        parts = RunParts(store, record, Masker(Redactor()), rows=30)
        assert [event async for event in parts.events()] == []
        sizes = []
        async for piece in parts.spans():
            if isinstance(piece, Opened):
                sizes.append(-1)
            elif isinstance(piece, Whole):
                sizes.append(len(piece.nodes))
        return sizes

    sizes = asyncio.run(check())
    assert sizes == [-1, *[10] * 10]  # the loop opened, then its 100 iterations, ten (30 rows) at a time
