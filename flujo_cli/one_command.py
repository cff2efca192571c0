"""Only the command the command line names: ``flujo run FILE`` builds ``run``, not every command.

Typer turns the whole app into click commands before it parses anything: every command's parameters, help
and defaults, about a sixth of a ``flujo run``'s start-up. When the first word (after ``--debug``, the one
option of ``flujo`` itself that can come before a command and leave it to run) is exactly the name of a
command or a command group, the app is narrowed to that one: it parses, runs, answers ``--help`` and reports
errors as the whole app would, since everything the command's parsing reads is its own. Any other command
line (``flujo``, ``flujo --help``, ``flujo --version``, a misspelt command that is told the nearest names)
gets the whole app.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import typer
from typer.main import get_command_name, solve_typer_info_defaults


def command_word(args: Sequence[str]) -> str | None:
    """The word of ``args`` that names the command or group to run, if any (see the module docstring)."""
    words = list(args)
    while words and words[0] == "--debug":
        words.pop(0)
    return words[0] if words else None


def narrowed(app: typer.Typer, args: Sequence[str]) -> typer.Typer:
    """``app`` with only the command or group ``args`` names (see the module docstring), or ``app`` itself."""
    word = command_word(args)
    if word is None:
        return app
    commands = [
        info
        for info in app.registered_commands
        if info.callback is not None and (info.name or get_command_name(info.callback.__name__)) == word
    ]
    groups = [info for info in app.registered_groups if solve_typer_info_defaults(info).name == word]
    if len(commands) + len(groups) != 1:
        return app
    one = copy.copy(app)
    one.registered_commands = commands
    one.registered_groups = groups
    return one
