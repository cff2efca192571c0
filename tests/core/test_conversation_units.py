"""Units of ``core.conversation`` (``history``, ``turns``): bounding in assistant→user units, the summary
cut, history blocks, which steps make turns (``start``), seeding, turn text, and counting each turn's tokens once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from blueprints import load_pipeline
from core import (
    AgentStep,
    ConditionalStep,
    Conversation,
    Engine,
    Expression,
    HitlStep,
    LazyView,
    LoopStep,
    MapStep,
    ParallelStep,
    RunContext,
    Settings,
    Step,
    Template,
    load_settings,
)
from core.agents import PassthroughAgent, PythonAgent, ScriptedAgent
from core.conversation.history import (
    HISTORY_CLOSE,
    HISTORY_OPEN,
    bound,
    history_block,
    needs_summary,
    summary_cut,
    turn_cost,
)
from core.conversation.loop_scope import seed
from core.conversation.turns import capture, start
from core.model.calls import Role
from core.store import MemoryStore
from core.testing import ScriptedHuman
from core.text import tokens
from core.text.tokens import MESSAGE_OVERHEAD, count_tokens
from core.text.turns import ConversationTurn, turn_text


def turns(spec: str, *, tokens: int | None = None) -> list[ConversationTurn]:
    """Turns from a compact spec: ``"u a u"`` is user, assistant, user; contents are ``u0``, ``a1``, ``u2``."""
    roles: dict[str, Role] = {"u": "user", "a": "assistant"}
    return [ConversationTurn(roles[r], f"{r}{i}", tokens) for i, r in enumerate(spec.split())]


def contents(kept: Sequence[ConversationTurn]) -> list[str]:
    return [turn.content for turn in kept]


def model(name: str) -> AgentStep:
    return AgentStep(name=name, agent=ScriptedAgent(["ok"], name=name))


def script(name: str) -> AgentStep:
    return AgentStep(name=name, agent=PythonAgent(lambda data: data, name=name))


def hitl(name: str) -> HitlStep:
    return HitlStep(name=name, message=Template("?"))


def loop(*body: Step, settings: Conversation | None = None, name: str = "chat") -> LoopStep:
    return LoopStep(name=name, body=body, conversation=settings or Conversation())


# --- bound ---------------------------------------------------------------------------------------------


def test_bound_keeps_the_most_recent_turns_within_max_turns() -> None:
    history = turns("u u u u u")
    assert contents(bound(history, max_turns=2)) == ["u3", "u4"]
    assert contents(bound(history, max_turns=10)) == contents(history)
    assert bound(history) == history  # no bound: everything


def test_bound_never_splits_an_assistant_turn_from_the_user_turn_answering_it() -> None:
    history = turns("u a u a u")  # units, newest first: (a3 u4) (a1 u2) (u0)
    # Three turns would fit, but the third is half of the (a1 u2) unit: both are dropped together.
    assert contents(bound(history, max_turns=3)) == ["a3", "u4"]
    assert contents(bound(history, max_turns=4)) == ["a1", "u2", "a3", "u4"]
    assert contents(bound(history, max_turns=1)) == []  # the newest unit alone is too big
    # A user turn after a user turn, or an assistant turn after an assistant turn, is a unit of its own.
    assert contents(bound(turns("a a u u"), max_turns=2)) == ["u3"]  # then (a1 u2), then (a0)
    assert contents(bound(turns("a a u u"), max_turns=3)) == ["a1", "u2", "u3"]
    assert contents(bound(turns("u a a u"), max_turns=3)) == ["a1", "a2", "u3"]  # (a2 u3), (a1), (u0)


def overhead() -> int:
    """What a turn costs beyond its content's tokens (role and message separators)."""
    return turn_cost(ConversationTurn("user", "", 0))


def test_a_turn_costs_its_stored_tokens_plus_a_fixed_message_overhead() -> None:
    assert overhead() >= MESSAGE_OVERHEAD
    # The stored count is used as it is (the content is not counted again).
    assert turn_cost(ConversationTurn("assistant", "a long reply " * 50, 7)) == 7 + overhead()
    assert turn_cost(ConversationTurn("user", "x", 0)) == overhead()
    unstored = ConversationTurn("user", "Plan a family trip to the mountains in June")
    assert turn_cost(unstored) == count_tokens(unstored.content) + overhead()


def test_bound_costs_each_turn_its_tokens_plus_the_message_overhead() -> None:
    history = turns("u u u", tokens=7)
    cost = 7 + overhead()
    assert contents(bound(history, max_tokens=2 * cost)) == ["u1", "u2"]  # exactly at the limit: kept
    assert contents(bound(history, max_tokens=2 * cost - 1)) == ["u2"]
    assert contents(bound(history, max_tokens=cost - 1)) == []
    pair = turns("u a u", tokens=7)
    assert contents(bound(pair, max_tokens=2 * cost - 1)) == []  # (a1 u2) costs 2 * cost as one unit


def test_bound_counts_turns_without_a_stored_count_from_their_content() -> None:
    short, long = ConversationTurn("user", "Yes."), ConversationTurn("user", "A much longer answer " * 20)
    assert contents(bound([long, short], max_tokens=turn_cost(short))) == ["Yes."]
    assert bound([short, long], max_tokens=turn_cost(long) - 1) == []


def test_bound_stops_at_the_first_unit_that_does_not_fit() -> None:
    history = [
        ConversationTurn("user", "old", 1),
        ConversationTurn("user", "huge", 500),
        ConversationTurn("user", "new", 1),
    ]
    # "old" alone would still fit, but keeping it would leave a hole where "huge" was.
    assert contents(bound(history, max_tokens=2 * (1 + overhead()))) == ["new"]


def test_bound_applies_both_limits() -> None:
    history = turns("u u u u", tokens=1)
    assert contents(bound(history, max_tokens=100, max_turns=1)) == ["u3"]
    assert contents(bound(history, max_tokens=2 * (1 + overhead()), max_turns=3)) == ["u2", "u3"]


def test_bound_end_leaves_out_the_newest_turns() -> None:
    history = turns("u a u a u")
    assert contents(bound(history, end=4)) == ["u0", "a1", "u2", "a3"]
    # Within turns[:4] the newest turn is a3 (its answer u4 is beyond end): a unit of its own.
    assert contents(bound(history, end=4, max_turns=1)) == ["a3"]
    assert contents(bound(history, end=4, max_turns=2)) == ["a3"]
    assert contents(bound(history, end=4, max_turns=3)) == ["a1", "u2", "a3"]
    assert bound(history, end=0) == []


# --- summary_cut / needs_summary -----------------------------------------------------------------------


def test_summary_cut_is_nothing_for_fewer_than_three_turns() -> None:
    assert summary_cut([], 0.5) == 0
    assert summary_cut(turns("u"), 0.5) == 0
    assert summary_cut(turns("u a"), 0.9) == 0


def test_summary_cut_takes_the_ratio_of_the_oldest_turns() -> None:
    assert summary_cut(turns("u u u u u u u u u u"), 0.5) == 5
    assert summary_cut(turns("u u u u u u u u u u"), 0.3) == 3


def test_summary_cut_is_at_least_two_and_at_most_all_but_one() -> None:
    assert summary_cut(turns("u u u u u u u u u u"), 0.01) == 2
    assert summary_cut(turns("u u u u"), 0.99) == 3
    assert summary_cut(turns("u u u u"), 1.0) == 3


def test_summary_cut_moves_past_an_assistant_to_user_pair() -> None:
    history = turns("u a u a u a u a u a")
    # 0.4 * 10 = 4 would cut between a3 and its answer u4: the cut moves to 5.
    assert summary_cut(history, 0.4) == 5
    assert summary_cut(history, 0.5) == 5  # already between a pair's answer (u4) and the next question
    # Moving forward would leave nothing to keep: no cut at all.
    assert summary_cut(turns("u a u"), 0.5) == 0


def test_needs_summary_when_over_turns_or_tokens() -> None:
    history = turns("u a u a", tokens=10)
    assert not needs_summary(history, max_tokens=None, max_turns=None)
    assert needs_summary(history, max_tokens=None, max_turns=3)
    assert not needs_summary(history, max_tokens=None, max_turns=4)
    assert not needs_summary(history, max_tokens=4 * (10 + overhead()), max_turns=None)
    assert needs_summary(history, max_tokens=4 * (10 + overhead()) - 1, max_turns=None)


# --- history blocks ------------------------------------------------------------------------------------


def test_default_history_block_is_delimited_role_content_lines() -> None:
    history = [ConversationTurn("user", "Plan a trip"), ConversationTurn("assistant", "Who is it for?")]
    assert history_block(history, None) == (
        f"{HISTORY_OPEN}\nuser: Plan a trip\nassistant: Who is it for?\n{HISTORY_CLOSE}"
    )
    assert (HISTORY_OPEN, HISTORY_CLOSE) == ("<conversation_history>", "</conversation_history>")


def test_history_block_with_a_handlebars_template() -> None:
    template = Template("{{#each history}}\n{{ this.role }}: {{ this.content }}\n{{/each}}\n")
    history = [ConversationTurn("user", "Plan a trip", 3), ConversationTurn("assistant", "Who?", 1)]
    assert history_block(history, template) == "user: Plan a trip\nassistant: Who?"  # no trailing line break


def test_history_block_with_a_jinja_template() -> None:
    template = Template("{% for t in history %}[{{ t.role }}|{{ t.content }}]{% endfor %}")
    history = [ConversationTurn("user", "hi"), ConversationTurn("assistant", "hello")]
    assert history_block(history, template) == "[user|hi][assistant|hello]"


# --- start: which steps make turns ---------------------------------------------------------------------


def test_last_is_the_last_body_step_that_is_not_a_user_source() -> None:
    active = start(loop(model("clarify"), hitl("answer")))
    assert active.assistant_steps == {"clarify"}
    assert active.hitl_is_user and active.user_steps == frozenset()
    assert active.loop == "chat"


def test_last_is_a_script_agent_too_it_speaks_like_a_model() -> None:
    assert start(loop(model("clarify"), script("tidy"))).assistant_steps == {"tidy"}
    assert start(loop(script("count"), hitl("answer"))).assistant_steps == {"count"}


def test_last_makes_no_assistant_turn_when_the_last_step_only_moves_its_input_along() -> None:
    passthrough = AgentStep(name="echo", input=Template("{{ previous_step }}"))
    assert start(loop(model("clarify"), passthrough)).assistant_steps == frozenset()
    builtin = AgentStep(name="pass", agent=PassthroughAgent())
    assert start(loop(model("clarify"), builtin)).assistant_steps == frozenset()
    inner = LoopStep(name="inner", body=(model("deep"),))
    assert start(loop(model("clarify"), inner)).assistant_steps == frozenset()


def test_last_skips_hitl_steps_only_when_hitl_is_a_user_source() -> None:
    settings = Conversation(user_turn_sources=("critic",))
    active = start(loop(model("clarify"), model("critic"), settings=settings))
    assert active.assistant_steps == {"clarify"}  # critic makes user turns, so clarify is the last
    assert active.user_steps == {"critic"} and not active.hitl_is_user
    # hitl is not a user source here: the HITL step is the last step, and it is not a model agent.
    assert start(loop(model("clarify"), hitl("answer"), settings=settings)).assistant_steps == frozenset()


def test_all_agents_is_every_agent_step_of_the_body_tree_except_nested_conversations() -> None:
    nested = LoopStep(name="side_chat", body=(model("n_inner"),), conversation=Conversation())
    body: tuple[Step, ...] = (
        model("a_top"),
        script("s_top"),
        hitl("answer"),
        LoopStep(name="plain_loop", body=(model("a_loop"),)),
        nested,
        MapStep(name="each", over=Expression("[1]"), body=(model("a_map"),)),
        ParallelStep(name="fan", branches=(("x", (model("a_par"),)), ("y", (script("s_par"),)))),
        ConditionalStep(
            name="route",
            condition=lambda scope: "yes",
            branches=(("yes", (model("a_yes"),)),),
            default_branch=(model("a_default"),),
        ),
    )
    active = start(loop(*body, settings=Conversation(ai_turn_source="all_agents")))
    assert active.assistant_steps == {"a_top", "s_top", "a_loop", "a_map", "a_par", "s_par", "a_yes", "a_default"}
    builtin = AgentStep(name="pass", agent=PassthroughAgent())
    relay = AgentStep(name="relay", input=Template("{{ previous_step }}"))
    settings = Conversation(ai_turn_source="all_agents")
    assert start(loop(model("a"), builtin, relay, settings=settings)).assistant_steps == {"a"}


def test_all_agents_and_named_steps_leave_out_user_sources() -> None:
    settings = Conversation(ai_turn_source="all_agents", user_turn_sources=("hitl", "b"))
    assert start(loop(model("a"), model("b"), settings=settings)).assistant_steps == {"a"}
    named = Conversation(ai_turn_source="named_steps", named_steps=("a", "c"), user_turn_sources=("c",))
    active = start(loop(model("a"), script("b"), model("c"), settings=named))
    assert active.assistant_steps == {"a"} and active.user_steps == {"c"}
    # named_steps may name a step that is not an agent: the author chose it.
    chosen = Conversation(ai_turn_source="named_steps", named_steps=("b",))
    builtin = AgentStep(name="b", agent=PassthroughAgent())
    assert start(loop(model("a"), builtin, settings=chosen)).assistant_steps == {"b"}


def test_capture_adds_turns_by_source_and_skips_blank_results() -> None:
    settings = Conversation(user_turn_sources=("hitl", "relay"))
    ctx = RunContext(conversation=start(loop(model("relay"), model("clarify"), hitl("answer"), settings=settings)))
    capture(ctx, "clarify", {"action": "ask"}, hitl=False)
    capture(ctx, "answer", "Ada", hitl=True)
    capture(ctx, "relay", "from relay", hitl=False)
    capture(ctx, "other", "ignored", hitl=False)
    capture(ctx, "answer", "   ", hitl=True)
    assert [(t.role, t.content) for t in ctx.conversation_history] == [
        ("assistant", '{"action": "ask"}'),
        ("user", "Ada"),
        ("user", "from relay"),
    ]
    assert all(t.counted is None for t in ctx.conversation_history)  # counted when a bound needs it
    outside = RunContext()
    capture(outside, "clarify", "x", hitl=False)
    assert outside.conversation_history == []


# --- seed ----------------------------------------------------------------------------------------------


def seeded(settings: Conversation, loop_input: Any, steps: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    ctx = RunContext(steps=dict(steps or {}))
    seed(ctx, start(loop(model("clarify"), settings=settings)), loop_input)
    assert all(turn.counted is None for turn in ctx.conversation_history)
    return [(turn.role, turn.content) for turn in ctx.conversation_history]


def test_seed_from_the_loop_input() -> None:
    assert seeded(Conversation(), "Plan a trip") == [("user", "Plan a trip")]
    assert seeded(Conversation(), {"goal": "trip"}) == [("user", '{"goal": "trip"}')]
    assert seeded(Conversation(), None) == []
    assert seeded(Conversation(), "  ") == []
    assert seeded(Conversation(seed_from_input=False), "Plan a trip") == []


def test_seed_from_a_step_with_a_prefix() -> None:
    steps = {"get_goal": {"output": "Plan a trip"}}
    settings = Conversation(seed_from_input=False, seed_from_step="get_goal", seed_prefix="Goal: ")
    assert seeded(settings, "the loop input", steps) == [("user", "Goal: Plan a trip")]
    assert seeded(settings, "the loop input", {}) == []  # the step has not run: nothing to seed


@pytest.mark.parametrize("prefix", ["User: ", "user:", "USER : ", "User"])
def test_a_prefix_that_only_names_the_user_is_not_added(prefix: str) -> None:
    steps = {"get_goal": {"output": "Plan a trip"}}
    settings = Conversation(seed_from_input=False, seed_from_step="get_goal", seed_prefix=prefix)
    assert seeded(settings, None, steps) == [("user", "Plan a trip")]
    assert seeded(Conversation(seed_prefix=prefix), "Plan a trip") == [("user", "Plan a trip")]


def test_seed_prefix_applies_to_the_loop_input_too() -> None:
    assert seeded(Conversation(seed_prefix="Request - "), "Plan a trip") == [("user", "Request - Plan a trip")]


# --- turn_text -----------------------------------------------------------------------------------------


def test_turn_text_keeps_strings_and_writes_other_values_as_json() -> None:
    assert turn_text("Plan a trip") == "Plan a trip"
    assert turn_text("") == ""
    assert turn_text({"action": "ask", "question": "Qui?"}) == '{"action": "ask", "question": "Qui?"}'
    assert turn_text({"city": "Zürich"}) == '{"city": "Zürich"}'  # not \u-escaped
    assert turn_text([1, 2]) == "[1, 2]"
    assert turn_text(3) == "3"
    assert turn_text(None) == "null"
    view = LazyView(("a",), lambda key: {"b": 1})
    assert turn_text({"v": view}) == '{"v": {"a": {"b": 1}}}'


# --- tokens are counted once ---------------------------------------------------------------------------

TWENTY_ITERATIONS = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [%s]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 20
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
      output: {text: conversation_history}
"""


async def twenty_iterations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Settings) -> list[str]:
    """Run the twenty-iteration loop; the texts whose tokens were counted, in order."""
    counted: list[str] = []
    real = tokens.count_tokens

    def recording(text: str, model: str | None = None) -> int:
        counted.append(text)
        return real(text, model)

    monkeypatch.setattr(tokens, "count_tokens", recording)
    path = tmp_path / "flow.yaml"
    path.write_text(TWENTY_ITERATIONS % ", ".join(f"question {i}" for i in range(1, 21)), encoding="utf-8")
    answers = [f"answer {i}" for i in range(1, 21)]
    outcome = await Engine(store=MemoryStore(), human=ScriptedHuman(answers)).run(
        load_pipeline(path, settings), "the goal"
    )
    assert outcome.status == "completed", outcome.error
    assert outcome.output == "\n".join(
        f"{'User' if n % 2 == 0 else 'Assistant'}: {text}" for n, text in enumerate(TWENTY_TURNS)
    )
    return counted


TWENTY_TURNS = ["the goal", *(f"{kind} {i}" for i in range(1, 21) for kind in ("question", "answer"))]


async def test_each_turn_is_counted_at_most_once_over_a_twenty_iteration_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bound of 40 tokens holds about 4 of these turns: every bounding pass must count the newest ones.
    counted = await twenty_iterations(tmp_path, monkeypatch, load_settings(cwd=tmp_path, env={}, overrides=BOUND_40))
    assert counted, "a history over its bound must be counted"
    # 41 turns, and 20 bounding passes over a growing history: no turn's content counted twice.
    assert sorted(counted) == sorted(set(counted))
    assert set(counted) <= set(TWENTY_TURNS)


BOUND_40: dict[str, Any] = {"history": {"max_tokens": 40}}


async def test_a_history_within_its_bound_is_never_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """41 short turns are far below the default bound (4,096 tokens) by their UTF-8 length alone: no count is
    needed, so the tokenizer (~0.3 s to load) is never loaded by such a run."""
    assert await twenty_iterations(tmp_path, monkeypatch, Settings()) == []


def test_a_turn_is_counted_when_first_read_and_only_then() -> None:
    turn = ConversationTurn("user", "Plan a family trip to the mountains in June, près de Zürich")
    assert turn.counted is None
    assert turn.tokens_at_most == len(turn.content.encode("utf-8")) > len(turn.content)
    assert turn.tokens == count_tokens(turn.content) <= turn.tokens_at_most
    assert turn.counted == turn.tokens_at_most == turn.tokens  # the count, once known, is the bound
    assert turn == ConversationTurn("user", turn.content)  # equality is the turn's words, not what is known
    assert ConversationTurn("user", "x", 5).tokens == 5  # a count read back from a store is not redone


def test_scratchpad_history_is_derived_only_when_read() -> None:
    """``stop_when: agent_finished`` reads ``scratchpad.last_agent_command`` every iteration: that must not
    build the ``scratchpad.history`` lines of every turn (the cost that grew with the conversation)."""

    class Unread(ConversationTurn):
        @property
        def line(self) -> str:  # type: ignore[override]
            raise AssertionError("scratchpad.history was built though nothing read it")

    ctx = RunContext(scratchpad={"last_agent_command": {"action": "ask"}})
    ctx.conversation_history = [Unread("user", "hi"), Unread("assistant", "hello")]
    finished = Expression("context.scratchpad.last_agent_command.action == 'finish'")
    assert finished.evaluate({"context": ctx.lazy_view()}) is False
    assert list(ctx.lazy_view()["scratchpad"]) == ["last_agent_command", "history"]

    ctx.conversation_history = [ConversationTurn("user", "hi"), ConversationTurn("assistant", "hello")]
    assert ctx.lazy_view()["scratchpad"]["history"] == ["User: hi", "Assistant: hello"]
    rendered = Template("{{ context.scratchpad.history | join('|') }}").render({"context": ctx.lazy_view()})
    assert rendered == "User: hi|Assistant: hello"
