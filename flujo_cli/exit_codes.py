"""Exit codes of the ``flujo`` command (documented in the README; scripts may rely on them)."""

from __future__ import annotations

OK = 0  # the run completed / the blueprint is valid
FAILED = 1  # the run failed at a step / validate found errors
USAGE = 2  # bad command line (unknown option, missing argument, file not found)
BLUEPRINT = 3  # the blueprint has errors (run refuses to start)
PAUSED = 4  # the run is waiting for a human answer (resume it with `flujo resume`)
LIMIT = 5  # a usage limit (tokens, cost) stopped the run
CONFIG = 6  # a setting, API key or model provider problem (missing key, unreachable server)
STORE = 7  # the run store could not be used (locked, corrupt, newer schema)
PROMPT_TOO_LARGE = 8  # a prompt cannot fit its agent's context window; it was not sent
REPLAY_DIVERGED = 9  # a replay diverged from its recording (run --replay; test: see its own codes)
INTERRUPTED = 130  # stopped with Ctrl-C
OUTPUT_CLOSED = 141  # the reader of stdout stopped reading (`| head`): stopped quietly, as on SIGPIPE

TABLE: tuple[tuple[int, str], ...] = (
    (OK, "completed (run) / valid (validate)"),
    (FAILED, "a step failed (run) / errors found (validate)"),
    (USAGE, "bad command line or missing file"),
    (BLUEPRINT, "the blueprint has errors; nothing ran"),
    (PAUSED, "paused, waiting for a human answer"),
    (LIMIT, "a usage limit stopped the run"),
    (CONFIG, "configuration, API key or provider problem"),
    (STORE, "the run store could not be used"),
    (PROMPT_TOO_LARGE, "a prompt cannot fit the agent's context window; nothing was sent"),
    (REPLAY_DIVERGED, "a replay diverged from its recording"),
    (INTERRUPTED, "interrupted with Ctrl-C"),
    (OUTPUT_CLOSED, "the reader of the output stopped reading (a pipe into head)"),
)
