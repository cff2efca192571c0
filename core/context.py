"""The run context: the state a run carries from step to step.

Invariants:
- A loop iteration, a parallel branch and a map item each run on ``isolate()``d copies; the copy is
  ``adopt()``ed back only when that unit of work succeeds, so a failed iteration leaves no trace in the
  parent state.
- Step outputs are treated as immutable values once produced: copies share them (copying is shallow for
  outputs and turns, deep only for the mutable scratchpad).
- ``conversation_history`` is the one conversation store; views such as ``scratchpad.history`` are derived.
- ``thread_turns`` is a record, not a second store: the turns this run added to its thread's conversation
  (``core.conversation.threads``), never bounded or summarised. It follows ``isolate``/``adopt`` like the state, but
  what was said in a unit of work that stopped part-way is kept (``keep_said``): a pause, a limit or a
  failure drops the unit's state, not what the user typed.
- ``summary`` is a view, not a store: the summary the history manager made of the oldest ``covers`` turns
  of ``conversation_history``, sent in their place to build prompts. The turns themselves stay whole.
- Reading state for templates and hooks goes through ``lazy_view()``: a snapshot whose parts are copied
  only when read, so the cost of a step does not grow with the length of the history.
- ``conversation_history``, ``hitl_history`` and ``thread_turns`` change in place only by growing at the
  end (``append``, ``extend``); any other change replaces the list. So a view remembers a list and its
  length, not a copy of it.
- So, too, an ``isolate()``d copy shares those three lists with its parent instead of copying them (a copy
  cost the whole history every iteration): the copy appends to them, ``adopt`` keeps what it appended, and
  ``keep_said`` gives the parent back the lists as they were at ``isolate()`` (the first items, copied),
  plus the thread turns said. That needs one copy at a time, the parent untouched while it works: loop
  iterations and map items, not parallel branches, which run at once on ``branch()`` copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.model.views import LazyView, copied, snapshot_of
from core.ports import ConversationScope
from core.text.turns import ConversationTurn, HitlEntry, Summary, Turns

# The keys of the context as templates, hooks and agents see it (``lazy_view``).
VIEW_KEYS = ("initial_prompt", "scratchpad", "steps", "hitl_history", "conversation_history")


@dataclass
class RunContext:
    """Mutable state of one run (or of one isolated iteration/branch of it)."""

    initial_prompt: Any = None
    scratchpad: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, Any] = field(default_factory=dict)
    hitl_history: list[HitlEntry] = field(default_factory=list)
    conversation_history: list[ConversationTurn] = field(default_factory=list)
    thread_turns: list[ConversationTurn] = field(default_factory=list)
    # The summarize strategy's view of the oldest turns (rebuilt from the journal on resume, never stored).
    summary: Summary | None = None
    # The innermost ``conversation: true`` loop this context runs in (not state: never stored).
    conversation: ConversationScope | None = field(default=None, compare=False, repr=False)
    # On an ``isolate()``d copy until it is adopted: the parent's lists it shares, with their lengths then.
    shared: _Shared | None = field(default=None, compare=False, repr=False)

    def isolate(self) -> RunContext:
        """A copy to work on; changes reach this context only through ``adopt``. One at a time: until the copy
        is adopted or given to ``keep_said``, this context must neither change nor be isolated again (the
        copy appends to the history lists they share; see the module's invariants)."""
        hitl, turns, said = self.hitl_history, self.conversation_history, self.thread_turns
        copy = RunContext(
            self.initial_prompt, copied(self.scratchpad), dict(self.steps), hitl, turns, said, self.summary,
            self.conversation,
        )  # fmt: skip
        copy.shared = _Shared(hitl, len(hitl), turns, len(turns), said, len(said))
        return copy

    def branch(self) -> RunContext:
        """A copy to work on alongside other copies of this context (a parallel's branches): it shares no
        list with this context, so copies may run at once; changes come back only as ``adopt`` or the
        branch merge takes them."""
        return RunContext(
            initial_prompt=self.initial_prompt,
            scratchpad=copied(self.scratchpad),
            steps=dict(self.steps),
            hitl_history=list(self.hitl_history),
            conversation_history=list(self.conversation_history),
            thread_turns=list(self.thread_turns),
            summary=self.summary,
            conversation=self.conversation,
        )

    def adopt(self, other: RunContext) -> None:
        """Take over the state of an isolated copy that finished successfully."""
        other.shared = None  # what it appended to the lists it shared is this context's now
        self.initial_prompt = other.initial_prompt
        self.scratchpad = other.scratchpad
        self.steps = other.steps
        self.hitl_history = other.hitl_history
        self.conversation_history = other.conversation_history
        self.thread_turns = other.thread_turns
        self.summary = other.summary
        self.conversation = other.conversation

    def keep_said(self, stopped: Sequence[RunContext]) -> None:
        """Keep the thread turns said in isolated copies that stopped part-way (paused, failed, stopped by a
        limit) and will not be adopted: those each copy added, in the order given. The lists an
        ``isolate()``d copy shared with this context are first given back as they were then."""
        for other in stopped:
            shared, other.shared = other.shared, None
            if shared is not None:
                shared.give_back(self)
        known = len(self.thread_turns)
        self.thread_turns = [*self.thread_turns, *(turn for other in stopped for turn in other.thread_turns[known:])]

    def lazy_view(self) -> LazyView:
        """A read-only snapshot for templates, expressions, hooks and agents; parts are copied when read.

        What reads it can neither change the run's state behind the journal's back (an agent mutating
        ``context``) nor capture live state (``{{ steps }}`` as a step's output would otherwise contain
        itself once recorded). Making it costs a copy of the scratchpad; the lists are remembered with their
        length (they only grow in place), so it costs the same at any length of the history.
        """
        initial, scratchpad = self.initial_prompt, copied(self.scratchpad)
        steps = snapshot_of(self.steps)
        hitl, turns = self.hitl_history, self.conversation_history
        hitl_end, turns_end = len(hitl), len(turns)

        def compute(key: str) -> Any:
            if key == "initial_prompt":
                return copied(initial)
            if key == "scratchpad":
                return _scratchpad_view(scratchpad, turns, turns_end)
            if key == "steps":
                return steps
            if key == "hitl_history":
                return [entry.to_dict() for entry in hitl[:hitl_end]]
            return [turn.to_dict() for turn in turns[:turns_end]]

        return LazyView(VIEW_KEYS, compute)

    def view(self) -> dict[str, Any]:
        """The same as ``lazy_view()``, as plain data (a deep copy)."""
        return self.lazy_view().materialize()

    def to_dict(self) -> dict[str, Any]:
        return self.view()

    @property
    def agent_command(self) -> Any:
        """The last agent reply carrying an ``action`` in this unit of work (``stop_when: agent_finished``
        reads it), None when there is none; setting None removes it.

        It is kept in the scratchpad as ``last_agent_command`` (``AGENT_COMMAND_KEY``), not in a field of its
        own: users read it there (``context.scratchpad.last_agent_command.action == 'finish'`` is the
        documented form of ``stop_when``) and may write it (``sink_to``, ``updates_context``), and it is
        copied, adopted and merged with the scratchpad. So it lives as the scratchpad does: an iteration
        starts without one and a loop gives its enclosing iteration's back when it ends
        (``core.policies.loop``); a parallel branch works on its own copy, merged as any scratchpad key; a
        sub-workflow neither inherits nor gives back its own (``core.policies.child_context``); on resume,
        replaying the journal's outputs sets it again. Any value a user wrote is returned as written."""
        return self.scratchpad.get(AGENT_COMMAND_KEY)

    @agent_command.setter
    def agent_command(self, command: Any) -> None:
        if command is None:
            self.scratchpad.pop(AGENT_COMMAND_KEY, None)
        else:
            self.scratchpad[AGENT_COMMAND_KEY] = command


# The scratchpad key of ``RunContext.agent_command``, as users read and write it.
AGENT_COMMAND_KEY = "last_agent_command"


@dataclass(frozen=True, slots=True)
class _Shared:
    """The history lists an ``isolate()``d copy shares with its parent, each with its length at ``isolate()``."""

    hitl: list[HitlEntry]
    hitl_end: int
    turns: list[ConversationTurn]
    turns_end: int
    said: list[ConversationTurn]
    said_end: int

    def give_back(self, parent: RunContext) -> None:
        """Make ``parent``'s lists what they were at ``isolate()``: where the copy appended to a list the
        parent still holds, the parent gets a new list of its first items. (Cut in place instead, the list
        would change under what remembers it with a longer length: views the copy made.)"""
        if parent.hitl_history is self.hitl and len(self.hitl) != self.hitl_end:
            parent.hitl_history = self.hitl[: self.hitl_end]
        if parent.conversation_history is self.turns and len(self.turns) != self.turns_end:
            kept = self.turns[: self.turns_end]
            parent.conversation_history = Turns(kept) if isinstance(self.turns, Turns) else kept
        if parent.thread_turns is self.said and len(self.said) != self.said_end:
            parent.thread_turns = self.said[: self.said_end]


def _scratchpad_view(scratchpad: dict[str, Any], turns: list[ConversationTurn], end: int) -> Any:
    """The scratchpad as read through a view: with a conversation (the first ``end`` of ``turns``),
    ``history`` is the derived list of ``User: ...`` / ``Assistant: ...`` lines (unless the scratchpad has
    its own), made only if something reads ``history`` itself (``stop_when: agent_finished`` reads
    ``last_agent_command`` on every iteration and must not pay for every turn)."""
    if not end or "history" in scratchpad:
        return scratchpad

    def entry(key: str) -> Any:
        return [turn.line for turn in turns[:end]] if key == "history" else scratchpad[key]

    return LazyView((*scratchpad, "history"), entry)
