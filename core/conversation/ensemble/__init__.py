"""Ensembles: a conversation among agents and the person, run in rounds (``kind: ensemble``).

The model (``EnsembleStep``, ``Participant``, ``Dependency``), the round rules (``EnsembleState``: who is
ready, what a round adds) and what each participant is sent (``chat``, ``envelope``, ``Speaker``). The step
policy that plays the rounds, as leaf steps of the run, is ``core.policies.ensemble``; it reaches these
through ``core.conversation``.

The round rules and views are imported on first use: ``core.steps.kinds`` imports the model (``EnsembleStep`` is
one of its step kinds) and must not pull in the rest, which imports ``core.steps.kinds``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.conversation.replies import parse_reply  # a reply read as data (the accumulated context's keys)
from core.steps.ensemble import (
    COMPLETION_REASONS,
    CompletionReason,
    Dependency,
    EnsembleStep,
    Participant,
)

if TYPE_CHECKING:
    from core.conversation.ensemble.state import EnsembleState, Turn
    from core.conversation.ensemble.view import Speaker, chat, cue, envelope

__all__ = [
    "COMPLETION_REASONS",
    "CompletionReason",
    "Dependency",
    "EnsembleState",
    "EnsembleStep",
    "Participant",
    "Speaker",
    "Turn",
    "chat",
    "cue",
    "envelope",
    "parse_reply",
]

_LATER = {
    "EnsembleState": "state",
    "Turn": "state",
    "Speaker": "view",
    "chat": "view",
    "cue": "view",
    "envelope": "view",
}


def __getattr__(name: str) -> Any:
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module 'core.conversation.ensemble' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"core.conversation.ensemble.{module}"), name)
