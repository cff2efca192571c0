"""Where a conversation's run store spends its bytes: sizes against the raw text, and per table and column.

``python benchmarks/store_sizes.py [--turns 1000 2000] [--chars 800 180] [--history unbounded bounded]
[--where]``: for each case, the conversation of ``tests/support/storage_growth.py`` (turns of English prose
drawn from ``benchmarks/prose.txt``) on a new SQLite store in a temporary directory; the database files'
size after a WAL checkpoint next to the raw UTF-8 bytes of the turns, the ratio, the fixed cost per turn
(``Growth.fixed_cost``: the store less an empty store less each turn's text compressed alone, per turn) and
the bytes per turn of everything but the texts' bodies as stored ("structure"). With ``--where``, the bytes
of each table and index (SQLite's ``dbstat``: pages, payload, unused space) and the payload of each column
(``sum(length(col))``) of the last case. To compare two source trees, run the same file with ``PYTHONPATH``
pointing at each (flujo is imported from ``sys.path``). docs/performance.md ("Store sizes on real text").
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: the tree under test first

from core.model.codec import kind_name
from core.store import open_store
from tests.support.storage_growth import Growth, History, measure

_COLUMNS = {
    "runs": ("input", "output", "usage", "options"),
    "steps": ("run_id", "path", "name", "kind", "status", "input", "output", "usage"),
    "events": ("run_id", "path", "kind", "payload"),
    "texts": ("run_id", "hash", "body"),
    "thread_turns": ("run_id", "role", "content"),
}


def _empty(folder: Path) -> int:
    async def create() -> None:
        await (await open_store(str(folder / "flujo.db"))).close()

    folder.mkdir(parents=True)
    asyncio.run(create())
    return sum(p.stat().st_size for p in folder.glob("flujo.db*"))


def _structure(db_path: Path, growth: Growth, empty: int) -> float:
    """Bytes per turn beyond the texts' bodies as the store holds them: (store - empty store - the bodies of
    the ``texts`` rows that hold a text, not a list) / turns."""
    db = sqlite3.connect(db_path)
    try:
        [(bodies,)] = db.execute("SELECT coalesce(sum(length(body)), 0) FROM texts WHERE hash != x''").fetchall()
    finally:
        db.close()
    return (growth.db_bytes - empty - bodies) / growth.turns


def _where(db_path: Path) -> None:
    db = sqlite3.connect(db_path)
    try:
        rows = db.execute(
            "SELECT name, count(*), sum(pgsize), sum(payload), sum(unused) FROM dbstat GROUP BY name"
            " ORDER BY sum(pgsize) DESC"
        ).fetchall()
        print(f"  {'table or index':32} {'pages':>6} {'bytes':>10} {'payload':>10} {'unused':>9}")
        for name, pages, size, payload, unused in rows:
            print(f"  {name:32} {pages:6} {size:10} {payload:10} {unused:9}")
        tables = {str(row[0]) for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table, columns in _COLUMNS.items():
            if table not in tables:
                continue
            known = {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}
            count = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            parts = ", ".join(
                f"{column} {db.execute(f'SELECT coalesce(sum(length({column})), 0) FROM {table}').fetchone()[0]}"
                for column in columns
                if column in known
            )
            print(f"  {table}: {count} rows; column bytes: {parts}")
        for kind, count, size in db.execute(
            "SELECT kind, count(*), sum(length(payload)) FROM events GROUP BY kind ORDER BY 3 DESC"
        ):
            print(f"    events {kind_name(kind)}: {count} rows, {size} bytes of payload")
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--chars", type=int, nargs="+", default=[800, 180])
    parser.add_argument("--history", nargs="+", default=["unbounded", "bounded"], choices=["unbounded", "bounded"])
    parser.add_argument("--where", action="store_true", help="bytes per table, index and column of the last case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        empty = _empty(folder / "empty")
        print(f"empty store: {empty} bytes")
        print(
            f"{'chars':>5} {'history':>9} {'turns':>5} {'raw':>9} {'store':>9} {'ratio':>6} {'fixed/turn':>10}"
            f" {'structure':>9}"
        )
        last = folder
        for chars in args.chars:
            for history in args.history:
                h: History = history
                for turns in args.turns:
                    last = folder / f"{chars}-{history}-{turns}" / "flujo.db"
                    growth = measure(turns, last, history=h, turn_chars=chars)
                    print(
                        f"{chars:5} {history:>9} {turns:5} {growth.raw_bytes:9} {growth.db_bytes:9}"
                        f" {growth.ratio:6.3f} {growth.fixed_cost(empty):10.1f} {_structure(last, growth, empty):9.1f}"
                    )
        if args.where:
            print(f"where the bytes of the last case go ({last.parent.name}):")
            _where(last)


if __name__ == "__main__":
    main()
