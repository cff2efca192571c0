"""A package's front door, opened lazily: the one PEP 562 helper of every package's ``__init__``.

A package's ``__init__`` lists what it exports and where each name lives; a name's module is imported the
first time the name is read, and the value is then kept in the package's namespace, so the next read is a
plain attribute. ``import core`` or ``import blueprints`` therefore costs a dictionary, not the modules behind
it: ``flujo --help`` and the commands that only read the store never import the engine.

    from core.front_door import lazy_exports

    _WHERE = {"Engine": "core.engine", "bind_thread": "core.conversation.threads:bind"}
    __getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())

A value is ``"module"`` (the attribute has the exported name) or ``"module:attribute"``. Static checks read
the table (``tests/test_layering.py`` counts each module in it as an import of the package), so it is a
literal mapping. This module imports nothing of flujo.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, where: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, which exports the names of ``where``."""

    def __getattr__(name: str) -> Any:
        place = where.get(name)
        if place is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = place.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        namespace[name] = value  # once: the next read is a plain attribute of the package
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
