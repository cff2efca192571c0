"""Where the ``flujo`` command keeps what it can make again: ``$XDG_CACHE_HOME/flujo`` (an absolute
``XDG_CACHE_HOME``, as the XDG spec says), else ``~/.cache/flujo``; nowhere when neither is set.

Everything in it can be deleted at any time; the next command makes it again. Today it holds the blueprint
files validated before (``validated/``, ``blueprints.checking.validated``), which ``flujo run``, ``flujo
resume``, ``flujo submit`` and ``flujo explain`` read instead of validating an unchanged file again, and the
settings checked before (``settings/``, ``core.settings.kept_settings``), which every command that reads the
settings uses instead of checking unchanged settings again (secrets are never written there).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from blueprints import ValidatedFiles
    from core import KeptSettings


def cache_folder(env: Mapping[str, str] = os.environ) -> Path | None:
    """The command's cache folder (whether or not it exists yet); None when ``env`` names neither an
    absolute ``XDG_CACHE_HOME`` nor a ``HOME`` that exists (a home folder is never made for a cache)."""
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "flujo"
    home = env.get("HOME", "")
    return Path(home) / ".cache" / "flujo" if home and os.path.isdir(home) else None


def validated_files(env: Mapping[str, str] = os.environ) -> ValidatedFiles | None:
    """The validated blueprint files of this user, or None when there is no cache folder."""
    from blueprints import ValidatedFiles

    folder = cache_folder(env)
    return ValidatedFiles(folder / "validated") if folder is not None else None


def kept_settings(env: Mapping[str, str] = os.environ) -> KeptSettings | None:
    """The settings this user's commands checked before (``load_settings(check=...)``), or None when there is
    no cache folder; ``env``'s secrets are never kept."""
    from core import KeptSettings

    folder = cache_folder(env)
    return KeptSettings(folder / "settings", env=env) if folder is not None else None
