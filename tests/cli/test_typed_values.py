"""Option and argument values converted without Typer's pydantic adapters give what Typer gives, or are left to
Typer (``flujo_cli/typed_values.py``): the same values, the same error messages, word for word."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param
from typer.core import TyperArgument, TyperOption

from flujo_cli.help_style import Command
from flujo_cli.main import app
from flujo_cli.one_command import narrowed
from flujo_cli.typed_values import UNSURE, PlainValue, converter

demo = typer.Typer()


@demo.command(cls=Command)
def every_kind(
    paths: Annotated[list[Path], typer.Argument()],
    text: Annotated[str | None, typer.Option()] = None,
    whole: Annotated[int | None, typer.Option(min=1)] = None,
    decimal: Annotated[float | None, typer.Option(min=0.0)] = None,
    path: Annotated[Path | None, typer.Option()] = None,
    many: Annotated[list[str] | None, typer.Option()] = None,
    flag: Annotated[bool, typer.Option()] = False,
) -> None:
    """Every plain type flujo's commands take."""


COMMAND = typer.main.get_command(demo)
PARAMS = {param.name: param for param in COMMAND.params if isinstance(param, TyperArgument | TyperOption)}

VALUES: list[tuple[str, Any]] = [
    ("text", "hello"), ("text", ""), ("text", "  spaced  "), ("text", "héllo ✓"), ("text", "bad \udcff byte"),
    ("whole", "12"), ("whole", "1"), ("whole", "0"), ("whole", "-3"), ("whole", "007"), ("whole", "+5"),
    ("whole", " 5"), ("whole", "5_000"), ("whole", "1e3"), ("whole", "abc"), ("whole", ""), ("whole", 4),
    ("whole", "99999999999999999999999"),
    ("decimal", "0.5"), ("decimal", "2"), ("decimal", "-0.5"), ("decimal", "1e3"), ("decimal", "inf"),
    ("decimal", "nan"), ("decimal", "x"), ("decimal", "007.25"), ("decimal", 1.5),
    ("path", "file.txt"), ("path", "missing/deeper"), ("path", "a//b/"), ("path", ""), ("path", "."),
    ("path", "unreadable"), ("path", "-"), ("path", "bad \udcff byte"),
    ("many", ("a", "b")), ("many", ["x"]), ("many", ("a", "bad \udcff")), ("many", ()),
    ("paths", ("file.txt", "missing")), ("paths", ("unreadable",)), ("paths", ()),
    ("flag", True), ("flag", False), ("flag", "yes"), ("flag", "0"),
]  # fmt: skip


def _outcome(param: Any, value: Any) -> tuple[str, Any]:
    try:
        return "value", param.process_value(Context(COMMAND), value)
    except BadParameter as exc:
        return "error", exc.format_message()


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "file.txt").write_text("x")
    unreadable = tmp_path / "unreadable"
    unreadable.write_text("x")
    unreadable.chmod(0)
    return tmp_path


@pytest.mark.parametrize(("name", "value"), VALUES, ids=[f"{name}={value!r}" for name, value in VALUES])
def test_a_value_converts_as_typer_converts_it(files: Path, name: str, value: Any) -> None:
    param = PARAMS[name]
    ours = param._runtime_param
    assert isinstance(ours, PlainValue)
    mine = _outcome(param, value)
    param._runtime_param = build_runtime_param(param.type_descriptor)  # Typer's own conversion
    try:
        typers = _outcome(param, value)
    finally:
        param._runtime_param = ours
    assert mine == typers
    assert type(mine[1]) is type(typers[1])


def test_the_usual_values_need_no_adapter() -> None:
    """What makes start-up cheaper: plain values are converted here, not by a pydantic adapter."""
    described = {name: param.type_descriptor for name, param in PARAMS.items()}
    for name, value in [("text", "hi"), ("whole", "3"), ("decimal", "0.25"), ("many", ("a",)), ("flag", True)]:
        convert = converter(described[name].annotation, described[name].parameter_info)
        assert convert is not None and convert(value) is not UNSURE, name


def test_every_parameter_of_every_command_is_converted_here_or_by_typer() -> None:
    """Every parameter of flujo's commands whose type is a plain one gets a ``PlainValue``; the others (none
    today) keep Typer's conversion, built when first needed."""

    def walk(command: Any) -> Any:
        yield command
        for sub in getattr(command, "commands", {}).values():
            yield from walk(sub)

    plain = [
        param
        for command in walk(typer.main.get_command(app))
        for param in command.params
        if isinstance(param, TyperArgument | TyperOption)
    ]
    assert plain and all(isinstance(param._runtime_param, PlainValue) for param in plain)


@pytest.mark.parametrize(
    ("args", "only"),
    [
        (["run", "x.yaml"], ["run"]),
        (["--debug", "run", "x.yaml"], ["run"]),
        (["lens", "list"], ["lens"]),
        (["test"], ["test"]),
        (["--help"], None),
        (["--version"], None),
        ([], None),
        (["rn", "x.yaml"], None),
        (["--debug"], None),
    ],
)
def test_only_the_named_command_is_built(args: list[str], only: list[str] | None) -> None:
    built = typer.main.get_command(narrowed(app, args))
    everything = typer.main.get_command(app)
    assert isinstance(built, typer.core.TyperGroup) and isinstance(everything, typer.core.TyperGroup)
    assert sorted(built.commands) == (only if only is not None else sorted(everything.commands))
    assert len(app.registered_commands) + len(app.registered_groups) == len(everything.commands)  # app untouched
