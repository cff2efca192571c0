"""What taking a run again costs a worker, in statements (issue 36 item 1): the bookkeeping of a re-taken run.

``python benchmarks/retake_statements.py [--postgres]``, with ``PYTHONPATH=TREE`` to measure another source
tree (a checkout of main, say): a run of four steps (a question answered up front, a command step, a command
step that waits for a file, a second question) is submitted with ``flujo submit``; a ``flujo worker`` takes it
and is SIGKILLed while the third step runs (its first two committed). Then a worker in this process (the
``flujo worker`` code of the tree under test, its ``_execute``) takes the run again and finishes it, and the
statements it sends are counted:

* SQLite: on both of the store's connections (sqlite3's trace callback): the statements read outside any
  transaction (on the reader connection), the write transactions (``BEGIN IMMEDIATE``) and all statements.
* PostgreSQL (``--postgres``: the tests' throwaway server, tests/support/postgres_server.py): through this
  script's tree's ``tests/support/round_trips.py`` proxy, the round trips from the take on (the store's
  opening excluded), the statements, the ``BEGIN``s and the ``SELECT``s sent after the take's ``COMMIT``.

Counts do not depend on the machine's load: one run of the script is the figure. docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
sys.path.append(str(HERE))  # after PYTHONPATH: the tree under test first

BLUEPRINT = """\
version: "0.1"
agents:
  first: {command: [sh, -c, 'cat > /dev/null; echo ok']}
  gated:
    command:
      - sh
      - -c
      - 'cat > /dev/null; touch "%(dir)s/started"; while [ ! -e "%(dir)s/go" ]; do sleep 0.05; done; echo done'
steps:
  - {kind: hitl, name: month, message: "Which month?"}
  - {kind: step, name: first, uses: agents.first}
  - {kind: step, name: gated, uses: agents.gated}
  - {kind: hitl, name: day, message: "Which day?"}
"""


def _flujo(workdir: Path, uri: str, *args: str) -> subprocess.Popen[str]:
    tree = os.environ.get("PYTHONPATH", str(HERE))
    env = {**os.environ, "PYTHONPATH": tree, "FLUJO_STATE_URI": uri}
    return subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", *args],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _killed_mid_run(workdir: Path, uri: str) -> str:
    """The id of a submitted run whose worker was SIGKILLed while its third step ran."""
    (workdir / "bp.yaml").write_text(BLUEPRINT % {"dir": workdir}, encoding="utf-8")
    (workdir / "answers.json").write_text('["July", "Monday"]', encoding="utf-8")
    submit = _flujo(workdir, uri, "submit", "bp.yaml", "--input", "hello", "--answers", "answers.json")
    out, err = submit.communicate()
    assert submit.returncode == 0, err
    worker = _flujo(workdir, uri, "worker")
    while not (workdir / "started").exists():  # the event: the third step runs
        assert worker.poll() is None, worker.communicate()[1]
        time.sleep(0.05)
    worker.send_signal(signal.SIGKILL)
    worker.communicate()
    (workdir / "go").touch()
    return out.split()[0]


async def _retake(store: Any, run_id: str) -> None:
    from rich.console import Console

    from flujo_cli.commands.worker import _Worker

    log = io.StringIO()
    worker = _Worker(
        store=store, state=None, console=Console(file=log), concurrency=1, grace_s=0.0, reconnect_for_s=0.0
    )
    try:
        taken = await store.take_queued()
        assert taken is not None and taken.record.run_id == run_id
        await worker._execute(taken)
        worker._flush()
        assert f"completed {run_id}" in log.getvalue(), log.getvalue()
    finally:
        await store.close()


def _on_sqlite(workdir: Path) -> None:
    from core.store import SqliteStore

    uri = str(workdir / "flujo.db")
    run_id = _killed_mid_run(workdir, uri)
    writes: list[str] = []
    reads: list[str] = []

    async def retake() -> None:
        store = await SqliteStore(uri).open()
        store._writer._conn.set_trace_callback(writes.append)
        await store._db._execute(store._db._conn.set_trace_callback, reads.append)
        await _retake(store, run_id)

    with contextlib.chdir(workdir):
        asyncio.run(retake())
    transactions = writes.count("BEGIN IMMEDIATE")
    print(f"sqlite: {len(reads)} statement(s) read outside a transaction, {transactions} write transaction(s),")
    print(f"        {len(reads) + len(writes)} statement(s) in all (BEGIN and COMMIT included)")


def _on_postgresql(workdir: Path) -> None:
    sys.path.insert(0, str(HERE))  # the tests' server, from this script's tree
    from tests.support import postgres_server

    server = postgres_server.start()
    try:
        uri = postgres_server.empty_store_uri(server.uri)
        run_id = _killed_mid_run(workdir, uri)
        sys.path.remove(str(HERE))
        proxy_module = _proxy_module()
        with proxy_module.RoundTripProxy(uri) as proxy:

            async def retake() -> tuple[int, int]:
                from core.store import open_store

                store = await open_store(proxy.proxied)
                opened = (proxy.count, len(proxy.statements))
                await _retake(store, run_id)
                return opened

            with contextlib.chdir(workdir):
                trips, first = asyncio.run(retake())
            sent = proxy.statements[first:]
            after = sent[sent.index("COMMIT") + 1 :]
            selects = [s for s in after if s.startswith("SELECT") and "advisory" not in s]
            print(f"postgresql: {proxy.count - trips} round trip(s) from the take on, {len(sent)} statement(s),")
            begins = sent.count("BEGIN")
            print(f"            {begins} BEGIN, {len(selects)} SELECT(s) after the take (claims' locks aside)")
    finally:
        server.stop()


def _proxy_module() -> Any:
    """tests/support/round_trips.py of this script's tree (the tree under test may be older than it)."""
    path = HERE / "tests" / "support" / "round_trips.py"
    spec = importlib.util.spec_from_file_location("flujo_round_trips", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", action="store_true", help="on the tests' PostgreSQL server instead of SQLite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.postgres:
            _on_postgresql(Path(folder))
        else:
            _on_sqlite(Path(folder))


if __name__ == "__main__":
    main()
