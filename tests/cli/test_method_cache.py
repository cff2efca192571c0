"""The compiled methods of dataclasses, kept between ``flujo`` processes (flujo_cli/method_cache.py; issue 36,
item 4: a thousand compilations were a quarter of a one-step run's start-up)."""

from __future__ import annotations

import dataclasses
import importlib.util
import marshal
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

import flujo_cli.method_cache as method_cache
from flujo_cli.method_cache import MethodCache

ROOT = Path(__file__).resolve().parents[2]
ONE_STEP = 'version: "0.1"\nagents:\n  a: {model: echo}\nsteps:\n  - {kind: step, name: s, uses: agents.a}\n'


@pytest.fixture(autouse=True)
def python_writes_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a user's machine (the suite runs with ``PYTHONDONTWRITEBYTECODE``, see the test near the end)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def test_where_python_writes_no_bytecode_a_save_writes_nothing_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "methods.marshal"
    cache = MethodCache(path)
    _made_through(cache, monkeypatch)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache.save()
    assert not path.exists()
    cache.save(always=True)  # python -m flujo_cli.compile_methods
    assert MethodCache(path).codes.keys() == cache.codes.keys()


def _file(codes: object) -> bytes:
    """A cache file's bytes, as ``MethodCache.save`` writes them."""
    payload = marshal.dumps(codes)
    return method_cache._HEADER + zlib.crc32(payload).to_bytes(4, "big") + payload


def _point_class() -> type[Any]:
    """The same definition each call, as a module makes it in each process."""

    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: list[str] = dataclasses.field(default_factory=list, hash=False)

    return Point


def _made_through(cache: MethodCache, monkeypatch: pytest.MonkeyPatch) -> type[Any]:
    with monkeypatch.context() as patch:
        patch.setattr(dataclasses, "exec", cache.exec, raising=False)
        return _point_class()


def _behaves(point: type[Any]) -> None:
    a, b = point(1), point(1)
    assert a == b and a is not b and hash(a) == hash(b)
    assert a != point(1, 2)
    assert repr(point(3, 4, ["t"])) == "_point_class.<locals>.Point(x=3, y=4, tags=['t'])"
    assert a.tags == [] and a.tags is not b.tags  # each instance its own list
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 2


def test_a_class_made_through_the_cache_is_the_class_python_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same code as dataclasses' own exec: signature, annotations and docstring included (compiled here,
    postponed annotations would have made them text)."""
    plain = _point_class()
    for cache in (MethodCache(tmp_path / "m.marshal"), None):
        if cache is None:  # the second time, from the file
            cache = MethodCache(tmp_path / "m.marshal")
        cached = _made_through(cache, monkeypatch)
        assert cached.__doc__ == plain.__doc__ and "_type_" not in str(cached.__doc__)
        assert cached.__init__.__annotations__ == plain.__init__.__annotations__
        for name in ("__init__", "__repr__", "__eq__", "__setattr__", "__delattr__", "__hash__"):
            made, expected = getattr(cached, name).__code__, getattr(plain, name).__code__
            assert (made.co_code, made.co_flags, made.co_names) == (
                expected.co_code,
                expected.co_flags,
                expected.co_names,
            )
        cache.save()


def test_methods_compiled_by_one_process_are_reused_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "methods.marshal"
    first = MethodCache(path)
    _behaves(_made_through(first, monkeypatch))
    assert first.added >= 5  # __init__, __repr__, __eq__, __setattr__, __delattr__, __hash__
    first.save()

    second = MethodCache(path)
    assert set(second.codes) == set(first.codes)
    # Kept under digests of the methods' source: neither the file nor the process holds the texts.
    assert all(len(key) == 16 for key in second.codes) and b"def __init__(" not in path.read_bytes()
    _behaves(_made_through(second, monkeypatch))
    assert second.added == 0  # nothing compiled
    mtime = path.stat().st_mtime_ns
    second.save()
    assert path.stat().st_mtime_ns == mtime  # nothing new: not written again


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not marshal at all",
        method_cache._HEADER + b"\x00\x00\x00\x00\x00\xff",
        b"\x00\x00\r\n" + method_cache.FORMAT + marshal.dumps({}),
        importlib.util.MAGIC_NUMBER + b"flujo dataclass methods 1\n" + marshal.dumps({}),
        _file({"def f(): pass": marshal.dumps(compile("def f(): pass", "<string>", "exec"))}),  # format 3's keys
    ],
    ids=["empty", "garbage", "truncated", "another-python", "an-older-format", "text-keys"],
)
def test_a_damaged_or_foreign_file_is_compiled_around_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    path = tmp_path / "methods.marshal"
    path.write_bytes(content)
    cache = MethodCache(path)
    assert cache.codes == {}
    _behaves(_made_through(cache, monkeypatch))
    cache.save()
    assert MethodCache(path).codes.keys() == cache.codes.keys() != set()


def test_a_file_damaged_anywhere_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every byte of a saved file changed in turn: never read (a damaged code object can crash Python)."""
    path = tmp_path / "methods.marshal"
    first = MethodCache(path)
    _made_through(first, monkeypatch)
    first.save()
    saved = path.read_bytes()
    for at in range(0, len(saved), max(1, len(saved) // 400)):
        path.write_bytes(saved[:at] + bytes([saved[at] ^ 0x41]) + saved[at + 1 :])
        assert MethodCache(path).codes == {}, at
    path.write_bytes(saved)
    assert MethodCache(path).codes == first.codes


def test_an_oversized_file_is_not_read_but_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "methods.marshal"
    monkeypatch.setattr(method_cache, "MAX_BYTES", 64)
    path.write_bytes(_file({"def f(): pass": b"x" * 100}))
    cache = MethodCache(path)
    assert cache.codes == {}
    _made_through(cache, monkeypatch)
    monkeypatch.setattr(method_cache, "MAX_BYTES", 16 * 1024 * 1024)
    cache.save()
    assert MethodCache(path).codes.keys() == cache.codes.keys()


def test_a_file_of_other_values_is_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "methods.marshal"
    path.write_bytes(_file({"def f(): pass": "not bytes", 1: b""}))
    assert MethodCache(path).codes == {}
    first = MethodCache(path)
    _made_through(first, monkeypatch)
    first.save()
    damaged = {source: b"\xff" + kept for source, kept in MethodCache(path).codes.items()}
    path.write_bytes(_file(damaged))  # entries that are not code
    cache = MethodCache(path)
    _behaves(_made_through(cache, monkeypatch))
    assert cache.added == len(damaged)  # compiled again, each of them


def test_nothing_is_written_where_python_keeps_no_bytecode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "__pycache__" / "methods.marshal"
    cache = MethodCache(path)
    _made_through(cache, monkeypatch)
    cache.save()
    assert not path.parent.exists()  # the folder is not made: it is Python's (or pip's) to make


def test_a_read_only_folder_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    folder = tmp_path / "__pycache__"
    folder.mkdir()
    cache = MethodCache(folder / "methods.marshal")
    _made_through(cache, monkeypatch)
    folder.chmod(0o555)
    try:
        cache.save()
    finally:
        folder.chmod(0o755)
    assert list(folder.iterdir()) == []


def test_past_the_limit_a_save_keeps_only_what_its_process_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "methods.marshal"
    stale = {
        method_cache.source_key(f"def old_{n}(): pass"): marshal.dumps(
            compile(f"def old_{n}(): pass", "<string>", "exec")
        )
        for n in range(5)
    }
    path.write_bytes(_file(stale))
    monkeypatch.setattr(method_cache, "LIMIT", 5)
    cache = MethodCache(path)
    _made_through(cache, monkeypatch)
    cache.save()
    kept = MethodCache(path).codes
    assert kept.keys() == cache.used and not kept.keys() & stale.keys()


def _flujo(tmp_path: Path, prefix: Path, extra: dict[str, str] | None = None) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), **(extra or {})}
    env |= {"FLUJO_STATE_URI": str(tmp_path / "s.db"), "PYTHONPYCACHEPREFIX": str(prefix)}
    done = subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", "run", "one.yaml", "--input", "hi", "--no-input"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"


@pytest.mark.slow
def test_the_flujo_command_compiles_its_dataclasses_methods_once(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    prefix = tmp_path / "bytecode"  # this test's own: other processes of the suite use the package's folder
    package = ROOT / "flujo_cli"  # under a prefix, bytecode goes to the prefix + the source's folder
    cache = prefix / package.relative_to(package.anchor) / f"dataclass_methods.{sys.implementation.cache_tag}.marshal"
    cache.parent.mkdir(parents=True)

    _flujo(tmp_path, prefix)
    kept = MethodCache(cache).codes
    assert len(kept) > 300  # flujo's dataclasses and pydantic's, made as the run loaded
    before = cache.stat()

    _flujo(tmp_path, prefix)
    after = cache.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # nothing new to keep


def test_a_program_importing_flujo_keeps_the_standard_library_untouched(tmp_path: Path) -> None:
    probe = "import flujo_cli, dataclasses; print('exec' in vars(dataclasses))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT)}
    )
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.slow
def test_where_python_writes_no_bytecode_only_compile_methods_keeps_them(tmp_path: Path) -> None:
    """``PYTHONDONTWRITEBYTECODE``: the command writes nothing, as Python writes no ``.pyc``;
    ``python -m flujo_cli.compile_methods`` (``make`` runs it) writes them ahead, and runs then reuse them."""
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    prefix = tmp_path / "bytecode"
    package = ROOT / "flujo_cli"
    cache = prefix / package.relative_to(package.anchor) / f"dataclass_methods.{sys.implementation.cache_tag}.marshal"
    cache.parent.mkdir(parents=True)
    quiet = {"PYTHONDONTWRITEBYTECODE": "1"}

    _flujo(tmp_path, prefix, quiet)
    assert not cache.exists()

    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(prefix), **quiet}
    done = subprocess.run(
        [sys.executable, "-m", "flujo_cli.compile_methods"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    kept = MethodCache(cache).codes
    assert len(kept) > 1000 and str(cache) in done.stdout  # every module's classes, the run's among them
    before = cache.stat()
    _flujo(tmp_path, prefix, quiet)
    _flujo(tmp_path, prefix, {})  # Python may write here: still nothing new to keep
    after = cache.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
