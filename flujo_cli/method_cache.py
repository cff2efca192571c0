"""Dataclasses' generated methods, compiled once and kept, as Python keeps modules' bytecode.

Creating a dataclass compiles the source of each method it writes (``__init__``, ``__repr__``, ``__eq__``,
a frozen class's ``__setattr__``...). The ``flujo`` command creates some 230 dataclasses as it loads (its
own and pydantic's), about a thousand compilations: a quarter of a one-step run's time on Python 3.11.
The source of a method depends only on its class's fields and options, so its compiled code can be reused
by the next process: the same exec, of a code object instead of its text.

The cache is one file in ``flujo_cli``'s ``__pycache__`` (wherever Python keeps the package's bytecode,
``PYTHONPYCACHEPREFIX`` included), named for the interpreter, so it is trusted exactly as the ``.pyc`` files
beside it are. Like them, it is written by the first process that needs it, only into a ``__pycache__`` that
exists and is writable, and not where Python writes no bytecode (``-B``, ``PYTHONDONTWRITEBYTECODE``): there
``python -m flujo_cli.compile_methods`` writes it ahead, as ``compileall`` does modules (``make`` runs both).
It is read back only by the same Python and format, whole (a checksum), else compiled around and replaced.
Installed only when the process is the ``flujo`` command: a program importing flujo keeps the standard
library untouched.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import hashlib
import importlib.util
import marshal
import os
import re
import sys
import types
import zlib
from pathlib import Path
from types import CodeType
from typing import Any

# Methods kept at most (about 1 KB each; every command of flujo makes fewer than 1,500). Past it, a save keeps
# only what its process used, which drops the methods of classes since changed.
LIMIT = 3_000
MAX_BYTES = 16 * 1024 * 1024  # a file this size is not one this module wrote
# After the interpreter's bytecode magic: this file's format (a new one ignores, then replaces, older files).
FORMAT = b"flujo dataclass methods 4\n"


def source_key(source: str) -> bytes:
    """What a method is kept under: a digest of its source text (holding the texts took 1 MB)."""
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class MethodCache:
    """Source text (its ``source_key``) → compiled code, read from ``path`` and written back when something new
    was compiled."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Each method's code stays marshalled until a class asks for it: a command makes only some of them.
        self.codes: dict[bytes, bytes] = _read(path)
        self.used: set[bytes] = set()
        self.added = 0

    def compile(self, source: str) -> CodeType:
        key = source_key(source)
        self.used.add(key)
        kept = self.codes.get(key)
        if kept is not None:
            with contextlib.suppress(Exception):  # the file's checksum held, so this is not expected
                code = marshal.loads(kept)
                if isinstance(code, CodeType):
                    return code
        # As dataclasses' own exec compiles it: without this module's ``from __future__`` (postponed
        # annotations would turn the methods' annotations into their names' text).
        code = compile(source, "<string>", "exec", dont_inherit=True)
        self.codes[key] = marshal.dumps(code)
        self.added += 1
        return code

    def exec(self, source: str | CodeType, globals_: Any = None, locals_: Any = None, /) -> None:
        """``exec`` as ``dataclasses`` calls it (the text it generated), with the compilation looked up first."""
        builtins.exec(self.compile(source) if isinstance(source, str) else source, globals_, locals_)

    def save(self, *, always: bool = False) -> None:
        """Write the file when something new was compiled, unless Python writes no bytecode here (``-B``,
        ``PYTHONDONTWRITEBYTECODE``); ``always``: whatever that says (``python -m flujo_cli.compile_methods``,
        as ``compileall`` does for modules)."""
        if not self.added or (sys.dont_write_bytecode and not always):
            return
        self.added = 0
        codes = self.codes
        if len(codes) > LIMIT:
            codes = {key: codes[key] for key in self.used if key in codes}
        payload = marshal.dumps(codes)
        part = self.path.with_name(f"{self.path.name}.{os.getpid()}-{os.urandom(4).hex()}")
        try:
            if not self.path.parent.is_dir():
                return
            part.write_bytes(_HEADER + zlib.crc32(payload).to_bytes(4, "big") + payload)
            os.replace(part, self.path)  # whole or not at all, when two processes save at once
        except (OSError, ValueError):  # a read-only or full disk: the next process compiles, as now
            with contextlib.suppress(OSError):
                part.unlink(missing_ok=True)


def _read(path: Path) -> dict[bytes, bytes]:
    """The file's methods; none when it is missing, another Python's (its bytecode's magic) or format's,
    damaged (its checksum: a damaged code object can crash the interpreter), or larger than ``LIMIT``
    methods can make (it is then replaced, never read into memory)."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError:
        return {}
    start = len(_HEADER) + 4
    if len(data) > MAX_BYTES or not data.startswith(_HEADER):
        return {}
    payload = memoryview(data)[start:]
    if int.from_bytes(data[len(_HEADER) : start], "big") != zlib.crc32(payload):
        return {}
    try:
        found = marshal.loads(payload)
    except Exception:  # written by this module and checked: anything here means "damaged"
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, bytes) and len(k) == _KEY_SIZE and isinstance(v, bytes)}


_HEADER = importlib.util.MAGIC_NUMBER + FORMAT
_KEY_SIZE = 16


def cache_path() -> Path:
    """Where the bytecode of a module of ``flujo_cli`` named ``dataclass_methods`` would go."""
    beside = Path(__file__).with_name("dataclass_methods.py")
    return Path(importlib.util.cache_from_source(str(beside))).with_suffix(".marshal")


_installed: MethodCache | None = None


class _Matches(dict[str, "re.Match[str] | None"]):
    """``dataclasses``' match of a field's annotation, by its text, each text matched once. With postponed
    annotations every field's is a text, matched (``_is_type``) for ``ClassVar``, ``InitVar`` and ``KW_ONLY``:
    some 2,500 matches of a few hundred texts as a run loads, 7 M instructions. A match is immutable, so the
    same one serves each field written alike."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        super().__init__()
        self._pattern = pattern

    def __missing__(self, text: str) -> re.Match[str] | None:
        found = self[text] = self._pattern.match(text)
        return found


def install() -> MethodCache | None:
    """Route ``dataclasses``' compilations through the cache, once (``None`` where there is no cache)."""
    global _installed
    if _installed is not None or sys.implementation.name != "cpython":
        return _installed
    try:
        cache = MethodCache(cache_path())
    except (NotImplementedError, ValueError):  # no bytecode location for this interpreter
        return None
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]  # the module's own name, before builtins
    pattern = getattr(dataclasses, "_MODULE_IDENTIFIER_RE", None)
    if isinstance(pattern, re.Pattern):
        dataclasses._MODULE_IDENTIFIER_RE = types.SimpleNamespace(match=_Matches(pattern).__getitem__)  # type: ignore[attr-defined]
    atexit.register(cache.save)
    _installed = cache
    return cache


def prime() -> int:
    """Make every dataclass of flujo (and the libraries' it loads), then keep their methods; the number kept.
    Modules that cannot be imported here (an extra not installed) are left out."""
    import importlib
    import pkgutil

    cache = install()
    if cache is None:
        return 0
    for package in ("core", "blueprints", "lens", "flujo_cli"):
        root = importlib.import_module(package)
        for found in pkgutil.walk_packages(root.__path__, f"{package}.", onerror=lambda name: None):
            if found.name.endswith("__main__"):
                continue
            with contextlib.suppress(Exception):  # an extra not installed, or one that cannot load here
                importlib.import_module(found.name)
    cache.save(always=True)
    return len(cache.codes)
