"""The SQLite store, and what is SQLite's alone.

Read in this order: ``store`` (``SqliteStore``, the durable ``RunStore``), ``batch`` (the writes that store
values, one call each), ``writer`` (the connection those writes go through, on the event loop's thread),
``transaction`` (``BEGIN IMMEDIATE`` … ``COMMIT``), ``files`` (state URIs, the file, sqlite3 errors as
``StoreError``), ``migrations`` (the schema, whose names PostgreSQL's schema repeats one for one).
"""
