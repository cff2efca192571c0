"""A function mapped over the sliding windows of a conversation (core.model.window_map): always the plain map, and
paid for the items that are new since a remembered window, not for the window (the prompts of a long
conversation, their chat messages and their masked dicts)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from core import ChatMessage
from core.answering.simulated_person import flipped
from core.conversation.history import as_messages
from core.model.window_map import WindowMap, overlap
from core.text.redaction import MASK, Redactor
from core.text.turns import ConversationTurn, Turns


@dataclass(frozen=True, eq=False)
class Item:
    """An item compared by identity only, as message objects of different prompts may be."""

    name: str


_POOL = [Item(str(n)) for n in range(40)]
_EQUALS = [Item("same") for _ in range(4)]  # equal names, different objects: never taken for each other


def _window() -> st.SearchStrategy[list[Item]]:
    """A window as prompts make them: a run of the pool (slid, grown), maybe with a fixed first item and a
    fresh last one, or anything at all."""
    run = st.tuples(st.integers(0, 39), st.integers(0, 40)).map(lambda r: _POOL[r[0] : r[0] + r[1]])
    framed = st.tuples(run, st.booleans(), st.booleans()).map(
        lambda w: ([_POOL[0]] if w[1] else []) + w[0] + ([Item("current")] if w[2] else [])
    )
    anything = st.lists(st.sampled_from(_POOL + _EQUALS), max_size=30)
    return st.one_of(framed, anything)


@settings(max_examples=400, deadline=None)
@given(st.lists(_window(), min_size=1, max_size=12))
def test_the_result_is_the_plain_map_whatever_the_windows(windows: list[list[Item]]) -> None:
    def function(item: Item) -> tuple[str, int]:
        return (item.name, id(item))

    mapped: WindowMap[Item, tuple[str, int]] = WindowMap()
    for window in windows:
        assert mapped.map(window, function) == [(item.name, id(item)) for item in window]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_POOL + _EQUALS), max_size=30), st.lists(st.sampled_from(_POOL + _EQUALS), max_size=30))
def test_overlap_says_only_what_is_true(known: list[Item], items: list[Item]) -> None:
    start, drop, run = overlap(known, items)
    assert items[:start] == known[:start]
    assert items[start : start + run] == known[start + drop : start + drop + run]
    assert start + run <= len(items)


class Naming:
    """The function mapped: an item's name, noting the items it is called for."""

    def __init__(self) -> None:
        self.calls: list[Item] = []

    def __call__(self, item: Item) -> str:
        self.calls.append(item)
        return item.name


def test_a_slid_window_maps_only_its_new_items() -> None:
    function = Naming()
    mapped: WindowMap[Item, str] = WindowMap()
    system = Item("system")
    sent = mapped.map([system, *_POOL[0:30], Item("current 1")], function)
    assert sent == ["system", *map(str, range(30)), "current 1"]
    function.calls.clear()
    sent = mapped.map([system, *_POOL[2:32], Item("current 2")], function)
    assert sent == ["system", *map(str, range(2, 32)), "current 2"]
    assert [item.name for item in function.calls] == ["30", "31", "current 2"]  # the two new turns, the message
    function.calls.clear()
    sent = mapped.map([system, *_POOL[2:34], Item("current 3")], function)
    assert sent == ["system", *map(str, range(2, 34)), "current 3"]
    assert [item.name for item in function.calls] == ["32", "33", "current 3"]  # grown at its end


def test_each_agent_s_prompts_are_remembered_apart() -> None:
    """Prompts of two agents (their system prompts first) alternate: each is found from its own last one."""
    function = Naming()
    mapped: WindowMap[Item, str] = WindowMap()
    first, second = Item("first agent"), Item("second agent")
    mapped.map([first, *_POOL[0:20]], function)
    mapped.map([second, *_POOL[0:20]], function)
    function.calls.clear()
    mapped.map([first, *_POOL[0:22]], function)
    mapped.map([second, *_POOL[0:22]], function)
    assert [item.name for item in function.calls] == ["20", "21", "20", "21"]


class Reading(ConversationTurn):
    """A turn that notes each read of its chat message."""

    reads: list[str] = []  # noqa: RUF012 (one log for the test, cleared by it)

    @property
    def message(self) -> ChatMessage:
        Reading.reads.append(self.content)
        return ChatMessage(self.role, self.content)


def test_a_prompt_reads_the_messages_of_its_new_turns_only() -> None:
    turns = Turns(Reading("user" if n % 2 else "assistant", f"turn {n}") for n in range(100))
    as_messages(turns[0:90], turns)
    Reading.reads.clear()
    sent = as_messages(turns[2:92], turns)
    assert Reading.reads == ["turn 90", "turn 91"]
    assert sent == tuple(ChatMessage(turn.role, turn.content) for turn in turns[2:92])
    Reading.reads.clear()
    assert as_messages(turns[4:94]) == tuple(ChatMessage(turn.role, turn.content) for turn in turns[4:94])
    assert len(Reading.reads) == 90  # from a plain list: every turn


def test_what_a_conversation_sent_lives_as_long_as_the_conversation() -> None:
    """The messages remembered for a conversation's prompts are its history list's (``Turns.sent``): once
    the run drops the list, its turns are freed, not kept by a cache of the process (a worker runs many)."""
    turns = Turns(ConversationTurn("user" if n % 2 else "assistant", f"turn {n}") for n in range(50))
    as_messages(turns[10:50], turns)
    oldest = weakref.ref(turns[10])
    del turns
    assert oldest() is None  # freed at once: no cycle either


def test_a_redactor_is_freed_without_waiting_for_the_cycle_collector() -> None:
    redactor = Redactor()
    redactor.messages([ChatMessage("system", "You help."), ChatMessage("user", "hi")])
    gone = weakref.ref(redactor)
    del redactor
    assert gone() is None


class Masking(Redactor):
    """A redactor that notes each message it masks."""

    def __init__(self, **options: list[str]) -> None:
        self.masked: list[str] = []
        super().__init__(**options)

    def _message(self, message: ChatMessage) -> dict[str, str]:  # type: ignore[override]
        self.masked.append(message.content)
        return super()._message(message)


def test_tracing_a_slid_prompt_masks_its_new_messages_only() -> None:
    redactor = Masking(secret_values=["hunter2-secret"])
    system = ChatMessage("system", "You help.")
    history = [ChatMessage("user" if n % 2 else "assistant", f"turn {n}") for n in range(100)]
    history[95] = ChatMessage("user", "my password is hunter2-secret")
    redactor.messages([system, *history[0:90], ChatMessage("user", "now")])
    redactor.masked.clear()
    masked = redactor.messages([system, *history[4:96], ChatMessage("user", "and now")])
    assert redactor.masked == [f"turn {n}" for n in range(90, 95)] + ["my password is hunter2-secret", "and now"]
    assert masked[0] == {"role": "system", "content": "You help."}
    assert [m["content"] for m in masked[1:-2]] == [f"turn {n}" for n in range(4, 95)]
    assert masked[-2] == {"role": "user", "content": f"my password is {MASK}"}
    assert masked[-1] == {"role": "user", "content": "and now"}


_TEXTS = ["hello", "my password is hunter2x", "token=abcdefgh123", "sk-" + "a" * 20, "shh-secret-value", "Hello", ""]
_message = st.builds(ChatMessage, st.sampled_from(["system", "user", "assistant"]), st.sampled_from(_TEXTS))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_message, min_size=1, max_size=25),
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 30), st.lists(_message, max_size=3), st.booleans()),
        min_size=1,
        max_size=10,
    ),
)
def test_tracing_prompts_masks_each_message_as_masking_it_alone_does(
    base: list[ChatMessage], calls: list[tuple[int, int, list[ChatMessage], bool]]
) -> None:
    """Whatever windows the prompts send (slid, grown, cut, of equal but distinct message objects), each
    message is masked as a fresh redactor masks its texts: no masked dict is taken from another text."""
    redactor, fresh = Redactor(secret_values=["shh-secret-value"]), Redactor(secret_values=["shh-secret-value"])
    history = list(base)
    system = ChatMessage("system", "You help.")
    for start, length, added, remade in calls:
        history += added
        window = history[start : start + length]
        if remade:
            window = [ChatMessage(message.role, message.content) for message in window]
        sent = [system, *window, ChatMessage("user", "now")]
        assert redactor.messages(sent) == [{"role": fresh.text(m.role), "content": fresh.text(m.content)} for m in sent]


def test_a_simulated_person_hears_each_turn_as_the_same_message_every_question() -> None:
    """What a simulated person is sent is made once per turn (``ConversationTurn.heard``), so tracing its
    next question masks the new turns only, as an agent step's (it made and masked every turn again)."""
    turns = [ConversationTurn("user" if n % 2 else "assistant", f"turn {n}") for n in range(40)]
    first, second = flipped(turns[:30]), flipped(turns[:32])
    assert first[0] == ChatMessage("user", "turn 0") and first[1] == ChatMessage("assistant", "turn 1")
    assert all(earlier is later for earlier, later in zip(first, second[:30], strict=True))
    redactor, persona = Masking(), ChatMessage("system", "You are a guest.")  # an agent's: the same object
    redactor.messages([persona, *first, ChatMessage("user", "How many?")])
    redactor.masked.clear()
    redactor.messages([persona, *second, ChatMessage("user", "When?")])
    assert redactor.masked == ["turn 30", "turn 31", "When?"]
