"""Which run store a command uses, and how it names it: ``--state URI`` beats ``FLUJO_STATE_URI``, which
beats ``state_uri`` in flujo.toml, which beats ``.flujo/flujo.db`` under the working directory.

Every command that looks a run (or a thread) up says, when it finds nothing, which store it looked in
(``where``: a file's absolute path, a database's URI without its password) and how to point at another
(``core.store.ELSEWHERE_HINT``). Commands that only look open the store with ``mode="read"`` or
``"existing"``: they never create one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from core import Settings
    from core.store import OpenMode, PostgresStore, SqliteStore


def settings_with_state(state: str | None, overrides: dict[str, Any] | None = None) -> Settings:
    """The settings, with ``--state`` (when given) as the state URI."""
    from core import load_settings
    from flujo_cli.user_cache import kept_settings

    layer = dict(overrides or {})
    if state is not None:
        layer["state_uri"] = state
    return load_settings(overrides=layer, check=kept_settings())


def where(settings: Settings) -> str:
    """The store the settings name, as a person should see it (never with a password)."""
    from core.store import describe

    return describe(settings.state_uri)


async def open_for(settings: Settings, mode: OpenMode | Literal["create"] = "create") -> SqliteStore | PostgresStore:
    """The store the settings name, opened in ``mode`` with the settings' PostgreSQL options."""
    import logging

    from core.store import open_store

    # The PostgreSQL driver's pool logs reconnection attempts; with no handler Python would print them raw on
    # stderr. The errors that matter reach the user as one line each (core.store.postgres_backend.errors).
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    return await open_store(settings.state_uri, mode=mode, postgres=settings.postgres, sqlite=settings.sqlite)


def elsewhere(what: str) -> str:
    """A hint for "not found here": how to list what this store holds, and how to look in another."""
    from core.store import ELSEWHERE_HINT

    return f"{what}; or look in another store: {ELSEWHERE_HINT}"


def state_option(settings: Settings) -> str:
    """`` --state URI`` for a command this one suggests (``flujo resume ...``) when ``settings`` name another
    store than that command would find by itself (``FLUJO_STATE_URI``, flujo.toml, the default): the
    suggestion then works when pasted. Empty when the store is the one found by itself.

    A SQLite file is named by its absolute path (the suggestion works from any folder). A PostgreSQL URI is
    given without its password, which is never shown: the pasted command reads it from ``PGPASSWORD`` or
    ``~/.pgpass``, as libpq does for any URI without one."""
    import shlex

    from core.store import describe

    if describe(settings.state_uri) == describe(settings_with_state(None).state_uri):
        return ""
    return f" --state {shlex.quote(_without_password(settings.state_uri))}"


def _without_password(uri: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    from core.store import describe, is_postgres

    if not is_postgres(uri):
        return describe(uri)
    try:
        parts = urlsplit(uri)
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.partition(':')[0]}@{host}"
        # The query as written (its values stay percent-encoded, as libpq needs), less any password.
        query = "&".join(item for item in parts.query.split("&") if not item.startswith("password="))
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # not parseable: the masked form, never the password
        return describe(uri)
