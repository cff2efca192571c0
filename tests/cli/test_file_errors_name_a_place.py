"""The errors about the files a command reads name the file and, where there is one, the line and column,
through the real CLI: a folder, ``/dev/null`` or a FIFO given as a blueprint, an answers file, an import or
a case file (``flujo test``, ``lens export --case``) is said to be what it is (never "no such file", and a
FIFO is never opened: it would wait for a writer); a blueprint or an answers file that is not UTF-8 is
refused at the first bad byte's line and column, with the line shown; an answers file of the wrong shape at
its first value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from blueprints import validate_file
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo

ECHO = 'version: "0.1"\nsteps:\n  - {kind: step, name: say, agent: {id: flujo.builtins.passthrough}}\n'


@pytest.fixture
def odd_paths(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """Paths that exist but are not files, with what each is called."""
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    return {
        "folder": (str(tmp_path / "folder"), "a folder"),
        "/dev/null": ("/dev/null", "a device"),
        "fifo": (str(tmp_path / "pipe"), "a FIFO (named pipe)"),
        "symlink loop": (str(tmp_path / "loop.yaml"), "a symlink loop"),
    }


@pytest.mark.parametrize("kind", ["folder", "/dev/null", "fifo", "symlink loop"])
def test_a_path_that_is_not_a_file_is_said_to_be_what_it_is(
    state_db: Path, tmp_path: Path, odd_paths: dict[str, tuple[str, str]], kind: str
) -> None:
    path, what = odd_paths[kind]
    (tmp_path / "echo.yaml").write_text(ECHO, encoding="utf-8")
    for args in (["validate", path], ["run", path], ["explain", path], ["submit", path, "--input", "x"]):
        code, _, err = flujo(args)
        assert code == exit_codes.USAGE, (args, err)
        assert f"error: {path} is {what}, not a blueprint file" in err, (args, err)
    code, _, err = flujo(["run", "echo.yaml", "--answers", path])
    assert code == exit_codes.USAGE
    assert f"error: {path} is {what}, not an answers file" in err
    if kind != "fifo":  # validate_file on a FIFO used to wait for ever: not tried here, the CLI is checked above
        [finding] = validate_file(path)
        assert finding.message == f"{path} is {what}, not a blueprint file"


@pytest.mark.parametrize("kind", ["/dev/null", "fifo", "symlink loop"])
def test_a_case_path_that_is_not_a_file_is_said_to_be_what_it_is(
    state_db: Path, odd_paths: dict[str, tuple[str, str]], kind: str
) -> None:
    path, what = odd_paths[kind]
    code, out, err = flujo(["test", path])  # a symlink loop was "no such file or folder"; a FIFO waited for ever
    assert (code, out) == (exit_codes.USAGE, "")
    assert err.splitlines()[0] == f"error: {path} is {what}, not a case file"
    code, _, err = flujo(["lens", "export", "any-run", "--case", path])  # a FIFO waited for ever here too
    assert code == exit_codes.USAGE
    assert err.splitlines()[0] == f"error: {path} is {what}, not a case file"
    assert not state_db.exists()  # refused before any store was opened


def test_a_case_found_in_a_folder_that_is_not_a_file_fails_saying_what_it_is(state_db: Path, tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    os.mkfifo(tmp_path / "cases" / "pipe.case.yaml")
    (tmp_path / "cases" / "loop.case.yaml").symlink_to("loop.case.yaml")
    code, out, _ = flujo(["test", "cases"])
    assert code == exit_codes.FAILED
    assert out.splitlines()[:4] == [
        "failed   cases/loop.case.yaml: cases/loop.case.yaml is a symlink loop, not a case file",
        "  hint: a case file is a regular file, written by: flujo lens export RUN --case FILE",
        "failed   cases/pipe.case.yaml: cases/pipe.case.yaml is a FIFO (named pipe), not a case file",
        "  hint: a case file is a regular file, written by: flujo lens export RUN --case FILE",
    ]


def test_a_missing_blueprint_is_still_no_such_file(state_db: Path) -> None:
    code, _, err = flujo(["validate", "nowhere.yaml"])
    assert code == exit_codes.USAGE
    assert "error: no such blueprint file: nowhere.yaml" in err


def test_an_import_that_is_a_folder_is_said_to_be_one(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "main.yaml").write_text(
        ECHO.replace("steps:", "imports: {helper: sub}\nsteps:"),
        encoding="utf-8",
    )
    [finding] = [f for f in validate_file(tmp_path / "main.yaml") if f.is_error]
    assert finding.message.startswith("imports.helper: 'sub' is a folder, not a blueprint file")
    assert finding.position is not None and finding.position.line == 2


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("loop.yaml", "imports.helper: 'loop.yaml' is a symlink loop, not a blueprint file"),
        ("\\0bad", "imports.helper: '\\x00bad' holds a NUL byte, which no file name can"),
    ],
)
def test_an_import_that_is_a_symlink_loop_or_holds_a_nul_byte_is_an_error_at_its_entry(
    state_db: Path, tmp_path: Path, target: str, expected: str
) -> None:
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    main = tmp_path / "main.yaml"
    main.write_text(ECHO.replace("steps:", f'imports: {{helper: "{target}"}}\nsteps:'), encoding="utf-8")
    [finding] = [f for f in validate_file(main) if f.is_error]
    assert finding.message.startswith(expected), finding.message
    assert finding.position is not None and (finding.position.line, finding.position.column) == (2, 19)
    for args in (["validate", str(main)], ["run", str(main), "--input", "x"], ["explain", str(main)]):
        code, _, err = flujo(args)
        assert code in (exit_codes.FAILED, exit_codes.BLUEPRINT), (args, err)
        assert f"{main}:2:19: error: {expected}" in err, (args, err)
        assert "unexpected" not in err, (args, err)


def test_a_local_model_file_that_holds_a_nul_byte_is_an_error_at_its_model(state_db: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / "local.yaml"
    blueprint.write_text(
        'version: "0.1"\nagents:\n  a: {model: "local:\\0x.gguf"}\nsteps:\n  - {kind: step, name: s, uses: agents.a}\n',
        encoding="utf-8",
    )
    expected = "error: agent 'a': the model file '\\x00x.gguf' holds a NUL byte, which no file name can"
    for args, exit_code in (([], exit_codes.FAILED), (["--input", "x"], exit_codes.BLUEPRINT)):
        code, _, err = flujo(["validate" if not args else "run", str(blueprint), *args])
        assert code == exit_code, err
        assert f"{blueprint}:3:14: {expected}" in err, err


def test_a_blueprint_that_is_not_utf8_is_refused_at_the_bad_byte(tmp_path: Path) -> None:
    (tmp_path / "latin.yaml").write_bytes(b'version: "0.1"\nname: caf\xe9\nsteps: []\n')
    code, _, err = flujo(["validate", str(tmp_path / "latin.yaml")])
    assert code == exit_codes.FAILED
    assert f"{tmp_path / 'latin.yaml'}:2:10: error: {tmp_path / 'latin.yaml'} is not UTF-8 text (byte 24)" in err
    assert "   2 | name: caf\ufffd" in err  # the line, the bad byte shown as U+FFFD, then the caret under it
    code, out, _ = flujo(["validate", str(tmp_path / "latin.yaml"), "--json"])
    assert '"line": 2, "column": 10' in out


def test_answers_file_errors_name_the_place(state_db: Path, tmp_path: Path) -> None:
    (tmp_path / "echo.yaml").write_text(ECHO, encoding="utf-8")
    (tmp_path / "latin.yaml").write_bytes(b"- first\n- caf\xe9\n")
    code, _, err = flujo(["run", "echo.yaml", "--answers", "latin.yaml"])
    assert code == exit_codes.CONFIG
    assert "error: answers file latin.yaml:2:6: not UTF-8 text (byte 13)" in err
    (tmp_path / "text.yaml").write_text('# answers\n"only one"\n', encoding="utf-8")
    code, _, err = flujo(["run", "echo.yaml", "--answers", "text.yaml"])
    assert code == exit_codes.CONFIG
    assert "error: answers file text.yaml:2:1: it must hold a list of answers" in err


def test_answers_that_yaml_reads_as_dates_are_their_text_and_binary_is_refused(state_db: Path, tmp_path: Path) -> None:
    hello = str(ROOT / "docs" / "examples" / "hello.yaml")
    (tmp_path / "date.yaml").write_text("ask_name: 2001-12-14\n", encoding="utf-8")
    code, out, err = flujo(["run", hello, "--answers", "date.yaml"])
    assert code == exit_codes.OK, err
    assert "Please greet 2001-12-14." in out
    (tmp_path / "when.yaml").write_text("- {at: 2001-12-14 21:59:43.10, days: [mon]}\n", encoding="utf-8")
    code, out, err = flujo(["run", hello, "--answers", "when.yaml"])
    assert code == exit_codes.OK, err
    assert '{"at": "2001-12-14T21:59:43.100000", "days": ["mon"]}' in out
    (tmp_path / "binary.yaml").write_text("# answers\nask_name: [Ada, !!binary aGVsbG8=]\n", encoding="utf-8")
    code, _, err = flujo(["run", hello, "--answers", "binary.yaml"])
    assert code == exit_codes.CONFIG, err
    assert err.startswith("error: answers file binary.yaml:2:17: a binary value (!!binary) cannot be an answer\n"), err
