"""The profiling scripts docs/performance.md tells readers to run still run (at a small size, untimed)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _report(script: str, *options: str) -> str:
    """What ``benchmarks/SCRIPT 30 --rounds 1 OPTIONS`` prints (it must succeed)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "30", "--rounds", "1", *options],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_the_engine_profile_runs_and_reports_per_iteration() -> None:
    report = _report("engine_profile.py")
    assert report.startswith("30 iterations") and "per iteration" in report


@pytest.mark.parametrize("shape", ["--ensemble", "--plain"])
def test_the_engine_profile_runs_an_ensemble_and_a_plain_loop(shape: str) -> None:
    report = _report("engine_profile.py", shape)
    assert report.startswith("30 iterations") and "per iteration" in report


def test_the_store_profile_times_each_part_of_a_write() -> None:
    report = _report("store_profile.py")
    assert report.startswith("30 iterations")
    for part in ("encoding", "statements", "COMMIT", "write transactions", "event loop thread"):
        assert part in report


@pytest.mark.parametrize("shape", [[], ["--tool"]])
def test_the_replay_profile_compares_a_replay_with_a_fresh_run(shape: list[str]) -> None:
    report = _report("replay_profile.py", *shape)
    assert report.startswith("30 iterations")
    for part in ("fresh: lowest", "load: lowest", "replay: lowest", "replay / fresh"):
        assert part in report


def test_the_ensemble_script_writes_a_blueprint_that_validates(tmp_path: Path) -> None:
    from blueprints import validate_file

    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ensemble_run.py"), "4", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("flujo run ")
    assert validate_file(tmp_path / "ensemble.yaml") == []


def test_the_worker_floor_runs_its_runs_and_reports_them() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "worker_floor.py"), "3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    ready, report = result.stdout.splitlines()
    assert ready == "ready" and report.startswith("3 runs in") and report.endswith("runs/s")


def test_the_postgresql_iteration_script_compares_the_stores(postgres_server: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "pg_iteration.py"),
            "2",
            "--rounds",
            "1",
            "--state",
            postgres_server,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    [line] = result.stdout.splitlines()
    assert line.startswith("CPU per iteration: SQLite ") and "round trips per committed step" in line
    assert int(line.split("(at most ")[1].split(")")[0]) <= 3


@pytest.mark.parametrize(("mode", "whys"), [("on", "2 with a why"), ("off", "0 with a why")])
def test_the_provenance_script_runs_with_and_without(mode: str, whys: str) -> None:
    # With it, the first call says the seed's origin and the call whose bound first drops turns says so; the
    # other calls have nothing new to say. Without it, none says anything.
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "provenance_run.py"), "30", mode],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == f"completed: 30 prompt events, {whys}\n", result.stdout


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_the_instruction_count_script_runs_its_iterations(store: str, postgres_server: str) -> None:
    """What ``benchmarks/pg_instructions.py`` runs under callgrind, on each store (callgrind itself is slow)."""
    from tests.support.postgres_server import empty_store_uri

    uri = "sqlite" if store == "sqlite" else empty_store_uri(postgres_server)
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "pg_instructions.py"), "run", "3", uri],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_startup_ratio_compiles_the_methods_of_the_tree_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the repository's folder too, where ``python -m`` would find this tree's ``flujo_cli`` first."""
    from benchmarks.startup_ratio import compile_methods

    tree = tmp_path / "tree"
    (tree / "flujo_cli").mkdir(parents=True)
    (tree / "flujo_cli" / "__init__.py").write_text("")
    (tree / "flujo_cli" / "compile_methods.py").write_text(
        "from pathlib import Path\nPath(__file__).with_name('compiled').write_text('yes')\n"
    )
    monkeypatch.chdir(ROOT)
    compile_methods(tree)
    assert (tree / "flujo_cli" / "compiled").read_text() == "yes"


def test_startup_ratio_cold_runs_validate_every_time(tmp_path: Path) -> None:
    """``--cold``: no run finds the validated blueprint files of the runs before it."""
    from benchmarks.startup_ratio import Commands

    commands = Commands(ROOT, tmp_path, cold=True)
    commands.run("one_step")
    kept = tmp_path / "home" / ".cache" / "flujo" / "validated"
    assert len(list(kept.glob("*.validated"))) == 1
    (kept / "marker.validated").write_text("")
    commands.run("one_step")
    assert not (kept / "marker.validated").exists() and len(list(kept.glob("*.validated"))) == 1


def _fake_valgrind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, total: str) -> None:
    """A stand-in ``valgrind`` first on ``PATH``: it writes the file callgrind would, with ``total`` (shell
    text) as the count, then runs the command it was given."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    fake = bin_folder / "valgrind"
    fake.write_text(
        "#!/bin/sh\n"
        'out="${2#--callgrind-out-file=}"\n'
        "shift 2\n"
        f'printf "events: Ir\\nsummary: %s\\n" "{total}" > "$out"\n'
        'exec "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}:{os.environ['PATH']}")


def test_startup_ratio_counts_a_process_instructions_through_callgrind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--instructions``: each process runs under ``valgrind --tool=callgrind`` and its total is read back. A
    stand-in ``valgrind`` on ``PATH`` writes the file callgrind would, then runs the command it was given."""
    from benchmarks.startup_ratio import Commands, callgrind_total

    _fake_valgrind(tmp_path, monkeypatch, "4242")
    assert Commands(ROOT, tmp_path / "work").instructions("deps") == 4242
    assert callgrind_total("version: 1\ntotals: 17 3\n") == 17
    with pytest.raises(ValueError):
        callgrind_total("events: Ir\n")


def test_startup_parts_counts_each_part_s_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``startup_parts``: a process per part under callgrind (a stand-in ``valgrind`` on ``PATH`` that counts
    each process's code as its size, then runs it), the real run last; each line its ratio and what it adds."""
    from benchmarks.startup_parts import PARTS, counts, report

    _fake_valgrind(tmp_path, monkeypatch, '$(printf %s "$*" | wc -c)')
    found = counts(ROOT, tmp_path / "work")
    assert list(found) == list(PARTS) == ["deps", "settings", "core", "blueprints", "cli", "run"]
    sizes = [found[part] for part in PARTS if part != "run"]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)  # each part's code holds the one before
    lines = report({"deps": 100_000_000, "settings": 150_000_000}).splitlines()
    assert lines[0].split() == ["deps", "100", "M", "1.00x"]
    assert lines[1].split() == ["settings", "150", "M", "1.50x", "+50", "M"]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="the [local] extra is not installed")
def test_the_first_reply_script_times_a_chat_at_a_terminal() -> None:
    """``benchmarks/first_reply.py`` drives ``make run``'s chat at a pseudo-terminal to its end (one round, no
    typing time) and reports the wait for the first reply."""
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.first_reply", "--rounds", "1", "--typing", "0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "first reply" in result.stdout and "s after Enter (median of 1;" in result.stdout


def test_the_retake_count_finds_nothing_read_beside_the_taking_transaction() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "retake_statements.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("sqlite: 0 statement(s) read outside a transaction, 6 write transaction(s)")
