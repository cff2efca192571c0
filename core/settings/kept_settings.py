"""Settings checked before, kept on disk, so that a command reading unchanged settings imports no pydantic
(checking settings data builds a pydantic validator: ``core.settings.validating``).

``KeptSettings`` is a ``SettingsCheck`` (``core.settings.config``): given the merged settings data, it finds
the ``Settings`` checked before from the same data, else checks the data and keeps the result when it is
valid (an invalid one is checked each time, so that it is refused with its own error). An entry is found by
a key made of everything the result depends on: the code that checks (Python's and pydantic's versions, the
size and modification time of the settings' modules) and the data, as canonical JSON.

Invariant: nothing secret is written. The providers' API keys and ``state_uri`` (which may carry a
PostgreSQL password) are taken out of the data before it is keyed, and out of the settings before they are
kept, and put back, from the data in hand, after an entry is read; they are plain texts, which the check
only wraps (``Secret``) or keeps, so the result does not depend on them. Data in which any other text is one
of those values or a secret of the environment (``environment_secrets``), or a mapping key names a secret
(``core.text.redaction.sensitive_key``: a profile's ``model_settings.api_key``), is never kept: it is
checked each time. Entries are kept as ``core.settings.kept_entries`` keeps them (the user's own files,
written whole; a damaged or foreign one is a miss).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.model import providers
from core.settings import config
from core.settings.config import Checked, Settings, checked_settings, environment_secrets, http_providers
from core.settings.kept_entries import KeptEntries, code_stamp
from core.settings.location import secrets
from core.settings.secret import Secret
from core.text import bounds
from core.text.redaction import sensitive_key

FORMAT = b"flujo checked settings 1\n"
KEPT = 64
_SUFFIX = ".settings"
# The modules the check's result depends on (whether or not this process has imported them).
_CODE = ("config.py", "secret.py", "validating.py", "kept_settings.py")


class KeptSettings:
    """Settings checked before, kept in ``folder`` (made, for the user alone, when first written); ``env`` is
    the environment whose secrets are never kept (the process's)."""

    def __init__(self, folder: Path, *, env: Mapping[str, str]) -> None:
        self.folder = folder
        self._env = env
        self._entries = KeptEntries(folder, head=FORMAT, suffix=_SUFFIX, kept=KEPT, max_bytes=1 << 20)
        self._stamp: bytes | None = None

    def __call__(self, data: dict[str, Any], /) -> Checked:
        """``data`` checked as ``Settings`` (``checked_settings``), read from an entry when one was kept."""
        parts = self._parts(data)
        key = self._key(parts[0]) if parts is not None else None
        if parts is None or key is None:
            return checked_settings(data)
        _, keys, state_uri = parts
        found = self._entries.recall(key)
        if isinstance(found, Settings):
            return _with_secrets(found, keys, state_uri)
        checked = checked_settings(data)
        if isinstance(checked, Settings):
            self._entries.keep(key, _without_secrets(checked))
        return checked

    def _parts(self, data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str], str | None] | None:
        """``data`` without its secrets, the providers' API keys taken out (by section), and its state URI;
        None when the data cannot be kept (a secret elsewhere in it, or one that is not a text)."""
        keyed = dict(data)
        keys: dict[str, str] = {}
        for name in http_providers():
            section = keyed.get(name)
            if isinstance(section, dict) and section.get("api_key") is not None:
                if not isinstance(section["api_key"], str):
                    return None
                keys[name] = section["api_key"]
                keyed[name] = {key: value for key, value in section.items() if key != "api_key"}
        state_uri = keyed.pop("state_uri", None)
        named = keyed.get("secret_env_vars", [])
        if state_uri is not None and not isinstance(state_uri, str):
            return None
        if not isinstance(named, list) or not all(isinstance(name, str) for name in named):
            return None
        found = {*keys.values(), *secrets(state_uri or ""), *environment_secrets(named, env=self._env)}
        found.discard("")
        return None if _holds_secret(keyed, found) else (keyed, keys, state_uri)

    def _key(self, keyed: dict[str, Any]) -> str | None:
        """The name of the entry of ``keyed`` (data without secrets), or None for data that is not plain JSON
        (a TOML date, a number that is not finite: checked each time)."""
        try:
            text = json.dumps(keyed, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError):
            return None
        if self._stamp is None:
            folder = Path(config.__file__).parent
            self._stamp = code_stamp([*(str(folder / name) for name in _CODE), bounds.__file__, providers.__file__])
        return hashlib.sha256(FORMAT + self._stamp + b"\0" + text.encode("utf-8", "surrogatepass")).hexdigest()


def _holds_secret(value: Any, found: set[str]) -> bool:
    """Whether ``value`` holds one of the texts ``found``, or a mapping key that names a secret, at any depth."""
    if isinstance(value, str):
        return value in found
    if isinstance(value, dict):
        return any(
            sensitive_key(key) or _holds_secret(key, found) or _holds_secret(item, found) for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_holds_secret(item, found) for item in value)
    return False


def _without_secrets(settings: Settings) -> Settings:
    """``settings`` as kept: no API key, the default state URI."""
    sections = {name: replace(section, api_key=None) for name, section in settings.provider_sections().items()}
    return replace(settings, state_uri=Settings.state_uri, **sections)  # type: ignore[arg-type]


def _with_secrets(settings: Settings, keys: Mapping[str, str], state_uri: str | None) -> Settings:
    """``settings`` as read from an entry, with the data's API keys and state URI put back."""
    sections = {name: replace(settings.provider(name), api_key=Secret(key)) for name, key in keys.items()}
    return replace(settings, state_uri=Settings.state_uri if state_uri is None else state_uri, **sections)  # type: ignore[arg-type]
