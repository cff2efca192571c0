"""The one translation of psycopg errors into ``StoreError`` (one line and a hint) for
``core.store.postgres_backend.store``, like ``core.store.sqlite_backend.files.store_error`` for SQLite. The
server out of reach, a connection lost, a server shutting down or starting up, no connection slot or none free in
time are ``StoreUnavailable``: nothing is wrong with what was being done, and it can be done again once the server
is back.

Invariants: a message names the store by ``core.settings.location.describe`` (never with its password), and
any text taken from the driver is cut to its first line and has the URI's password masked, so no
message, log or listing can show it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.model.errors import StoreError, StoreUnavailable
from core.settings.location import MASK
from core.store.rows.lookup import NO_RUN_HINT

if TYPE_CHECKING:
    import psycopg

_CREDENTIALS = ("28P01", "28000")  # invalid_password, invalid_authorization_specification
_UNREACHABLE_TEXTS = (
    "connection refused",
    "could not translate host name",
    "failed to resolve host",
    "timeout expired",
    "no route to host",
)
_LOST_TEXTS = ("server closed the connection", "the connection is closed", "connection is lost")
_SHUTTING_DOWN = ("57P01", "57P02", "57P03")  # admin_shutdown, crash_shutdown, cannot_connect_now
# The same refusals at connect time, where libpq gives the server's message without its SQLSTATE.
_SHUTTING_DOWN_TEXTS = (
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is not yet accepting connections",
    "the database system is in recovery mode",
)
_RETRY_HINT = "run the command again once the server is back; a run that was executing resumes with flujo resume"


def store_error(label: str, action: str, exc: psycopg.Error, *, secrets: Sequence[str] = ()) -> StoreError:
    """``exc``, raised while trying to ``action`` on the store ``label``, as a one-line ``StoreError``."""
    from psycopg_pool import PoolTimeout

    detail = _first_line(str(exc), secrets)
    lowered = detail.lower()
    state = exc.sqlstate
    if isinstance(exc, PoolTimeout):
        return StoreUnavailable(
            f"cannot {action}: no connection to {label} became free in time",
            hint="the server may be down, or out of connections (max_connections); see docs/scale.md",
        )
    if state == "23503":
        return StoreError(f"cannot {action}: no such run", hint=NO_RUN_HINT)
    if state in _CREDENTIALS or "password authentication failed" in lowered or "no password supplied" in lowered:
        return StoreError(
            f"PostgreSQL refused the credentials for {label}",
            hint="check the user and password in the URI (or PGPASSWORD, ~/.pgpass)",
        )
    if state == "3D000" or ("database" in lowered and "does not exist" in lowered):
        return StoreError(
            f"the database of {label} does not exist", hint="create it first (createdb NAME, or CREATE DATABASE)"
        )
    if state == "3F000" or "no schema has been selected" in lowered:
        return StoreError(
            f"cannot {action}: no schema of {label} can be used ({detail})",
            hint="create the schema in the URI's search_path and grant the user USAGE and CREATE on it (docs/scale.md)",
        )
    if state == "42501":
        return StoreError(
            f"cannot {action}: permission denied in {label} ({detail})",
            hint="grant the user CREATE and USAGE on the schema and rights on flujo's tables (docs/scale.md)",
        )
    if state == "53300" or "too many clients" in lowered or "remaining connection slots" in lowered:
        return StoreUnavailable(
            f"cannot {action}: {label} has no connection slot left",
            hint="lower postgres.pool_max_size, or raise the server's max_connections (docs/scale.md)",
        )
    if state is None and any(text in lowered for text in _UNREACHABLE_TEXTS):
        return StoreUnavailable(
            f"cannot reach the PostgreSQL server of {label} ({detail})",
            hint="is the server running? check the host and port in the URI",
        )
    if state in _SHUTTING_DOWN or (state is None and any(text in lowered for text in _SHUTTING_DOWN_TEXTS)):
        return StoreUnavailable(f"cannot {action}: the server of {label} is shutting down or starting ({detail})",
                                hint=_RETRY_HINT)  # fmt: skip
    if (state or "").startswith("08") or (state is None and any(text in lowered for text in _LOST_TEXTS)):
        return StoreUnavailable(f"cannot {action}: the connection to {label} was lost ({detail})", hint=_RETRY_HINT)
    return StoreError(f"cannot {action}: {detail} ({label})")


def _first_line(text: str, secrets: Sequence[str]) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[0] if lines else "unknown error"
    line = line.removeprefix("connection failed: ")
    for secret in sorted(secrets, key=len, reverse=True):  # the longest first: one form may hold another
        line = line.replace(secret, MASK)
    return line
