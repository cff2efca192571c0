"""A full disk under the run store is named as such (SQLite often calls it a plain "disk I/O error"), and
the run it stopped continues once there is room. On a real, tiny file system (tmpfs), so it needs root to
mount one; elsewhere it is skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import EXAMPLES, flujo_process

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Fill the disk to its last byte with one file, and return it."""
    filler = disk / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(descriptor, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(descriptor)
    return filler


def test_a_full_disk_is_named_and_the_run_continues_once_there_is_room(small_disk: Path) -> None:
    state = ["--state", str(small_disk / "flujo.db")]
    paused = flujo_process(["run", str(EXAMPLES / "clarify.yaml"), "--no-input", "--json", *state])
    assert paused.returncode == exit_codes.PAUSED, paused.stderr
    run_id = paused.stdout.split('"run_id": "')[1].split('"')[0]
    filler = _fill(small_disk)
    stopped = flujo_process(["resume", run_id, "--answer", "Plan a trip", *state])
    assert stopped.returncode == exit_codes.STORE, stopped.stderr
    assert f"the disk (or quota) holding {small_disk / 'flujo.db'} is full" in stopped.stderr
    assert "disk I/O error" not in stopped.stderr and "Traceback" not in stopped.stderr
    filler.unlink()
    answers = ["--answer", "Plan a trip", "--answer", "My family", "--answer", "June"]
    done = flujo_process(["resume", run_id, *answers, "--json", *state])
    assert done.returncode == exit_codes.OK, done.stderr
    assert '"status": "completed"' in done.stdout
