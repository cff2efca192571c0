"""Where a state URI points, and how to name it to a person: a SQLite file by its absolute path, a
PostgreSQL database by its URI with the password masked.

Invariants: ``describe`` never returns a password (neither the one in the URI's user part nor a
``password=`` query parameter), so every message, hint and listing that names a store is safe to show;
``password`` and ``secrets`` return it, so that redaction can mask it wherever else it might appear.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

POSTGRES_SCHEMES = ("postgresql", "postgres")
DEFAULT_STATE_URI = ".flujo/flujo.db"
"""Where the run store is when nothing says (``Settings.state_uri``'s default)."""
MASK = "***"

ELSEWHERE_HINT = "cd to the project's directory, set FLUJO_STATE_URI, or pass --state URI"
"""How to point a command at another store (said with every "not found here")."""


def project_state_uri(state: str | None, *, env: Mapping[str, str], cwd: Path | None = None) -> str:
    """The state URI a command run in ``cwd`` would use, found without building the settings (no pydantic), for
    readers that must be quick (shell completion): ``state`` (``--state``), else ``FLUJO_STATE_URI`` in ``env`` (the
    process's environment, which only the caller reads), else
    ``state_uri`` in the nearest flujo.toml (a relative path there is relative to its folder, as is the
    default when the file names none), else ``.flujo/flujo.db`` in ``cwd``. The same as
    ``load_settings(overrides={"state_uri": state}).state_uri`` (a test keeps them in step), except that a
    flujo.toml that cannot be read counts here as naming no store."""
    if state is not None:
        return state
    if env.get("FLUJO_STATE_URI"):
        return env["FLUJO_STATE_URI"]
    cwd = cwd or Path.cwd()
    toml_path = next(
        (folder / "flujo.toml" for folder in (cwd, *cwd.parents) if (folder / "flujo.toml").is_file()), None
    )
    if toml_path is None:
        return DEFAULT_STATE_URI
    import tomllib  # only now: its parser takes a few hundredths of a second to import

    try:
        written = tomllib.loads(toml_path.read_text(encoding="utf-8")).get("state_uri", DEFAULT_STATE_URI)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return DEFAULT_STATE_URI
    uri = written if isinstance(written, str) else DEFAULT_STATE_URI
    if "://" in uri or uri == ":memory:" or Path(uri).is_absolute():
        return uri
    return str(toml_path.parent / uri)


def is_postgres(uri: str) -> bool:
    """Whether ``uri`` names a PostgreSQL database (``postgresql://...`` or ``postgres://...``)."""
    scheme, sep, _ = uri.partition("://")
    return bool(sep) and scheme.lower() in POSTGRES_SCHEMES


def describe(uri: str) -> str:
    """``uri`` as a person should see it: a file's absolute path, a database URI without its password."""
    if is_postgres(uri):
        return _masked(uri)
    path = uri.removeprefix("sqlite:///") if uri.startswith("sqlite:///") else uri
    if path == ":memory:" or "://" in path or not path:
        return path or uri
    return os.path.abspath(os.path.expanduser(path))


def password(uri: str) -> str | None:
    """The password a PostgreSQL ``uri`` carries (in its user part, percent-decoded as the driver reads it,
    or as ``password=``), or None."""
    if not is_postgres(uri):
        return None
    try:
        parts = urlsplit(uri)
        found = parts.password
    except ValueError:  # too malformed to parse (an unclosed [ in its host), yet the driver may quote it whole
        written = _written_password(uri)
        return unquote(written) if written else None
    if found:
        return unquote(found)
    return next((value for key, value in parse_qsl(parts.query) if key == "password" and value), None)


def secrets(uri: str) -> list[str]:
    """The password of ``uri`` in every form it may be written in (as typed, percent-encoded, and as the
    driver reads it), for redaction to mask."""
    found = password(uri)
    if found is None:
        return []
    try:
        raw = urlsplit(uri).password
    except ValueError:
        raw = _written_password(uri)
    return list(dict.fromkeys(value for value in (found, raw) if value))


def _written_password(uri: str) -> str | None:
    """The password in the user part of ``uri`` as written (``scheme://user:PASSWORD@host...``), read
    without parsing the rest: for a URI too malformed for ``urlsplit``."""
    netloc = uri.partition("://")[2]
    for end in "/?#":
        netloc = netloc.partition(end)[0]
    userinfo, at, _ = netloc.rpartition("@")
    _, colon, written = userinfo.partition(":")
    return written if at and colon and written else None


def _masked(uri: str) -> str:
    try:
        parts = urlsplit(uri)
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.partition(':')[0]}:{MASK}@{host}"
        query = urlencode(
            [(key, MASK if key == "password" else value) for key, value in parse_qsl(parts.query)], safe=":/,*"
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # not even parseable: show only the scheme, never the rest
        return uri.partition("://")[0] + "://" + MASK
