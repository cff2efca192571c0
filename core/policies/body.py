"""The signature composite policies use to run a nested list of steps (breaks the import cycle)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from core.context import RunContext
from core.policies.frame import Frame
from core.steps.kinds import Step

BodyRunner = Callable[[Sequence[Step], Any, RunContext, str, Frame], Awaitable[Any]]
