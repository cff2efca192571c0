"""The command a run prints to continue it (after a pause, a failure, a limit, Ctrl-C) works when pasted:
it names the run's store with ``--state`` when that store is not the one a plain command finds (a SQLite
file by its absolute path, so it works from any folder; a PostgreSQL URI without its password, which
``PGPASSWORD`` gives), in the text and in ``--json``; and it names none when the store is the default."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, wait_until

ASKING = """\
version: "0.1"
steps:
  - {kind: hitl, name: month, message: "Which month?"}
"""

# Waits for the file "go" in the project folder, so that Ctrl-C lands while a step runs.
GATED = """\
version: "0.1"
agents:
  slow:
    command:
      - sh
      - -c
      - 'cat > /dev/null; touch "%(dir)s/started"; while [ ! -e "%(dir)s/go" ]; do sleep 0.05; done; echo done'
steps:
  - {kind: step, name: wait, uses: agents.slow}
"""


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "FLUJO_STATE_URI"}
    return {**env, **extra}


def _in(folder: Path, args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flujo_cli.main", *args],
        cwd=folder,
        env={**(env or _env()), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def _pasted(command: str, answer: str | None = None) -> list[str]:
    """The arguments of a printed ``flujo ...`` command, with ``'...'`` replaced by ``answer``."""
    words = shlex.split(command)
    assert words[0] == "flujo", command
    return [answer if word == "..." and answer is not None else word for word in words[1:]]


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "bp.yaml").write_text(ASKING, encoding="utf-8")
    return project, elsewhere


def test_the_pause_hint_names_a_store_given_with_state_and_works_from_another_folder(tmp_path: Path) -> None:
    project, elsewhere = _folders(tmp_path)
    paused = _in(project, ["run", "bp.yaml", "--no-input", "--state", "runs.db"])
    assert paused.returncode == exit_codes.PAUSED, paused.stderr
    command = re.search(r"continue with: (flujo resume .*--answer '\.\.\.')", paused.stderr)
    assert command is not None, paused.stderr
    assert f"--state {project / 'runs.db'}" in command.group(1)  # absolute: it works from anywhere
    resumed = _in(elsewhere, _pasted(command.group(1), "June"))
    assert resumed.returncode == exit_codes.OK, resumed.stderr
    assert resumed.stdout.strip() == "June"

    paused = _in(project, ["run", "bp.yaml", "--no-input", "--json", "--state", "runs.db"])
    hint = json.loads(paused.stdout)["pause"]["resume"]
    assert f"--state {project / 'runs.db'}" in hint
    resumed = _in(elsewhere, [*_pasted(hint, "May"), "--json"])
    assert json.loads(resumed.stdout)["output"] == "May", resumed.stderr


def test_the_hint_names_no_store_when_the_store_is_the_one_found_by_default(tmp_path: Path) -> None:
    project, _ = _folders(tmp_path)
    plain = _in(project, ["run", "bp.yaml", "--no-input", "--json"])
    assert "--state" not in json.loads(plain.stdout)["pause"]["resume"]
    env = _env(FLUJO_STATE_URI=str(project / "env.db"))
    through_env = _in(project, ["run", "bp.yaml", "--no-input", "--json", "--state", "env.db"], env)
    assert "--state" not in json.loads(through_env.stdout)["pause"]["resume"]  # the same store the env names


def test_the_ctrl_c_hint_names_the_store(tmp_path: Path) -> None:
    project, elsewhere = _folders(tmp_path)
    (project / "gated.yaml").write_text(GATED % {"dir": project}, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "flujo_cli.main", "run", "gated.yaml", "--state", "runs.db"],
        cwd=project,
        env={**_env(), "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until((project / "started").exists, process=process)  # Ctrl-C lands while the step runs
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate()
    assert process.returncode == exit_codes.INTERRUPTED, stderr
    command = re.search(r"continue it with: (flujo resume \S+ --state \S+)", stderr)
    assert command is not None, stderr
    (project / "go").touch()
    resumed = _in(elsewhere, _pasted(command.group(1)))
    assert resumed.returncode == exit_codes.OK, resumed.stderr


def test_a_postgres_hint_leaves_the_password_out_and_works_with_pgpassword(postgres_uri: str, tmp_path: Path) -> None:
    from tests.support.postgres_server import SUPERUSER_PASSWORD

    project, elsewhere = _folders(tmp_path)
    paused = _in(project, ["run", "bp.yaml", "--no-input", "--json", "--state", postgres_uri])
    assert paused.returncode == exit_codes.PAUSED, paused.stderr
    hint = json.loads(paused.stdout)["pause"]["resume"]
    assert SUPERUSER_PASSWORD not in hint and SUPERUSER_PASSWORD not in paused.stderr
    state = _pasted(hint)[_pasted(hint).index("--state") + 1]
    assert state.startswith("postgresql://postgres@") and state.endswith(postgres_uri.partition("?")[2])
    resumed = _in(elsewhere, [*_pasted(hint, "June"), "--json"], _env(PGPASSWORD=SUPERUSER_PASSWORD))
    assert json.loads(resumed.stdout)["output"] == "June", resumed.stderr
