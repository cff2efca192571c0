"""Importing the ``module:function`` callables a blueprint names (agents, exit conditions, conditions).

Modules are looked up on ``sys.path`` plus the blueprint's own folder and the current directory (a
console script does not have the current directory on ``sys.path``, but projects keep their agent
modules beside their blueprints). A failure is a BlueprintError at the position of the path in the file,
naming the module and the reason; a blueprint never silently runs without the code it names.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from blueprints.reading.suggestions import did_you_mean
from core import BlueprintError, SourcePosition

_HINT = "modules are found on PYTHONPATH, in the blueprint's folder and in the current directory"


def _extend_search_path(folder: Path | None) -> None:
    for entry in (str(folder.resolve()) if folder else None, os.getcwd()):
        if entry and entry not in sys.path:
            sys.path.append(entry)


def load_callable(
    spec: str, *, position: SourcePosition | None, search: Path | None = None, role: str | None = None
) -> Callable[..., Any]:
    """Import ``package.module:function`` (the function part may be dotted: ``module:Class.method``).

    With ``role`` (``exit_condition``, ``condition``) it must be a plain function: the engine calls it
    synchronously for a value.
    """
    module_name, _, attribute = spec.partition(":")
    _extend_search_path(search)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        raise BlueprintError(
            f"cannot import {spec!r}: no module named {missing!r}", position=position, hint=_HINT
        ) from None
    except Exception as exc:  # the user's module raised while importing: report it here, at its path
        raise BlueprintError(
            f"cannot import {spec!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}",
            position=position,
            hint="fix the error in that module (run: python -c 'import " + module_name + "')",
        ) from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_")]
            raise BlueprintError(
                f"cannot import {spec!r}: {module_name!r} has no {part!r}{did_you_mean(part, names)}",
                position=position,
                hint=f"check the name after ':' in {spec!r}",
            )
        target = getattr(target, part)
    if not callable(target):
        raise BlueprintError(
            f"{spec!r} is not a function (it is a value of type {type(target).__name__})",
            position=position,
            hint=f"check the name after ':' in {spec!r}",
        )
    if role is not None and inspect.iscoroutinefunction(target):
        raise BlueprintError(
            f"{role} {spec!r} is an async function; it must be a plain function returning a value",
            position=position,
            hint="remove 'async' from its definition",
        )
    function: Callable[..., Any] = target
    return function
