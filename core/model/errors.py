"""Errors raised by flujo, and the control-flow signals that are deliberately *not* errors.

The tree::

    FlujoError                      anything flujo reports as a problem
    ├── BlueprintError              an author's mistake in a blueprint: carries file, line, column, hint
    ├── ConfigError                 a bad setting, a missing API key, an unusable state URI
    └── RunError                    something went wrong while a run executed
        ├── StepFailed              a step failed (its result is recorded before this is raised)
        ├── ProviderError           a model provider refused, failed or could not be reached
        │   ├── ProviderUnreachable the endpoint could not be reached at all
        │   └── ReplyCutOff         a streamed reply stopped before its end, at every attempt
        ├── AgentOutputError        an agent's output did not match its output_schema
        ├── PromptTooLarge          a prompt cannot fit the agent's context window; it was not sent
        ├── TemplateError           a template or expression failed while rendering
        ├── StoreError              the run store could not be read or written
        │   └── StoreUnavailable    it cannot be reached now, or stayed locked: never a step's failure
        └── ResumeRefused           a run cannot be resumed: completed, executing elsewhere, blueprint changed

    ControlSignal (not a FlujoError: ``except FlujoError`` can never swallow one)
    ├── Pause                       a human must answer before the run can go on
    ├── Abort                       the run was stopped on purpose
    └── LimitReached                a usage limit (tokens, cost) would be or was exceeded

Signals propagate through every policy untouched; only the engine's top level turns them into an
outcome, after the safe part of the state is saved.

``StoreUnavailable`` is an error for whoever uses the store (one line, exit code 7), but for a run it is
neither a step's failure nor an outcome: the store that would record either is gone. The engine lets it
through without writing, and the run stays as its last commit left it, to be resumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.model.usage import ZERO_USAGE, Usage

if TYPE_CHECKING:
    from core.model.calls import OutputRepair


class FlujoError(Exception):
    """Root of every error flujo reports. ``hint`` says what to do about it, when we know."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class SourcePosition:
    """Where in a blueprint file something is: 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    @classmethod
    def of_byte(cls, file: str, raw: bytes, offset: int) -> SourcePosition:
        """Where byte ``offset`` of the file's bytes ``raw`` is (its column counted in characters): the place
        of the first byte that is not UTF-8, say."""
        start = raw.rfind(b"\n", 0, offset) + 1
        column = len(raw[start:offset].decode("utf-8", errors="replace")) + 1
        return cls(file, raw.count(b"\n", 0, offset) + 1, column)


class BlueprintError(FlujoError):
    """An author's mistake in a blueprint file, located to file:line:col."""

    def __init__(self, message: str, *, position: SourcePosition | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.position = position

    def __str__(self) -> str:
        where = f"{self.position}: " if self.position else ""
        return f"{where}{self.message}"


class ConfigError(FlujoError):
    """A setting is wrong or missing (an API key, a base URL, the state database location)."""


class RunError(FlujoError):
    """Something went wrong while a run executed."""


class StepFailed(RunError):
    """A step failed; ``step`` names it. Its result has been recorded before this is raised."""

    def __init__(self, message: str, *, step: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.step = step


class ProviderError(RunError):
    """A model provider answered with an error (after retries), or its answer was unusable."""

    def __init__(self, message: str, *, status: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class ProviderUnreachable(ProviderError):
    """The provider's endpoint could not be reached (connection refused, DNS, timeout on connect)."""


class ReplyCutOff(ProviderError):
    """A streamed reply stopped before its end marker (the connection closed or broke mid-reply) at the
    last of ``attempts`` attempts: ``received`` is the text that attempt had received (shown to the person
    as it came, never kept as the reply), ``reason`` why it stopped."""

    def __init__(self, message: str, *, received: str, reason: str, attempts: int = 1, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.received = received
        self.reason = reason
        self.attempts = attempts


class PromptTooLarge(RunError):
    """The system prompt and the current message of a call alone need more tokens than the agent's prompt
    budget (its context window minus the reply reserve); the call was refused before anything was sent."""

    def __init__(self, message: str, *, step: str, needed: int, budget: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.step = step
        self.needed = needed
        self.budget = budget


class AgentOutputError(RunError):
    """An agent's output did not validate against its output_schema, even after the repair retry.

    ``usage`` is what the failed call spent (every exchange, the repair included): the step records it and
    the run counts it. ``repair`` is the repair exchange, for the trace."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        usage: Usage = ZERO_USAGE,
        repair: OutputRepair | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.usage = usage
        self.repair = repair


class TemplateError(RunError):
    """A template or expression failed at run time (syntax errors are caught by the loader)."""


class StoreError(RunError):
    """The run store could not be opened, read or written (locked, corrupt, newer schema)."""


class StoreUnavailable(StoreError):
    """The run store cannot be used now: its server is down or the connection to it was lost, or another
    process kept its file locked past the wait allowed (``sqlite.busy_timeout_s``). The operation that raised
    it wrote nothing, and a store that raised it refuses the writes of runs until ``reconnect`` (so a run in
    hand can never record a failure, or anything else, for the outage); the run stays resumable from its last
    committed step (docs/durability.md)."""


class StoreGone(StoreUnavailable):
    """The run store's SQLite file was deleted or replaced while this process used it: what it would write
    from then on would go to a file nobody can open again, so it writes nothing more. Not resumable from
    that store: what the run stored is gone with the file."""


class ResumeRefused(RunError):
    """A run cannot be resumed as asked: it completed, another live process is executing it, or its
    blueprint changed since it started (``force`` overrides only the last)."""


class ReplayDiverged(RunError):
    """A replay (``flujo run --replay RUN_ID``) met a call that differs from its recording and stopped there
    (``--on-divergence stop``): ``path`` is the step path of the call (a sub-workflow's under its step's
    path), ``reason`` what differs and ``diff`` a unified diff of the recorded and the new messages or
    arguments."""

    def __init__(self, message: str, *, path: str, reason: str, diff: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path
        self.reason = reason
        self.diff = diff


class ControlSignal(Exception):
    """Base of control-flow signals. Never a FlujoError, never converted into a step failure."""


class Pause(ControlSignal):
    """A human-in-the-loop step needs an answer and none is available now. ``reason``: why nobody else
    answered it, when that is not plain (a simulated person whose answers were all refused)."""

    def __init__(self, *, step: str, path: str, message: str, reason: str | None = None) -> None:
        super().__init__(f"waiting for an answer to {step!r}: {message}")
        self.step = step
        self.path = path
        self.message = message
        self.reason = reason


class Abort(ControlSignal):
    """The run was stopped on purpose (by a step, or by the user)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ReplayStop(ControlSignal):
    """A replay diverged from its recording and stops (``--on-divergence stop``). A signal, so that no step
    absorbs it (a parallel that ignores a branch's failure, a loop that goes on after one): the engine ends
    the run as failed with ``error``."""

    def __init__(self, error: ReplayDiverged) -> None:
        super().__init__(error.message)
        self.error = error


class LimitReached(ControlSignal):
    """A usage limit would be or was exceeded; ``detail`` says which limit, the spend and the bound."""

    def __init__(self, detail: str, *, usage: Usage | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.usage = usage  # the run's usage when the limit was reached, when known
