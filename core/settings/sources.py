"""Where each effective setting came from (``flujo config show``): the built-in default, the user's settings
file, the project's flujo.toml, the environment or the command line, and the place in it.

Invariant: no value leaves this module unmasked where it may be a secret: an API key (``Secret``), any
setting or mapping key that names a secret (``core.text.redaction.sensitive_key``), and, in any text, the
secret values redaction masks in a run's traces (``secret_values``) and the password of a URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from core.settings.config import Settings, secret_values
from core.settings.layers import LayerKind, SettingsLayer
from core.settings.secret import Secret
from core.text.redaction import Redactor, masked_under_key, sensitive_key

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class SettingSource:
    """One effective setting: its dotted ``key`` (``history.max_tokens``, ``models."openai:gpt-4o".context_window``),
    its ``value`` as plain data with secrets masked, the ``layer`` that gave it, and the ``place`` in that
    layer (``file:line:col``, the environment variable, ``--set``; None for a default)."""

    key: str
    value: Any
    layer: LayerKind | Literal["default"]
    place: str | None


def setting_sources(
    settings: Settings, layers: Sequence[SettingsLayer], *, env: Mapping[str, str] | None = None
) -> list[SettingSource]:
    """Every setting of ``settings`` (made from ``layers``), in the order of the settings' fields, each with
    the highest layer that gives it; ``env`` is where secret values are looked for (the process's)."""
    # Without the user's redact_patterns: they are for a run's texts, and would mask themselves here.
    redactor = Redactor(secret_values=secret_values(settings, env=env))
    found = []
    for path, value in _leaves(settings, ()):
        setter = next((layer for layer in reversed(layers) if layer.sets(path)), None)
        found.append(
            SettingSource(
                key=".".join(part if _BARE_KEY.fullmatch(part) else f'"{part}"' for part in path),
                value=_shown(path, value, redactor),
                layer=setter.kind if setter is not None else "default",
                place=setter.place(path) if setter is not None else None,
            )
        )
    return found


def _leaves(section: DataclassInstance, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The settings of ``section`` (a settings dataclass) one by one: a section's settings, each entry of a
    table of sections (the ``models`` and ``profiles`` tables) by its name; anything else (a list, a mapping
    of values) whole."""
    for found in fields(section):
        name, value = found.name, getattr(section, found.name)
        here = (*path, name)
        if _is_section(value):
            yield from _leaves(value, here)
        elif isinstance(value, dict) and value and all(_is_section(entry) for entry in value.values()):
            for key, entry in value.items():
                yield from _leaves(entry, (*here, str(key)))
        else:
            yield here, value


def _is_section(value: object) -> TypeGuard[DataclassInstance]:
    return is_dataclass(value) and not isinstance(value, type)


def _shown(path: tuple[str, ...], value: Any, redactor: Redactor) -> Any:
    if isinstance(value, Secret):
        return masked_under_key(value.get_secret_value())
    if sensitive_key(path[-1]):
        return masked_under_key(value)
    return redactor.value(value)
