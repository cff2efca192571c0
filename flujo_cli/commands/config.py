"""``flujo config show``: the effective settings, each with where it came from (a default, the user's settings
file, the project's flujo.toml, the environment, the command line) and secrets masked; ``--json`` too.

Text: one ``key = value`` line per setting (values as JSON), then ``# from`` the layer and the place in it,
after two lines naming the settings files looked for. JSON: ``{"files": {"user": {"path", "found"} | null,
"project": path | null}, "settings": {key: {"value", "from", "where"}}}``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import fail

if TYPE_CHECKING:
    from core import SettingsLayer, SettingSource

_WORDS = {"default": "default", "user": "user settings", "project": "flujo.toml", "environment": "environment"}
_WIDEST = 64  # a longer key = value line is not padded: its comment follows it


def show_config(*, json_output: bool, settings: Sequence[str], state: str | None, debug: bool) -> int:
    try:
        from core import overrides_from_assignments, setting_sources, settings_from_layers, settings_layers
        from flujo_cli.user_cache import kept_settings

        overrides = overrides_from_assignments(settings)
        if state is not None:
            overrides["state_uri"] = state
        layers = settings_layers(overrides=overrides)
        rows = setting_sources(settings_from_layers(layers, check=kept_settings()), layers)
    except Exception as exc:  # the CLI's top level: a bad setting is one line, exit code 6
        fail(exc, debug=debug)
    user, project = _files(layers)
    if json_output:
        document = {
            "files": {"user": user, "project": project},
            "settings": {row.key: {"value": row.value, "from": row.layer, "where": _where(row, state)} for row in rows},
        }
        sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
        return exit_codes.OK
    lines = [
        f"# user settings file: {_user_words(user)}",
        f"# project settings file: {project or f'none (no flujo.toml in {Path.cwd()} or above)'}",
    ]
    pairs = [(f"{row.key} = {json.dumps(row.value, ensure_ascii=False)}", _from(row, state)) for row in rows]
    width = min(max(len(left) for left, _ in pairs), _WIDEST)
    lines += [f"{left.ljust(width)}  # {source}" for left, source in pairs]
    sys.stdout.write("\n".join(lines) + "\n")
    return exit_codes.OK


def set_where(layers: Sequence[SettingsLayer], path: Sequence[str]) -> str:
    """Where the setting at ``path`` (``["default_model"]``) got its value, in the words ``flujo config show``
    uses: ``user settings FILE:LINE:COL``, ``flujo.toml FILE:LINE:COL``, ``environment FLUJO_X``, ``command line
    (--set)``, ``default``."""
    setter = next((layer for layer in reversed(layers) if layer.sets(path)), None)
    if setter is None:
        return "default"
    if setter.kind == "command line":
        return "command line (--set)"
    return f"{_WORDS[setter.kind]} {setter.place(path)}"


def _files(layers: Sequence[SettingsLayer]) -> tuple[dict[str, Any] | None, str | None]:
    """The user's settings file (where it is looked for, and whether it was found) and the project's."""
    from core import user_config_path

    found = {layer.kind: str(layer.file) for layer in layers if layer.file is not None}
    path = user_config_path(os.environ)
    user = {"path": str(path), "found": "user" in found} if path is not None else None
    return user, found.get("project")


def _user_words(user: dict[str, Any] | None) -> str:
    if user is None:
        return "none (neither XDG_CONFIG_HOME nor HOME is set)"
    return str(user["path"]) if user["found"] else f"{user['path']} (not there)"


def _where(row: SettingSource, state: str | None) -> str | None:
    if row.layer == "command line":
        return "--state" if row.key == "state_uri" and state is not None else "--set"
    return row.place


def _from(row: SettingSource, state: str | None) -> str:
    if row.layer == "default":
        return "default"
    if row.layer == "command line":
        return f"command line ({_where(row, state)})"
    return f"{_WORDS[row.layer]} {row.place}"
