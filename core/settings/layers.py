"""The layers settings come from, and where each sets a value: the user's settings file, the project's
``flujo.toml``, the environment, the command line (lowest first; ``core.settings.config`` merges them).

The user's file is ``$XDG_CONFIG_HOME/flujo/config.toml``, or ``~/.config/flujo/config.toml`` when
``XDG_CONFIG_HOME`` is not set (or not an absolute path, which the XDG spec says to ignore): defaults for
every project of this user. It may set anything but ``state_uri``: one file would send the runs of every
project to one store, unnoticed, so naming it there is an error (a ConfigError at its line, exit code 6).

Invariant: a relative path a settings file gives (``state_uri``, ``local.model_path``, the file of a
``default_model = "local:FILE"``) is made absolute from that file's folder here, in the file's own layer, so a
value given by another layer is never moved by it.
Which environment is read is the caller's: with no ``HOME`` and no ``XDG_CONFIG_HOME`` in it, there is no
user file (a test that passes ``env={}`` reads nobody's).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from core.model.errors import ConfigError
from core.model.providers import provider_of
from core.settings.file import key_position, read_settings_file

LayerKind = Literal["user", "project", "environment", "command line"]
USER_FILE = Path("flujo") / "config.toml"
PROJECT_FILE = "flujo.toml"


@dataclass(frozen=True)
class SettingsLayer:
    """The settings one layer gives (nested as in a settings file), and where it got them: its ``file``,
    or for the environment the ``variables`` that set each path (``("openai", "api_key")`` →
    ``OPENAI_API_KEY``)."""

    kind: LayerKind
    data: dict[str, Any]
    file: Path | None = None
    variables: Mapping[tuple[str, ...], str] = field(default_factory=dict)

    def sets(self, loc: Sequence[str | int]) -> bool:
        """Whether this layer gives a value at (or above) the path ``loc`` of a setting."""
        node: Any = self.data
        for part in loc:
            if not isinstance(node, Mapping) or part not in node:
                return isinstance(node, list | str | int | float | bool) and node is not self.data
            node = node[part]
        return True

    def place(self, loc: Sequence[str | int]) -> str:
        """Where this layer sets ``loc``, for a person: ``file:line:col`` (or the file), the variable, ``--set``."""
        if self.file is not None:
            found = key_position(self.file, loc)
            return f"{self.file}:{found[0]}:{found[1]}" if found is not None else str(self.file)
        if self.kind == "environment":
            for length in range(len(loc), 0, -1):
                name = self.variables.get(tuple(str(part) for part in loc[:length]))
                if name is not None:
                    return name
            return "FLUJO_* environment"
        return "--set"


def user_config_path(env: Mapping[str, str]) -> Path | None:
    """Where the user's settings file is looked for (whether or not it exists); None when ``env`` names
    neither ``XDG_CONFIG_HOME`` nor ``HOME``."""
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / USER_FILE
    home = env.get("HOME", "")
    return Path(home) / ".config" / USER_FILE if home else None


def find_project_file(start: Path, name: str = PROJECT_FILE) -> Path | None:
    """The nearest ``name`` in ``start`` or a parent directory."""
    for candidate in project_file_candidates(start, name):
        if candidate.is_file():
            return candidate
    return None


def project_file_candidates(start: Path, name: str = PROJECT_FILE) -> Iterator[Path]:
    """Where ``find_project_file`` looks, nearest first: ``name`` in ``start`` and in each parent directory."""
    for folder in (start, *start.parents):
        yield folder / name


def user_layer(env: Mapping[str, str]) -> SettingsLayer | None:
    """The user's settings file as a layer, or None when there is none; ConfigError when it cannot be read
    or names ``state_uri``."""
    path = user_config_path(env)
    if path is None or not path.is_file():
        return None
    layer = _file_layer("user", path)
    if "state_uri" in layer.data:
        raise ConfigError(
            f"{layer.place(['state_uri'])}: state_uri cannot be set in the user settings file",
            hint="name the run store in the project's flujo.toml, FLUJO_STATE_URI or --state: one user file would"
            " send every project's runs to one store",
        )
    return layer


def project_layer(cwd: Path) -> SettingsLayer | None:
    """The nearest ``flujo.toml`` as a layer, or None; ConfigError when it cannot be read."""
    path = find_project_file(cwd)
    return _file_layer("project", path) if path is not None else None


def _file_layer(kind: LayerKind, path: Path) -> SettingsLayer:
    data = read_settings_file(path)
    folder = path.parent
    uri = data.get("state_uri")
    if isinstance(uri, str) and _relative_path(uri):  # a URI (sqlite:///, postgresql://) is left as it is
        data["state_uri"] = str(folder / uri)
    local = data.get("local")
    model_path = local.get("model_path") if isinstance(local, dict) else None
    if isinstance(model_path, str) and model_path and not Path(model_path).expanduser().is_absolute():
        data["local"] = {**(local or {}), "model_path": str(folder / model_path)}
    if isinstance(data.get("default_model"), str):
        data["default_model"] = anchored_model(data["default_model"], folder)
    return SettingsLayer(kind, data, file=path)


def anchored_model(model: str, folder: Path) -> str:
    """``model`` with the relative file of a ``local:FILE`` model made absolute from ``folder`` (where the
    setting that names it was written or typed); any other model id as it is."""
    provider, colon, file = model.strip().partition(":")
    row = provider_of(model.strip())
    if row is None or row.api != "local" or not colon or not file or Path(file).expanduser().is_absolute():
        return model
    return f"{provider}:{folder / file}"


def _relative_path(uri: str) -> bool:
    return "://" not in uri and uri != ":memory:" and not Path(uri).is_absolute()
