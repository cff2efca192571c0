"""The row code every store shares: SQLite's and PostgreSQL's, and ``MemoryStore`` where it applies.

Read in this order: ``texts`` and ``shared_lists`` (long texts and lists stored once), ``text_cache`` (what
a store remembers of them), ``row_reads`` (records read back from rows), ``thread_rows`` and ``queue_rows``
(the SQL of threads and of the run queue), ``pruning`` (which runs ``prune_runs`` deletes), ``claims``
(which process executes a run), ``lookup`` (a run by id or prefix), ``transfer`` (``flujo store copy``).
"""
