"""Ensembles: a conversation among agents and the person, run in rounds (``kind: ensemble``).

The model (``EnsembleStep``, ``Participant``, ``Dependency``) and the pure round rules (``EnsembleState``)
are imported at once; the policy that runs a step (``run_ensemble``) on first use, because it needs the
step policies, which need ``core.steps``, which holds ``EnsembleStep`` in its union of step kinds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.ensemble.model import COMPLETION_REASONS, CompletionReason, Dependency, EnsembleStep, Participant

if TYPE_CHECKING:
    from core.ensemble.policy import run_ensemble
    from core.ensemble.state import EnsembleState, parse_reply

__all__ = [
    "COMPLETION_REASONS",
    "CompletionReason",
    "Dependency",
    "EnsembleState",
    "EnsembleStep",
    "Participant",
    "parse_reply",
    "run_ensemble",
]


def __getattr__(name: str) -> Any:
    if name == "run_ensemble":
        from core.ensemble.policy import run_ensemble

        return run_ensemble
    if name in ("EnsembleState", "parse_reply"):
        from core.ensemble import state

        return getattr(state, name)
    raise AttributeError(f"module 'core.ensemble' has no attribute {name!r}")
