"""Shell completion, driven by its protocol: ``flujo`` started as a completion script starts it
(``_FLUJO_COMPLETE=SHELL_complete`` with ``COMP_WORDS`` / ``COMP_CWORD``), in a process of its own. Commands and
options; run ids (with their status where the shell shows descriptions) for ``resume`` / ``lens show|trace`` /
``cancel``; thread names for ``--thread`` and ``threads show|delete|fork``; a blueprint's agents for
``--simulate-user``; a run's steps for ``--step`` / ``--expand``; paths left to the shell. Nothing to complete
(no store, no blueprint, a damaged one) is no completions, never an error; nothing imported is the engine's.
Then the scripts themselves: the bash one run by a real bash, and ``--install``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flujo_cli import exit_codes
from flujo_cli.completion.shells import SCRIPTS
from tests.cli.test_threads import PLANNER
from tests.support.cli_helpers import ROOT, flujo

pytestmark = pytest.mark.slow  # a process per completion, as a shell starts one per TAB

PERSONA = PLANNER.replace(
    "agents:\n",
    "agents:\n  ada:\n    model: scripted\n    system_prompt: You are Ada.\n    replies: [Two of us]\n"
    "  helper:\n    command: [cat]\n",
)


def complete(
    line: str, *, shell: str = "bash", env: dict[str, str] | None = None, cwd: Path | None = None
) -> list[str]:
    """What ``flujo`` answers a completion of ``line`` (the words typed; the last one is being completed, or a
    new one after a trailing space), each line of its answer; it must exit 0 and print nothing on stderr."""
    words = line.split()
    current = len(words) if line.endswith(" ") else len(words) - 1
    protocol = {"COMP_WORDS": line, "COMP_CWORD": str(current)}
    if shell == "fish":  # fish sends the line up to the cursor and the token under it
        protocol = {"COMP_WORDS": line, "COMP_CWORD": "" if line.endswith(" ") else words[-1]}
    result = subprocess.run(
        [sys.executable, "-m", "flujo_cli.main"],
        env={**os.environ, "PYTHONPATH": str(ROOT), "_FLUJO_COMPLETE": f"{shell}_complete", **protocol, **(env or {})},
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    return result.stdout.splitlines()


def values(answer: list[str]) -> list[str]:
    """The values of a bash answer (``plain,VALUE`` lines)."""
    return [line.partition(",")[2] for line in answer if line.startswith("plain,")]


def zsh(answer: list[str]) -> list[tuple[str, str]]:
    """``(value, help)`` of a zsh answer (``TYPE``, ``VALUE``, ``HELP`` lines)."""
    return [(answer[i + 1], answer[i + 2]) for i in range(0, len(answer), 3) if answer[i] == "plain"]


def run_json(*args: str) -> dict[str, object]:
    code, out, err = flujo([*args, "--json"])
    assert code in (exit_codes.OK, exit_codes.PAUSED), err
    result: dict[str, object] = json.loads(out)
    return result


@pytest.fixture
def planner(tmp_path: Path) -> Path:
    blueprint = tmp_path / "planner.yaml"
    blueprint.write_text(PERSONA, encoding="utf-8")
    return blueprint


def test_commands_and_their_options(state_db: Path) -> None:
    assert {"run", "resume", "lens", "threads", "completion", "submit"} <= set(values(complete("flujo ")))
    assert values(complete("flujo l")) == ["lens"]
    assert values(complete("flujo lens ")) == ["list", "show", "trace", "diff", "export", "prune"]
    assert values(complete("flujo threads ")) == ["list", "show", "delete", "fork"]
    assert values(complete("flujo run plan.yaml --th")) == ["--thread"]
    assert values(complete("flujo run plan.yaml --thread t --th")) == []  # given once already
    assert "--continue" in values(complete("flujo run plan.yaml --c")) and "-c" in values(complete("flujo run x -"))
    assert "--install-completion" in values(complete("flujo --"))
    # zsh and fish show what each is: the command's help, an option's first sentence.
    [(name, about)] = zsh(complete("flujo l", shell="zsh"))
    assert name == "lens" and about.startswith("Look into the run store: runs")
    [fork] = complete("flujo threads f", shell="fish")
    assert fork.startswith("plain,fork\tStart thread NEW from an earlier point")
    assert zsh(complete("flujo run x --thr", shell="zsh")) == [
        ("--thread", "Continue the conversation of thread NAME: its earlier turns open the…")
    ]


def test_run_ids_newest_first_with_their_status(state_db: Path, planner: Path) -> None:
    done = run_json("run", str(planner), "--input", "Plan a holiday", "--answer", "Two")["run_id"]
    paused = run_json("run", str(planner), "--input", "Book a train", "--no-input")["run_id"]
    assert isinstance(done, str) and isinstance(paused, str)
    assert values(complete("flujo lens show ")) == [paused, done]
    assert values(complete(f"flujo lens diff {done} ")) == [paused, done]  # both of its runs
    assert values(complete(f"flujo lens trace {done[:3]}")) == (
        [done] if not paused.startswith(done[:3]) else [paused, done]
    )
    assert values(complete("flujo resume ")) == [paused]  # a completed run is not resumed
    assert values(complete("flujo cancel ")) == []  # nothing queued or running
    described = dict(zsh(complete("flujo lens show ", shell="zsh")))
    assert described[paused].startswith("paused, planner, 20") and described[done].startswith("completed, planner, ")
    fish = complete("flujo lens show ", shell="fish")
    assert fish[0].startswith(f"plain,{paused}\tpaused, planner, ")
    assert values(complete(f"flujo run {planner} --replay ")) == [paused, done]
    code, out, err = flujo(["submit", str(planner), "--input", "Later", "--json"])
    assert code == exit_codes.OK, err
    [queued] = json.loads(out)["queued"]
    assert values(complete("flujo cancel ")) == [queued]
    assert values(complete("flujo resume "))[0] == queued  # a queued run can be resumed by hand


def test_run_ids_and_threads_from_a_postgresql_store(postgres_uri: str, planner: Path) -> None:
    run_id = run_json(
        "run", str(planner), "--thread", "shared", "--state", postgres_uri, "--input", "x", "--answer", "y"
    )["run_id"]
    assert values(complete("flujo lens show ", env={"FLUJO_STATE_URI": postgres_uri})) == [run_id]
    assert values(complete(f"flujo threads show --state {postgres_uri} ")) == ["shared"]


def test_thread_names_for_thread_options_and_threads_commands(state_db: Path, planner: Path) -> None:
    for thread in ("home", "work", "team:alpha"):
        run_json("run", str(planner), "--thread", thread, "--input", "Plan", "--answer", "Me")
    latest_first = ["team:alpha", "work", "home"]
    for line in (
        f"flujo run {planner} --thread ",
        "flujo threads show ",
        "flujo threads delete ",
        "flujo lens list --thread ",
    ):
        assert values(complete(line)) == latest_first, line
    assert values(complete("flujo threads fork w")) == ["work"]
    assert values(complete("flujo threads fork work ")) == []  # NEW is a new name
    assert zsh(complete("flujo threads show h", shell="zsh"))[0][1].startswith("1 run, latest 20")
    # bash splits a word at ':' and replaces only what follows: the value is given from there.
    line = f"flujo run {planner} --thread team:a"
    answer = complete(line, env={"COMP_LINE": line, "COMP_POINT": str(len(line.encode()))})
    assert values(answer) == ["alpha"]
    line = f"flujo run {planner} --thread=wo"
    assert values(complete(line, env={"COMP_LINE": line, "COMP_POINT": str(len(line))})) == ["work"]


def test_agents_of_the_blueprint_on_the_line(state_db: Path, planner: Path, tmp_path: Path) -> None:
    assert zsh(complete(f"flujo run {planner} --simulate-user ", shell="zsh")) == [
        ("agents.ada", "scripted"), ("agents.helper", "command"), ("agents.planner", "scripted"),
    ]  # fmt: skip
    assert values(complete(f"flujo submit {planner} --simulate-user agents.a")) == ["agents.ada"]
    paused = run_json("run", str(planner), "--input", "Plan", "--no-input")["run_id"]
    assert values(complete(f"flujo resume {paused} --simulate-user ag")) == [
        "agents.ada",
        "agents.helper",
        "agents.planner",
    ]
    ensemble = tmp_path / "ensemble.yaml"  # the ensemble file format: its personas are the agents
    ensemble.write_text("name: e\nagents:\n  - {name: a, prompt: hi}\npersonas:\n  bea: {model: scripted}\n")
    assert values(complete(f"flujo run {ensemble} --simulate-user ")) == ["agents.bea"]


def test_steps_of_the_run_on_the_line(state_db: Path, planner: Path) -> None:
    run_id = run_json("run", str(planner), "--input", "Plan", "--answer", "Two")["run_id"]
    assert isinstance(run_id, str)
    assert values(complete(f"flujo lens trace {run_id} --step ")) == ["plan", "answer", "chat"]
    assert values(complete(f"flujo lens trace {run_id[:6]} --step chat/")) == [
        "chat/1", "chat/1/plan", "chat/plan", "chat/1/answer", "chat/answer", "chat/2", "chat/2/plan",
    ]  # fmt: skip
    assert values(complete(f"flujo lens trace {run_id} --expand ")) == ["all", "none", "plan", "answer", "chat"]
    assert values(complete(f"flujo lens trace {run_id} --expand a")) == ["all", "answer"]
    assert values(complete("flujo lens trace nope --step ")) == []


def test_the_store_the_line_names(
    state_db: Path, planner: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.db"
    run_id = run_json(
        "run", str(planner), "--thread", "elsewhere", "--state", str(other), "--input", "x", "--answer", "y"
    )["run_id"]
    assert values(complete("flujo lens show ")) == []
    assert values(complete(f"flujo lens show --state {other} ")) == [run_id]
    assert values(complete(f"flujo threads show --state {other} ")) == ["elsewhere"]
    assert values(complete("flujo lens show ", env={"FLUJO_STATE_URI": str(other)})) == [run_id]
    project = tmp_path / "project"  # state_uri in flujo.toml, relative to it, found from a folder below
    (project / "sub").mkdir(parents=True)
    (project / "flujo.toml").write_text(f'state_uri = "{os.path.relpath(other, project)}"\n', encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k != "FLUJO_STATE_URI"}
    monkeypatch.setattr(os, "environ", environment)
    assert values(complete("flujo lens show ", cwd=project / "sub")) == [run_id]


def test_nothing_to_complete_is_no_completions_never_an_error(state_db: Path, tmp_path: Path) -> None:
    for line in ("flujo lens show ", "flujo resume ", "flujo threads show ", "flujo lens trace abc --step "):
        assert values(complete(line)) == [], line
    assert not state_db.exists()  # completing never creates the store
    state_db.parent.mkdir()
    state_db.write_text("not a database", encoding="utf-8")
    assert values(complete("flujo lens show ")) == []
    assert values(complete(f"flujo run {tmp_path / 'missing.yaml'} --simulate-user ")) == []
    broken = tmp_path / "broken.yaml"
    broken.write_text("agents: [unclosed\n", encoding="utf-8")
    assert values(complete(f"flujo run {broken} --simulate-user ")) == []
    assert values(complete("flujo lens show ", env={"FLUJO_STATE_URI": "postgresql://flujo@127.0.0.1:1/flujo"})) == []
    assert values(complete("flujo lens list --limit notanumber --thread ")) == []
    assert values(complete("flujo --version ")) != []  # --version only prints when it is run, not while completing


def test_paths_are_left_to_the_shell(state_db: Path) -> None:
    assert complete("flujo run ") == ["file,"]
    assert complete("flujo run plan.yaml --answers ans") == ["file,ans"]
    assert complete("flujo lens list --state ./") == ["file,./"]
    assert complete("flujo validate ", shell="zsh") == ["file", "", "_"]


def test_a_completion_imports_nothing_of_the_engine(state_db: Path, planner: Path) -> None:
    heavy = ("core.engine", "core.policies", "core.agents", "pydantic", "aiosqlite", "blueprints", "jinja2", "httpx")
    run_json("run", str(planner), "--thread", "t", "--input", "Plan", "--answer", "Two")
    code = (
        "import atexit, sys; from flujo_cli.main import main; "
        f"atexit.register(lambda: sys.stderr.write(repr([m for m in {heavy!r} if m in sys.modules])))\n"
        "main()"
    )
    for line in ("flujo lens trace ", f"flujo run {planner} --simulate-user ", "flujo threads show "):
        result = subprocess.run(
            [sys.executable, "-c", code],
            env={
                **os.environ,
                "_FLUJO_COMPLETE": "bash_complete",
                "COMP_WORDS": line,
                "COMP_CWORD": str(len(line.split())),
            },
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert (result.returncode, result.stderr) == (0, "[]"), line
        assert result.stdout


def test_the_scripts(tmp_path: Path) -> None:
    for shell in ("bash", "zsh", "fish"):
        code, out, err = flujo(["completion", shell])
        assert (code, out, err) == (exit_codes.OK, SCRIPTS[shell], "")
        assert "_FLUJO_COMPLETE=" + shell + "_complete" in out
    code, out, err = flujo(["completion", "tcsh"])
    assert (code, out) == (exit_codes.USAGE, "") and err.startswith(
        "error: flujo completes bash, zsh, fish, not 'tcsh'"
    )
    assert values(complete("flujo completion ")) == ["bash", "zsh", "fish"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_bash_script_in_bash(state_db: Path, planner: Path, tmp_path: Path) -> None:
    """The script as bash runs it: sourced, then its function called as bash calls it on TAB; the flujo it runs
    is the one on PATH (this Python's)."""
    run_json("run", str(planner), "--thread", "team:alpha", "--input", "x", "--answer", "y")
    script = tmp_path / "flujo.bash"
    script.write_text(SCRIPTS["bash"], encoding="utf-8")

    def tab(line: str) -> tuple[list[str], str]:
        """COMPREPLY after TAB at the end of ``line``, and the options the function set (compopt)."""
        new_word = 'COMP_WORDS+=("")' if line.endswith(" ") else ":"
        program = (
            f"source {script}\n"
            f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}\n"
            'read -r -a COMP_WORDS <<< "$COMP_LINE"\n'
            f"{new_word}\n"
            "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
            'exec 3>&2; compopt() { local IFS=" "; echo "compopt $*" >&3; }\n'  # the script sends compopt's stderr away
            "_flujo_completion flujo\n"
            "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
        )
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        result = subprocess.run(
            ["bash", "--norc", "--noprofile", "-c", program],
            env={**os.environ, "PATH": path},
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr
        return [line for line in result.stdout.splitlines() if line], result.stderr

    assert tab("flujo threads ") == (["list", "show", "delete", "fork"], "")
    assert tab("flujo run docs/ex") == ([], "compopt -o default\n")  # the shell completes the file
    replies, _ = tab("flujo threads show te")
    assert replies == ["team:alpha"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish")
def test_the_fish_script_in_fish(state_db: Path, planner: Path, tmp_path: Path) -> None:
    """fish completes a command line with the script loaded (``complete -C``): values with their descriptions."""
    run_json("run", str(planner), "--thread", "trip", "--input", "x", "--answer", "y")
    script = tmp_path / "flujo.fish"
    script.write_text(SCRIPTS["fish"], encoding="utf-8")
    program = f"source {script}; complete -C 'flujo threads '; complete -C 'flujo threads show '"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        ["fish", "--no-config", "-c", program], env={**os.environ, "PATH": path}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines[:4]] == ["list", "show", "delete", "fork"]
    assert lines[0].startswith("list\tList the threads")
    assert lines[4].startswith("trip\t1 run, latest 20")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh")
def test_the_zsh_script_in_zsh(state_db: Path, planner: Path, tmp_path: Path) -> None:
    """The zsh function called as the completion system calls it (``words``, ``CURRENT``), with the system's
    builtins it hands the values to (``_describe``, ``compadd``, ``_path_files``) standing in."""
    run_json("run", str(planner), "--thread", "team:alpha", "--input", "x", "--answer", "y")
    script = tmp_path / "flujo.zsh"
    script.write_text(SCRIPTS["zsh"], encoding="utf-8")
    program = (
        "compdef() { :; }\n"  # as when compinit has run
        f"source {script}\n"
        '_describe() { print -rl -- "${(@P)3}" }\n'
        'compadd() { print -rl -- "${(@P)${@[-1]}}" }\n'
        '_path_files() { print -r -- "_path_files $@" }\n'
        'words=(flujo threads show ""); CURRENT=4; _flujo_completion\n'
        'words=(flujo run ""); CURRENT=3; _flujo_completion\n'
    )
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        ["zsh", "-f", "-c", program], env={**os.environ, "PATH": path}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    described, files = result.stdout.splitlines()
    assert described.startswith("team\\:alpha:1 run, latest 20")  # a colon in a value is escaped for _describe
    assert files == "_path_files -f"


def test_install_writes_the_script_where_the_shell_loads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path(os.environ["HOME"])
    code, out, err = flujo(["completion", "bash", "--install"])
    target = home / ".local" / "share" / "flujo" / "completion.bash"
    assert code == exit_codes.OK, err
    assert out.splitlines()[0] == f"installed bash completion in {target}, loaded from {home / '.bashrc'}"
    assert target.read_text(encoding="utf-8") == SCRIPTS["bash"]
    (home / ".bashrc").write_text((home / ".bashrc").read_text(encoding="utf-8") + "alias ll='ls -l'\n")
    assert flujo(["completion", "bash", "--install"])[0] == exit_codes.OK  # again: the line is not added twice
    lines = (home / ".bashrc").read_text(encoding="utf-8").splitlines()
    assert lines == [f"[ -f {target} ] && . {target}  # flujo shell completion", "alias ll='ls -l'"]

    monkeypatch.setenv("ZDOTDIR", str(tmp_path / "zdot"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert flujo(["completion", "zsh", "--install"])[0] == exit_codes.OK
    assert "completion.zsh" in (tmp_path / "zdot" / ".zshrc").read_text(encoding="utf-8")
    assert flujo(["completion", "fish", "--install"])[0] == exit_codes.OK
    assert (tmp_path / "config" / "fish" / "completions" / "flujo.fish").read_text() == SCRIPTS["fish"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_install_completion_finds_the_shell_it_was_started_from() -> None:
    home = Path(os.environ["HOME"])
    result = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m flujo_cli.main --install-completion; exit $?"],
        env={**os.environ, "PYTHONPATH": str(ROOT), "SHELL": "/bin/zsh"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == exit_codes.OK, result.stderr
    assert result.stdout.startswith("installed bash completion in ")
    assert (home / ".bashrc").is_file() and not (home / ".zshrc").exists()
