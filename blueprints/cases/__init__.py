"""Case files: a recorded run kept with the code as a regression test (``flujo lens export RUN --case FILE``
writes one, ``flujo test`` replays it).

Read in this order: ``case_file`` (the file: what it holds, read with file:line:col errors, written as
YAML), ``expectations`` (its ``expect:`` block: what must hold of a replayed run instead of equality).
Used through the ``blueprints`` front door.
"""
