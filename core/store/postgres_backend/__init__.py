"""The PostgreSQL store (the ``postgres`` extra), imported only when a store URI is ``postgresql://``.

Read in this order: ``store`` (``PostgresStore``), ``encoding`` (texts and lists stored once, in one round
trip), ``errors`` (psycopg errors as ``StoreError``), ``schema`` (SQLite's migrations in PostgreSQL's SQL).
"""
