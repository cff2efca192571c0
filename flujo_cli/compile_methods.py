"""``python -m flujo_cli.compile_methods``: compile the methods of every dataclass flujo makes, and keep them
(flujo_cli/method_cache.py), ahead of the first ``flujo`` command, as ``python -m compileall`` does for
modules: where Python writes no bytecode (``PYTHONDONTWRITEBYTECODE``, as on CI machines) the command never
writes them itself. ``make`` runs it."""

from __future__ import annotations

from flujo_cli.method_cache import cache_path, prime

if __name__ == "__main__":
    kept = prime()
    print(f"{kept} dataclass methods kept in {cache_path()}" if kept else "no bytecode folder here: nothing kept")
