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
ensemble (a ``core.steps.kinds.EnsembleStep``; its round rules ``EnsembleState`` and what each participant is
sent, ``chat`` and ``envelope``) is a conversation among participants, played by the step policy
``core.policies.ensemble``.

The names are imported on first use (PEP 562), so a run loads only the parts of the conversation its steps use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.front_door import lazy_exports

if TYPE_CHECKING:
    from core.conversation.branches import BranchRecords, branch_records
    from core.conversation.current_message import default_question, is_context, message_for, newest_message
    from core.conversation.ensemble.speaker import Speaker
    from core.conversation.ensemble.state import EnsembleState, Turn
    from core.conversation.ensemble.view import chat, cue, envelope
    from core.conversation.history import bound
    from core.conversation.injection import Injection, prepare, replayed_call
    from core.conversation.loop_scope import LoopConversation, enter_loop
    from core.conversation.replies import parse_reply, shown_text
    from core.conversation.run_frame import RunFrame
    from core.conversation.summary import replay_summary
    from core.conversation.threads import ThreadBinding, check_thread, check_thread_name, fork_thread
    from core.conversation.threads import bind as bind_thread
    from core.conversation.turns import ActiveConversation, active_in, capture, makes_turn
    from core.text.turns import turn_text

_WHERE = {
    "ActiveConversation": "core.conversation.turns",
    "active_in": "core.conversation.turns",
    "BranchRecords": "core.conversation.branches",
    "EnsembleState": "core.conversation.ensemble.state",
    "Injection": "core.conversation.injection",
    "LoopConversation": "core.conversation.loop_scope",
    "RunFrame": "core.conversation.run_frame",
    "Speaker": "core.conversation.ensemble.speaker",
    "ThreadBinding": "core.conversation.threads",
    "Turn": "core.conversation.ensemble.state",
    "bind_thread": "core.conversation.threads:bind",
    "bound": "core.conversation.history",
    "branch_records": "core.conversation.branches",
    "capture": "core.conversation.turns",
    "chat": "core.conversation.ensemble.view",
    "check_thread": "core.conversation.threads",
    "check_thread_name": "core.conversation.threads",
    "cue": "core.conversation.ensemble.view",
    "default_question": "core.conversation.current_message",
    "enter_loop": "core.conversation.loop_scope",
    "fork_thread": "core.conversation.threads",
    "envelope": "core.conversation.ensemble.view",
    "is_context": "core.conversation.current_message",
    "message_for": "core.conversation.current_message",
    "makes_turn": "core.conversation.turns",
    "newest_message": "core.conversation.current_message",
    "parse_reply": "core.conversation.replies",
    "prepare": "core.conversation.injection",
    "replayed_call": "core.conversation.injection",
    "replay_summary": "core.conversation.summary",
    "shown_text": "core.conversation.replies",
    "turn_text": "core.text.turns",
}

__all__ = [
    "ActiveConversation",
    "BranchRecords",
    "EnsembleState",
    "Injection",
    "LoopConversation",
    "RunFrame",
    "Speaker",
    "ThreadBinding",
    "Turn",
    "active_in",
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
    "fork_thread",
    "is_context",
    "makes_turn",
    "message_for",
    "newest_message",
    "parse_reply",
    "prepare",
    "replay_summary",
    "replayed_call",
    "shown_text",
    "turn_text",
]

__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())
