"""The test suite's own rules (tests/conftest.py), checked on a pytest started as a developer's shell or a
script would start it: with flujo settings, provider keys, a secret and a terminal width in its
environment, in the background (Ctrl-C ignored), from the repository. Each test it runs still starts
isolated, with Ctrl-C's default action for the processes it starts, and with its time limit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_helpers import ROOT

PROBE = """\
import os, signal, subprocess, sys, time
from pathlib import Path

import pytest


def test_starts_isolated(tmp_path: Path) -> None:
    assert Path.cwd() == tmp_path
    assert os.environ["HOME"] != os.environ["PROBE_REAL_HOME"] and not any(Path(os.environ["HOME"]).iterdir())
    inherited = ("FLUJO_STATE_URI", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "GITHUB_TOKEN", "COLUMNS")
    inherited += ("XDG_CONFIG_HOME",)
    for name in inherited:
        assert name not in os.environ, name
    assert os.environ["FLUJO_TEST_POSTGRES_URI"] == "kept"  # the suite's own setting


def test_a_child_gets_ctrl_c() -> None:
    check = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    assert subprocess.run([sys.executable, "-c", check], capture_output=True, text=True).stdout.strip() == "True"


@pytest.mark.slow
def test_slow_limit(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("timeout").args == (600,)


def test_a_hang_is_ended() -> None:
    time.sleep(60)
"""


@pytest.mark.slow
def test_every_test_starts_isolated_with_a_time_limit(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PROBE_REAL_HOME": os.environ["HOME"],
        "FLUJO_STATE_URI": str(tmp_path / "mine.db"),
        "FLUJO_TEST_POSTGRES_URI": "kept",
        "OPENAI_API_KEY": "sk-mine",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "GITHUB_TOKEN": "1",
        "COLUMNS": "40",
        "XDG_CONFIG_HOME": str(tmp_path / "my-config"),  # the user's settings file: never read by a test
    }
    # Started with SIGINT ignored, as a shell's background job is (``trap "" INT`` then exec keeps it so);
    # the probe's time limit is 3 s, so that its hang ends soon.
    pytest_args = ["-p", "tests.conftest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT)]
    pytest_args += ["-o", "timeout=3", "-p", "no:cacheprovider", "-rf", str(tmp_path / "test_probe.py")]
    command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", sys.executable, "-m", "pytest", *pytest_args]
    probe = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert "1 failed, 3 passed" in probe.stdout, probe.stdout + probe.stderr
    assert "FAILED" in probe.stdout and "test_a_hang_is_ended" in probe.stdout, probe.stdout
    assert "Timeout (>3.0s) from pytest-timeout" in probe.stdout, probe.stdout
