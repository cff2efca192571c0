"""The benchmarks share the tests' throwaway PostgreSQL server (tests/postgres_server.py)."""

from tests.conftest import postgres_server, postgres_uri

__all__ = ["postgres_server", "postgres_uri"]
