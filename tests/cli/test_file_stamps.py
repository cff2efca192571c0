"""Whether a file still has the content it was read with (flujo_cli.file_stamps): an equal stat signature is
trusted only once the file's last change is well before the read; a different one makes the file read again,
and a file touched or rewritten with the same bytes is still the same."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from flujo_cli.file_stamps import RACY_NS, Stamp


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _long_after_its_change(path: Path, text: str) -> Stamp:
    """The stamp of ``path`` as if it had been read with ``text`` long after the file last changed."""
    return Stamp.taken(str(path), _digest(text), read_ns=time.time_ns() + 2 * RACY_NS)


def test_a_trusted_signature_is_not_read_again(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text("one", encoding="utf-8")
    stamp = _long_after_its_change(path, "one")
    assert stamp.unchanged() and stamp.unchanged()
    assert stamp.hashes == 0


def test_a_file_just_written_is_read_again_at_each_check_and_an_edit_of_the_same_size_and_time_is_seen(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text("aaaa", encoding="utf-8")
    stamp = Stamp.read(str(path))
    assert stamp.unchanged() and stamp.unchanged()
    assert stamp.hashes == 2  # racy: its last change is within RACY_NS of the read
    before = path.stat()
    path.write_text("bbbb", encoding="utf-8")  # the same size, and the same modification time again
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert not stamp.unchanged()


def test_a_touched_file_is_read_again_and_is_the_same(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text("one", encoding="utf-8")
    stamp = _long_after_its_change(path, "one")
    os.utime(path, ns=(0, 1_000_000_000))  # another signature, the same content
    assert stamp.unchanged()
    assert stamp.hashes == 1 and stamp.signature == (1_000_000_000, path.stat().st_ctime_ns, 3, path.stat().st_ino)


def test_a_different_signature_with_other_content_is_a_change(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text("one", encoding="utf-8")
    stamp = _long_after_its_change(path, "one")
    path.write_text("three", encoding="utf-8")
    assert not stamp.unchanged()


def test_a_file_that_appears_or_disappears_is_a_change(tmp_path: Path) -> None:
    absent = Stamp.read(str(tmp_path / "flujo.toml"))
    assert absent.digest is None and absent.unchanged()
    (tmp_path / "flujo.toml").write_text("", encoding="utf-8")
    assert not absent.unchanged()
    present = Stamp.read(str(tmp_path / "flujo.toml"))
    (tmp_path / "flujo.toml").unlink()
    assert not present.unchanged()
    (tmp_path / "flujo.toml").mkdir()  # not a regular file: as absent
    assert Stamp.read(str(tmp_path / "flujo.toml")).digest is None
