"""The conversation: turns, the history's bounds, the current message, injection, summaries, threads, ensembles.

This is the package's interface; the step policies (``core.policies``) import only these names, never the
modules behind them, and nothing here imports the policies (``tests/test_layering.py``; docs/architecture.md).
A conversational step goes through it in this order:

- a ``conversation: true`` loop holds its own history while it runs: ``enter_loop`` (then
  ``LoopConversation.begin`` before each iteration's body, ``LoopConversation.leave`` when it ends);
- before an agent call, ``prepare`` says what the agent is sent: the bounded (perhaps summarised) history
  and the current message (``Injection``); a replayed step calls ``replay_summary`` instead;
- after a step, ``capture`` adds the turn its result makes, if it makes one (``makes_turn`` says whether
  it will, so a step renders its ``turn_text`` only then; ``shown_text`` is a structured reply's text);
- a parallel's branches: ``branch_records`` before merging their state, ``BranchRecords.restore`` after.

Threads (``bind_thread``, ``check_thread``, ``ThreadBinding``) continue a conversation across runs; an
ensemble (``EnsembleStep`` and its round rules) is a conversation among participants, played by the step
policy ``core.policies.ensemble``.

The names are imported on first use (PEP 562): ``core.steps`` imports the ensemble's model, and the modules
here import ``core.steps``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.conversation.branches import BranchRecords, branch_records
    from core.conversation.current_message import default_question, is_context, message_for, newest_message
    from core.conversation.ensemble import (
        COMPLETION_REASONS,
        CompletionReason,
        Dependency,
        EnsembleState,
        EnsembleStep,
        Participant,
        Speaker,
        Turn,
        chat,
        cue,
        envelope,
    )
    from core.conversation.history import bound
    from core.conversation.injection import Injection, prepare
    from core.conversation.loop_scope import LoopConversation, enter_loop
    from core.conversation.replies import parse_reply, shown_text
    from core.conversation.run_frame import RunFrame
    from core.conversation.summary import replay_summary
    from core.conversation.threads import ThreadBinding, check_thread, check_thread_name
    from core.conversation.threads import bind as bind_thread
    from core.conversation.turns import ActiveConversation, capture, makes_turn, turn_text

# name → (module, attribute)
_WHERE = {
    "ActiveConversation": ("turns", "ActiveConversation"),
    "BranchRecords": ("branches", "BranchRecords"),
    "COMPLETION_REASONS": ("ensemble", "COMPLETION_REASONS"),
    "CompletionReason": ("ensemble", "CompletionReason"),
    "Dependency": ("ensemble", "Dependency"),
    "EnsembleState": ("ensemble", "EnsembleState"),
    "EnsembleStep": ("ensemble", "EnsembleStep"),
    "Injection": ("injection", "Injection"),
    "LoopConversation": ("loop_scope", "LoopConversation"),
    "Participant": ("ensemble", "Participant"),
    "RunFrame": ("run_frame", "RunFrame"),
    "Speaker": ("ensemble", "Speaker"),
    "ThreadBinding": ("threads", "ThreadBinding"),
    "Turn": ("ensemble", "Turn"),
    "bind_thread": ("threads", "bind"),
    "bound": ("history", "bound"),
    "branch_records": ("branches", "branch_records"),
    "capture": ("turns", "capture"),
    "chat": ("ensemble", "chat"),
    "check_thread": ("threads", "check_thread"),
    "check_thread_name": ("threads", "check_thread_name"),
    "cue": ("ensemble", "cue"),
    "default_question": ("current_message", "default_question"),
    "enter_loop": ("loop_scope", "enter_loop"),
    "envelope": ("ensemble", "envelope"),
    "is_context": ("current_message", "is_context"),
    "message_for": ("current_message", "message_for"),
    "makes_turn": ("turns", "makes_turn"),
    "newest_message": ("current_message", "newest_message"),
    "parse_reply": ("replies", "parse_reply"),
    "prepare": ("injection", "prepare"),
    "replay_summary": ("summary", "replay_summary"),
    "shown_text": ("replies", "shown_text"),
    "turn_text": ("turns", "turn_text"),
}

__all__ = [
    "COMPLETION_REASONS",
    "ActiveConversation",
    "BranchRecords",
    "CompletionReason",
    "Dependency",
    "EnsembleState",
    "EnsembleStep",
    "Injection",
    "LoopConversation",
    "Participant",
    "RunFrame",
    "Speaker",
    "ThreadBinding",
    "Turn",
    "bind_thread",
    "bound",
    "branch_records",
    "capture",
    "chat",
    "check_thread",
    "check_thread_name",
    "cue",
    "default_question",
    "enter_loop",
    "envelope",
    "is_context",
    "makes_turn",
    "message_for",
    "newest_message",
    "parse_reply",
    "prepare",
    "replay_summary",
    "shown_text",
    "turn_text",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'core.conversation' has no attribute {name!r}")
    module, attribute = where
    value = getattr(importlib.import_module(f"core.conversation.{module}"), attribute)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
