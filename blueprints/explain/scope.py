"""Where a step runs, for ``flujo explain``: how often at most, inside which loops, maps and branches.

A ``Scope`` is passed down the step tree. ``times`` multiplies the ``max_loops`` of the enclosing loops;
a map multiplies by its number of items, which only the run knows, so its name is kept in ``per_item``
instead. ``Tally`` collects what the walk finds across the whole tree: where the human is asked and
which steps call agents (for the cost section).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from blueprints.checking.loader import Blueprint
from blueprints.schema import LoopStepModel


@dataclass(frozen=True)
class Scope:
    """The place of a list of steps in the blueprint."""

    blueprint: Blueprint
    times: int = 1
    loops: tuple[str, ...] = ()
    per_item: tuple[str, ...] = ()
    when: tuple[str, ...] = ()
    conversation: LoopStepModel | None = None
    prefix: str = ""  # "review › " inside the sub-workflow run by step review

    def in_loop(self, loop: LoopStepModel, max_loops: int) -> Scope:
        conversation = loop if loop.loop.conversation else self.conversation
        return replace(self, times=self.times * max_loops, loops=(*self.loops, loop.name), conversation=conversation)

    def in_map(self, name: str) -> Scope:
        return replace(self, per_item=(*self.per_item, name))

    def in_branch(self, condition: str) -> Scope:
        return replace(self, when=(*self.when, condition))

    def in_import(self, blueprint: Blueprint, step: str) -> Scope:
        # a sub-workflow never sees the parent's conversation
        return replace(self, blueprint=blueprint, conversation=None, prefix=f"{self.prefix}{step} › ")

    @property
    def conversation_label(self) -> str | None:
        """The innermost conversation, named as the cost section names it."""
        return None if self.conversation is None else f"{self.prefix}{self.conversation.name}"

    @property
    def often(self) -> str:
        """``once``, ``up to 5 times (in loop interview)``, ``once per item of find_shelves`` ..."""
        words = "once" if self.times == 1 else f"up to {self.times} times"
        if self.loops:
            words += f" (in loop {' › '.join(self.loops)})"
        for name in reversed(self.per_item):
            words += f" per item of {name}"
        if self.when:
            words += ", only " + " and ".join(self.when)
        return words


@dataclass(frozen=True)
class Call:
    """A step that calls an agent: how often at most, and what the call may cost."""

    label: str
    agent: str
    model: str | None  # provider:model for a real model; None for offline and script agents
    times: int
    per_item: tuple[str, ...]
    structured: bool  # has an output_schema: an invalid reply costs one repair request
    conversation: str | None = None  # the conversation whose history it is sent (may be summarized first)
    turns: int = 1  # model calls per run of the step: a tool loop's max_tool_calls + 1 (the last answers)

    @property
    def calls(self) -> int:
        """The most model calls of this step in a run (of one item, for a step in a map)."""
        return self.times * self.turns


@dataclass
class Tally:
    """What the walk found across the tree."""

    human: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    summarizer_calls: list[Call] = field(default_factory=list)
