"""What the engine does on every iteration, kept cheap without changing what it means (docs/performance.md).

Views remember the history lists with their length instead of copying them; run state is copied by a
plain-data copy; templates copy their globals once; ``a.b`` on run data reads the key directly; the
redactor walks a payload's mappings in one loop; a prompt's message objects are masked once; a question
reads the history itself. Each test here fails if the fast way changed a result (or, where it can be
observed, if the fast way were gone).
"""

from __future__ import annotations

import abc
import asyncio
import builtins
import copy
import dataclasses
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import pytest

from benchmarks import ensemble_run
from blueprints import load_pipeline
from core import (
    ZERO_USAGE,
    AgentCall,
    ChatMessage,
    Conversation,
    Engine,
    EnsembleStep,
    Expression,
    HitlStep,
    LoopStep,
    NullReporter,
    PromptSent,
    RunContext,
    RunRecord,
    StepRecord,
    Template,
    TemplateError,
    TraceEvent,
    Usage,
    load_settings,
)
from core.agents import PythonAgent
from core.agents.chat import input_text
from core.answering import simulated_person
from core.conversation.current_message import is_context
from core.conversation.history import as_messages, bound
from core.conversation.turns import ActiveConversation, add_turn, start
from core.model import codec, events, views
from core.model.views import LazyView, copied, json_default
from core.policies.context_writes import agent_finished, note_agent_command
from core.policies.frame import Frame
from core.policies.frame import scope as frame_scope
from core.policies.person import person_question
from core.store import MemoryStore, open_store
from core.store.rows import shared_lists, texts
from core.testing import ScriptedHuman
from core.text import bounds, redaction, templates, tokens
from core.text.redaction import MASK, Redactor
from core.text.sandbox import BoundedSandbox
from core.text.turns import ConversationTurn, HitlEntry, turn_text


def _noted_calls(monkeypatch: pytest.MonkeyPatch, owner: type, method: str) -> list[Any]:
    """The values ``owner.method(self, value)`` is called with from now on (it still runs), in order."""
    noted: list[Any] = []
    real = getattr(owner, method)

    def noting(self: Any, value: Any) -> Any:
        noted.append(value)
        return real(self, value)

    monkeypatch.setattr(owner, method, noting)
    return noted


def _context() -> RunContext:
    ctx = RunContext(initial_prompt="plan", scratchpad={"goal": "offsite"})
    ctx.conversation_history = [ConversationTurn("user", "hello", 1), ConversationTurn("assistant", "when?", 2)]
    ctx.hitl_history = [HitlEntry("ask", "when?", "May")]
    return ctx


def test_a_view_shows_the_history_as_it_was_when_it_was_made() -> None:
    ctx = _context()
    view = ctx.lazy_view()
    add_turn(ctx, "user", "in May")
    ctx.hitl_history.append(HitlEntry("ask", "where?", "Lisbon"))
    assert [turn["content"] for turn in view["conversation_history"]] == ["hello", "when?"]
    assert view["scratchpad"]["history"] == ["User: hello", "Assistant: when?"]
    assert [entry["answer"] for entry in view["hitl_history"]] == ["May"]
    later = ctx.lazy_view()
    ctx.conversation_history = []  # replacing the list leaves the views made before as they were
    assert len(later["conversation_history"]) == 3
    assert "history" not in ctx.lazy_view()["scratchpad"]


def test_a_view_made_before_any_turn_has_no_derived_history() -> None:
    ctx = RunContext(scratchpad={"goal": "offsite"})
    view = ctx.lazy_view()
    add_turn(ctx, "user", "hello")
    assert dict(view["scratchpad"]) == {"goal": "offsite"}


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, {"b": None, "c": True}], "d": "text", 3: "int key"},
        [[[]], {}, "", 0],
        "text",
        None,
    ],
)
def test_copied_makes_a_deep_copy_of_plain_data(value: Any) -> None:
    made = copied(value)
    assert made == value
    if isinstance(value, dict):
        made["a"][2]["b"] = "changed"
        assert value["a"][2]["b"] is None
    if isinstance(value, list):
        made[0].append(1)
        assert value[0] == [[]]


class _Thing:
    def __init__(self, items: list[int]) -> None:
        self.items = items


def test_copied_leaves_what_is_not_plain_data_to_deepcopy() -> None:
    thing = {"t": _Thing([1]), "pair": (1, [2])}
    made = copied(thing)
    assert made["t"] is not thing["t"] and made["t"].items == [1] and made["t"].items is not thing["t"].items
    assert made["pair"] == (1, [2]) and made["pair"][1] is not thing["pair"][1]
    cycle: list[Any] = [1]
    cycle.append(cycle)
    looped = copied(cycle)
    assert looped[1] is looped and looped is not cycle  # as copy.deepcopy makes it
    deep: Any = "end"
    for _ in range(200):
        deep = [deep]
    assert copied(deep) == copy.deepcopy(deep)


def test_copied_copies_a_view_as_deepcopy_does_without_making_it_plain_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop with ``propagation: context`` copies a view of the context into every iteration's input;
    deepcopy made it plain, then copied that (a 1,000-iteration loop of an agent and a HITL step cost 4.8 ms
    per iteration at the end, 4.0 now): now its entries are copied as they are read."""
    ctx = _context()
    ctx.steps = {"ask": {"answer": ["May", {"day": 3}]}}
    view = ctx.lazy_view()
    expected = copy.deepcopy(ctx.lazy_view())

    def refused(*args: Any) -> Any:
        raise AssertionError("made plain, then deep-copied")

    monkeypatch.setattr(LazyView, "materialize", refused)
    monkeypatch.setattr(copy, "deepcopy", refused)
    made = copied(view)
    assert type(made) is dict and made == expected and list(made) == list(expected)
    assert type(made["steps"]) is dict and type(made["scratchpad"]) is dict
    assert made["steps"]["ask"] is not view["steps"]["ask"] and made["scratchpad"] is not view["scratchpad"]
    assert made["steps"]["ask"]["answer"][1] is not view["steps"]["ask"]["answer"][1]
    assert copied(view) == made and copied(view)["conversation_history"] is not made["conversation_history"]


def _sizes(value: Any, cap: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, int]:
    """``size_of(value, cap)``, the same by the walk that remembers every container, and how many containers
    the first call opened in that walk."""
    opened: list[Any] = []
    children = bounds._children

    def counted(item: Any) -> list[Any]:
        opened.append(item)
        return children(item)

    monkeypatch.setattr(bounds, "_children", counted)
    size = bounds.size_of(value, cap)
    walked = len(opened)
    monkeypatch.setattr(bounds, "_PLAIN_WORK", -1, raising=False)
    full = bounds.size_of(value, cap)
    monkeypatch.undo()
    return size, full, walked


def test_a_templates_charge_for_plain_data_is_its_size_without_the_walk_that_remembers_containers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``context.hitl_history | length`` charges the list's size: the walk that remembers every container cost a
    1,000-iteration loop with that condition 0.9 ms per iteration near the start, 4.0 at the end (1.5 now);
    plain data is sized as a tree, the same size, and what is not a tree or not plain data the other way."""
    entries = [{"step": "ask", "message": f"q{n}", "answer": [n, None, 2.5, True], "é": {}} for n in range(1000)]
    for cap in (1, 50, 10_000_000):
        size, full, walked = _sizes(entries, cap, monkeypatch)
        assert size == full == min(1 + sum(35 + len(str(n)) for n in range(1000)), cap + 1) and walked == 0
    shared = ["abc"] * 3
    cycle: list[Any] = [1, "ab"]
    cycle.append(cycle)
    doubled: Any = ["s"]
    for _ in range(40):
        doubled = [doubled, doubled]
    deep: Any = "end"
    for _ in range(100):
        deep = [deep]
    for value, walks in (
        ([shared, shared, {"k": shared}], False),
        ({1: [None, {"a": "b"}], False: "x", None: 2.5}, False),
        (cycle, True),  # a container inside itself, a structure sharing its parts, what is not plain data
        (doubled, True),
        (deep, True),
        ([{"a": ("t",)}], True),
        ([b"xy", {(1, 2): 3}], True),
        ({"view": RunContext().lazy_view()}, True),
    ):
        for cap in (3, 10_000_000):
            size, full, walked = _sizes(value, cap, monkeypatch)
            assert size == full and (walked > 0) == walks


def test_a_long_list_of_numbers_made_by_a_template_is_looked_into_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``{{ context.scratchpad.scores + [7] }}`` (docs/examples/loop.yaml) makes a list as long as the run: its
    numbers were each given a call looking for an undefined value and an ABC check for a view inside
    (a 1,000-iteration loop of that step and an agent: 3.4 ms per iteration at the end, 0.9 near the start;
    2.4 now, with the redactor's walk below 2.1)."""
    calls: list[Any] = []
    inside = templates._undefined_inside
    check = abc.ABCMeta.__instancecheck__

    def looked(value: Any) -> Any:
        calls.append(value)
        return inside(value)

    def checked(cls: Any, instance: Any) -> bool:
        calls.append(instance)
        return check(cls, instance)

    monkeypatch.setattr(templates, "_undefined_inside", looked)
    monkeypatch.setattr(abc.ABCMeta, "__instancecheck__", checked)
    scores = [*range(500), *(n / 2 for n in range(500)), True, None, "text"]
    made = Template("{{ context.scratchpad.scores + [7] }}").render({"context": {"scratchpad": {"scores": scores}}})
    monkeypatch.undo()
    # The list once (``plain`` tells it is no view by its type, without an ABC check), not its items.
    assert made == [*scores, 7] and [type(value) for value in calls] == [list]
    with pytest.raises(TemplateError, match="'missing' is undefined"):
        Template("{{ [1, 2, [3, {'a': missing}]] }}").render({})


def test_a_long_list_of_numbers_is_redacted_without_a_call_for_each_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same list reaches the trace with every step that reads or makes it; ``Redactor.value`` returns a
    number as it is, so the list's numbers are passed on without calling it (2.4 ms per iteration at the end of
    that loop, 2.1 now)."""
    redactor = Redactor()
    calls = _noted_calls(monkeypatch, Redactor, "value")
    scores = [*range(500), 2.5, True, None, "api_key=abcdefgh12345678", {"password": "x"}, ["Bearer abcdefgh1234"]]
    masked = redactor.value(scores)
    assert masked[:503] == scores[:503] and len(calls) == 1 + 2 + 1  # the list, the text, the inner list and text
    assert masked[503:] == [f"api_key={MASK}", {"password": MASK}, [f"Bearer {MASK}"]]


def test_templates_copy_their_globals_once() -> None:
    template = BoundedSandbox().from_string("{{ len(x) }}")
    assert type(template.globals) is dict  # not Jinja's ChainMap, copied key by key on every render
    assert Template("{{ len(steps) }} {{ tojson([1]) }}").render({"steps": [1, 2]}) == "2 [1]"


def test_dot_reads_a_key_of_run_data_and_a_name_of_its_type_as_jinja_does() -> None:
    ctx = _context()
    ctx.steps = {"ask": {"output": {"items": 5, "x": 1}}}
    variables = {"steps": ctx.lazy_view()["steps"], "d": {"items": 5, "x": 1}}
    assert Expression("steps.ask.output.x == 1 and d.x == 1").evaluate(variables) is True
    # Jinja looks for the attribute first: dict.items is the method, the key is read with [ ].
    assert Expression("d.items == 5").evaluate(variables) is False
    assert Expression("d['items'] == 5 and steps.ask.output['items'] == 5").evaluate(variables) is True
    assert Expression("d.missing").evaluate(variables) is None
    assert Expression("steps.nothere.output").evaluate(variables) is None
    with pytest.raises(TemplateError, match="missing"):
        Template("{{ d.missing }}").render(variables)


def test_the_redactor_masks_sensitive_keys_in_every_mapping_of_a_list() -> None:
    redactor = Redactor()
    messages = [{"role": "user", "content": "hello"}] * 3 + [{"role": "user", "token": "abc123", "content": "x"}]
    masked = redactor.value({"messages": messages, "api_key": "k", "n": 3, "none": None})
    assert masked["messages"][:3] == messages[:3]
    assert masked["messages"][3] == {"role": "user", "token": MASK, "content": "x"}
    assert masked["api_key"] == MASK and masked["n"] == 3 and masked["none"] is None
    assert masked["messages"][0] is not messages[0]  # a copy: the payload is not changed in place
    key = "sk-" + "Ab1" * 16
    assert redactor.value([{"content": f"my key is {key}"}]) == [{"content": f"my key is {MASK}"}]


def test_a_prompt_is_masked_for_the_cost_of_its_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each prompt of a conversation resends the message objects the prompt before it sent (each turn's
    ``message``): those are masked once, a prompt costs its new messages; the result is what masking the
    messages' dicts gives, each prompt in a list of its own of the same masked dicts."""
    turns = [ConversationTurn("user" if n % 2 else "assistant", f"turn {n}: my api_key=k{n}") for n in range(102)]
    redactor = Redactor()
    masked = _noted_calls(monkeypatch, Redactor, "text")
    first = redactor.messages([turn.message for turn in turns[:100]])
    masked.clear()
    second = redactor.messages([turn.message for turn in turns])
    assert masked == ["assistant", "turn 100: my api_key=k100", "user", "turn 101: my api_key=k101"]  # the new ones
    assert second == Redactor().value([turn.message.to_dict() for turn in turns]) and first == second[:100]
    assert second[5] == {"role": "user", "content": f"turn 5: my api_key={MASK}"}
    assert second is not first and all(a is b for a, b in zip(first, second, strict=False))  # not copied


def test_the_store_remembers_a_prompts_message_dicts_themselves() -> None:
    """The next prompt's list holds the very dicts the last one did (``Redactor.messages``): remembered as
    they are, not copied, they compare with it at the cost of a pointer (``shared_lists._plain_items``)."""
    messages = Redactor().messages([ChatMessage("user", f"turn {n}") for n in range(10)])
    kept, exact = shared_lists._plain_items(messages)
    assert exact and kept == messages and all(a is b for a, b in zip(kept, messages, strict=True))


def test_a_question_in_a_conversation_is_asked_with_the_history_itself_not_a_copy() -> None:
    """Copying the history for every question cost the whole conversation on every iteration; the history
    grows only after the answer comes, so the question reads it as it is."""
    ask = HitlStep(name="ask", message=Template("?"))
    ctx = _context()
    ctx.conversation = start(LoopStep(name="chat", body=(ask,), conversation=Conversation()))
    assert person_question(ask, "chat/1/ask", "?", ctx).heard is ctx.conversation_history


def test_a_question_outside_a_conversation_makes_the_earlier_ones_into_turns_only_if_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Outside a conversation a person has heard the questions asked so far and their answers; only a
    simulated person reads them, so they are made into turns then, not for every question (which cost each
    question the whole run's questions so far), and as they were when the question was asked."""
    made: list[int] = []
    questions_and_answers = simulated_person.questions_and_answers  # imported there when first read

    def counted(entries: Any) -> list[ConversationTurn]:
        made.append(len(entries))
        return questions_and_answers(entries)

    monkeypatch.setattr(simulated_person, "questions_and_answers", counted)
    ask = HitlStep(name="ask", message=Template("?"))
    ctx = _context()
    ctx.hitl_history = [HitlEntry("ask", f"q{n}", f"a{n}") for n in range(3)]
    question = person_question(ask, "loop/4/ask", "?", ctx)
    ctx.hitl_history.append(HitlEntry("ask", "?", "later"))
    assert made == [] and len(question.heard) == 6
    assert list(question.heard) == questions_and_answers(ctx.hitl_history[:3]) and made == [3]
    assert question.heard[-1] == ConversationTurn("user", "a2") and made == [3]  # made once


def test_a_prompt_traced_from_its_message_objects_is_stored_as_from_their_dicts() -> None:
    """``Frame.event(path, prompt, sent)`` stores exactly the payload the prompt with its messages' dicts gave
    (the same JSON, key order included), secrets masked."""
    key = "sk-" + "Ab1" * 16
    sent = [ChatMessage("system", "be brief"), ChatMessage("user", f"my key is {key}"), ChatMessage("assistant", "ok")]
    history = {"conversation": "chat", "turns": 2, "dropped": 0, "mode": "messages"}
    frame = Frame(run_id="r", store=MemoryStore(), human=ScriptedHuman(), reporter=NullReporter(), redactor=Redactor())
    whole = PromptSent("scripted", tuple(m.to_dict() for m in sent), True, history=history)
    expected = json.dumps(frame.event("p", whole).payload)
    for _ in range(2):  # masked, then remembered
        traced = frame.event("p", PromptSent("scripted", (), True, history=history), sent)
        assert json.dumps(traced.payload) == expected
    assert MASK in expected and key not in expected


class _Counted:
    """A compiled Jinja expression that counts its calls."""

    def __init__(self, compiled: Any) -> None:
        self.compiled, self.calls = compiled, 0

    def __call__(self, **variables: Any) -> Any:
        self.calls += 1
        return self.compiled(**variables)


def test_a_template_reading_names_of_run_data_reads_them_without_jinja() -> None:
    """``{{ steps.ask.output.question }}`` (a HITL message in every iteration) is read as the sandbox reads it,
    key by key; whatever is not a key of run data (missing, a name of the type, another type) is Jinja's."""
    ctx = _context()
    ctx.steps = {"ask": {"output": {"question": "when?", "items": 5, "n": [1]}}}
    variables = {"steps": ctx.lazy_view()["steps"], "d": {"items": 5, "x": {"y": 1}}, "s": "text"}
    for source, expected in [
        ("{{ steps.ask.output.question }}", "when?"),
        ("{{ d.x }}", '{"y": 1}'),
        ("{{ steps.ask.output.n }}", "[1]"),
    ]:
        template = Template(source)
        counted = template._expression = _Counted(template._expression)
        assert template.render_text(variables) == expected and counted.calls == 0
    for source in ["{{ d.items }}", "{{ s.upper }}", "{{ steps.ask.output.missing }}", "{{ nothere.x }}"]:
        template = Template(source)
        counted = template._expression = _Counted(template._expression)
        try:
            fast = template.render(variables)
        except TemplateError as exc:
            fast = exc.message
        assert counted.calls == 1
        template._path = None  # Jinja alone says the same
        try:
            assert template.render(variables) == fast
        except TemplateError as exc:
            assert exc.message == fast
    assert Template("{{ d.x.y }}").render({"d": {"x": {"y": [1, {"z": 2}]}}}) == [1, {"z": 2}]


_COMMANDS: list[Any] = [
    None, "finish", 3, [], ["finish"], {}, {"action": "finish"}, {"action": "ask"}, {"action": None},
    {"action": ["finish"]}, {"action": {"a": 1}}, {"action": 1.5}, _Thing([1]), {"action": _Thing([])},
]  # fmt: skip


def _scopes() -> list[dict[str, Any]]:
    scopes: list[dict[str, Any]] = []
    pads: list[Any] = [{}, "pad", None, _Thing([1])] + [{"last_agent_command": c} for c in _COMMANDS]
    for pad in pads:
        for previous in _COMMANDS:
            scopes.append({"context": {"scratchpad": pad}, "previous_step": previous})
            ctx = RunContext(scratchpad=pad if isinstance(pad, dict) else {})
            ctx.conversation_history = [ConversationTurn("user", "hi")]  # the scratchpad is a view then
            view = ctx.lazy_view()
            scopes.append({"context": view, "previous_step": previous, "steps": view["steps"]})
            scopes.append({"context": view, "previous_step": ctx.lazy_view()})
    scopes += [{"context": {}, "previous_step": None}, {"previous_step": {"action": "finish"}}, {"context": {"x": 1}}]
    return scopes


def test_stop_when_agent_finished_is_read_on_run_data_as_its_expression_reads_it() -> None:
    """``stop_when: agent_finished`` is checked after every iteration: on run data it is read directly, with
    the expression's value in every case; on anything else the expression is evaluated."""
    from blueprints.compiling.predicates import AGENT_FINISHED, ExpressionTest, agent_finished

    test, expression = agent_finished(), ExpressionTest(Expression(AGENT_FINISHED))
    assert type(test) is not ExpressionTest  # the direct reading
    for scope in _scopes():
        assert test(scope) is expression(scope), scope
    evaluated: list[Any] = []

    class Counting(Expression):
        __slots__ = ()

        def evaluate(self, variables: Any) -> Any:
            evaluated.append(variables)
            return super().evaluate(variables)

    counting = type(test)(Counting(AGENT_FINISHED))
    ctx = RunContext(scratchpad={"last_agent_command": {"action": "ask", "question": "?"}})
    assert counting({"context": ctx.lazy_view(), "previous_step": "an answer"}) is False and not evaluated
    ctx.scratchpad["last_agent_command"] = {"action": "finish"}
    assert counting({"context": ctx.lazy_view(), "previous_step": "an answer"}) is True and not evaluated
    assert counting({"context": ctx.lazy_view(), "previous_step": _Thing([])}) is True and not evaluated
    ctx.scratchpad["last_agent_command"] = {"action": _Thing([])}
    assert counting({"context": ctx.lazy_view(), "previous_step": None}) is False and len(evaluated) == 1


def test_an_agents_system_prompt_and_examples_are_the_same_messages_in_every_prompt() -> None:
    """Like the history's turns, the system prompt and worked examples are the same message objects from one
    prompt to the next, so tracing masks them once (not once per call)."""
    from core.agents.chat import chat_prompt

    first = chat_prompt("be brief", (), "hello", examples=[("2+2?", "4")])
    second = chat_prompt("be brief", (), "bye", examples=[("2+2?", "4")])
    assert [m.to_dict() for m in first[:3]] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
    ]
    assert all(a is b for a, b in zip(first[:3], second[:3], strict=True)) and first[3] is not second[3]


def _ensemble_question_lookups(tmp_path: Path, rounds: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """How often an ensemble of ``rounds`` rounds (benchmarks/ensemble_run.py: a person asked every third
    round) looks up a participant by name, run through the engine on the in-memory store."""
    blueprint, answers = ensemble_run.write(rounds, tmp_path / str(rounds))
    pipeline = load_pipeline(blueprint, load_settings())
    lookups = 0
    participant = EnsembleStep.participant

    def counted(self: EnsembleStep, name: str) -> Any:
        nonlocal lookups
        lookups += 1
        return participant(self, name)

    monkeypatch.setattr(EnsembleStep, "participant", counted)
    human = ScriptedHuman(json.loads(answers.read_text())["editor"])
    engine = Engine(store=MemoryStore(), human=human, reporter=NullReporter(), redactor=Redactor())
    outcome = asyncio.run(engine.run(pipeline, "Plan the offsite"))
    assert outcome.status == "completed" and len(human.asked) == ensemble_run.questions(rounds)
    return lookups


def test_an_ensembles_question_costs_the_turns_said_since_the_last_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a person has heard in an ensemble is kept as the turns come (``Conversation._question``), not
    rebuilt from every turn for each question: three times the rounds, three times the look-ups, not nine."""
    short = _ensemble_question_lookups(tmp_path, 30, monkeypatch)
    long = _ensemble_question_lookups(tmp_path, 90, monkeypatch)
    assert long <= 3.5 * short


def test_an_ensemble_whose_history_fits_its_bound_counts_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ensemble's turns are counted when a bound needs them, as a loop's are: a short ensemble, whose
    history fits the default bound by its UTF-8 length, never loads the tokenizer (~0.3 s, ~70 MB)."""
    monkeypatch.setattr(tokens, "_loaded", {})  # as in a new process: no encoding loaded yet
    monkeypatch.setattr(tokens, "_ascii", None)
    _ensemble_question_lookups(tmp_path, 6, monkeypatch)
    assert tokens._loaded == {} and tokens._ascii is None


async def test_a_python_function_is_given_the_context_entries_it_reads_made_plain_only_then() -> None:
    """A Python agent was given the whole context made plain on every call, the conversation and the
    questions so far included (a loop of 1,000 iterations calling one cost 0.55 ms per iteration near the
    start and 3.2 at the end); now an entry is made plain when the function reads it, and not at all when
    the function takes no context, with the same values, and the same mapping as a dict-backed proxy gave."""
    read: list[str] = []
    ctx = _context()
    view = ctx.lazy_view()

    class Counted(dict[str, Any]):
        def __getitem__(self, key: str) -> Any:
            read.append(key)
            return view[key]

    context = Counted(dict.fromkeys(view))
    seen: list[Any] = []

    def reads_goal(text: str, context: Any) -> Any:
        seen.append(context)
        return context["scratchpad"]["goal"]

    call = AgentCall(input="x", step="s", context=context, run_id="r", path="p")
    assert (await PythonAgent(reads_goal).run(call)).output == "offsite" and read == ["scratchpad"]
    assert (await PythonAgent(lambda text: text).run(call)).output == "x" and read == ["scratchpad"]
    given = seen[0]
    expected = {**ctx.view(), "run": {"run_id": "r", "step_path": "p", "attempt": 1}}
    assert given == expected and dict(given) == expected and list(given) == list(expected)
    assert given.copy() == expected and (given | {"z": 1}) == {**expected, "z": 1}
    assert ({"z": 1} | given) == {"z": 1, **expected} and list(reversed(given)) == list(reversed(expected))
    assert repr(given) == repr(MappingProxyType(expected)) and given["steps"] is given["steps"]


_JSON_VALUES: list[Any] = [
    'a text é"\\\n\x00',
    {"a": [1, 2.5, -0.0, None, True, {"b": "ü"}], "c": float("nan"), "d": float("inf")},
    [1e300, 12345678901234567890, "\ud800", [], {}],
    {1: "a", False: "b", None: "c", 1.5: "d"},
]


@pytest.mark.parametrize("value", _JSON_VALUES)
def test_the_stores_compact_json_is_json_dumps_without_an_encoder_built_per_call(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``codec.compact`` (~8 a step's write) calls the C encoder it made once, not ``JSONEncoder.encode``,
    which builds one on every call; the text is ``json.dumps``' own."""
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    built = _noted_calls(monkeypatch, json.JSONEncoder, "iterencode")
    assert codec.compact(value) == expected
    assert built == []
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        codec.compact({"a": [object()]})


@pytest.mark.parametrize("value", _JSON_VALUES[1:])
def test_a_turns_text_is_json_dumps_without_an_encoder_made_per_call(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step result that is not text becomes a turn as ``json.dumps(value, ensure_ascii=False,
    default=json_default)`` gives it (every agent reply of a conversation), with an encoder made once."""
    expected = json.dumps(value, ensure_ascii=False, default=json_default)
    made = _noted_calls(monkeypatch, json.JSONEncoder, "__init__")
    assert turn_text(value) == expected
    assert made == []
    assert turn_text({"view": LazyView(("k",), lambda key: [key])}) == '{"view": {"k": ["k"]}}'


def test_an_iterations_conversation_is_its_loops_with_that_input() -> None:
    """``ActiveConversation.for_iteration`` writes its fields out (``dataclasses.replace`` cost several
    times more): every field but the input is the loop's."""
    values = {field.name: object() for field in dataclasses.fields(ActiveConversation)}
    active = ActiveConversation(**values)
    given = object()
    assert active.for_iteration(given) == dataclasses.replace(active, iteration_input=given)
    assert all(
        getattr(active.for_iteration(given), name) is value
        for name, value in values.items()
        if name != "iteration_input"
    )


@pytest.mark.parametrize("value", [*_JSON_VALUES, {"view": LazyView(("k",), lambda key: [key])}, {"x": object()}])
def test_a_value_is_dumped_as_json_dumps_does_without_its_python_layers(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``codec.dump`` (a reply's JSON round trip, each stored value) calls the C encoder directly."""
    expected = json.dumps(value, default=json_default, ensure_ascii=False)
    layers = _noted_calls(monkeypatch, json.JSONEncoder, "iterencode")
    assert codec.dump(value) == expected
    assert codec.normalize(value) == json.loads(expected)
    assert layers == []


def test_a_value_that_holds_itself_is_still_refused_when_dumped() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference detected"):
        codec.dump(looped)
    assert codec.dump([[1], {"a": [2]}]) == '[[1], {"a": [2]}]'  # the refusal left nothing behind


@pytest.mark.parametrize(
    "usage", [ZERO_USAGE, Usage(input_tokens=12, output_tokens=3, requests=1, cost_usd=0.25), Usage(cost_usd=None)]
)
def test_a_steps_usage_is_stored_as_compact_json_with_an_encoder_made_once(
    usage: Usage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its counts of 0 and a cost of 0.0 left out (issue 36): what load_usage reads as such.
    expected = json.dumps({key: value for key, value in usage.to_dict().items() if value != 0}, separators=(",", ":"))
    layers = _noted_calls(monkeypatch, json.JSONEncoder, "iterencode")
    assert codec.dump_usage(usage) == expected
    assert layers == [] and codec.load_usage(codec.dump_usage(usage)) == usage


def test_the_store_tells_a_payloads_text_keys_without_a_call_per_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """``shared_lists.cut`` walks a dict whose keys are all texts (each event payload) and takes any other
    whole, as plain data; its keys are checked in C, not by ``all`` over a generator."""
    calls = {"all": 0}

    def counted_all(items: Any) -> bool:
        calls["all"] += 1
        return all(items)

    monkeypatch.setattr(shared_lists, "all", counted_all, raising=False)
    memory, pending = shared_lists.ListMemory(), shared_lists.Pending()
    assert shared_lists.cut({"a": "x", "b": [1, 2], "c": {}}, "run", memory, pending) == {
        "a": "x",
        "b": [1, 2],
        "c": {},
    }
    assert shared_lists.cut({1: "x", "b": (1,)}, "run", memory, pending) == {"1": "x", "b": [1]}
    # A prompt's new messages: kept as they are when all their keys and values are texts, else made plain.
    messages: list[Any] = [{"role": "user", "content": "hi"}, "text", {"role": "user", "n": 1}, {1: "a"}]
    kept, exact = shared_lists._plain_items(messages)
    assert kept == [messages[0], "text", {"role": "user", "n": 1}, {"1": "a"}] and not exact
    assert kept[0] is messages[0] and kept[2] is not messages[2]
    assert calls["all"] == 0


def test_a_payloads_short_texts_and_numbers_are_stored_without_a_call_each(monkeypatch: pytest.MonkeyPatch) -> None:
    noted: list[Any] = []
    real = shared_lists._finished

    def counted(value: Any, *rest: Any) -> Any:
        noted.append(value)
        return real(value, *rest)

    monkeypatch.setattr(shared_lists, "_finished", counted)
    long = "x" * texts.MIN_SHARED
    payload = {"a": "short", "b": 1, "c": None, "d": 2.5, "e": True, "f": long, "g": {"h": "short"}}
    stored = shared_lists.finish(payload, "run", shared_lists.Pending(), lambda value: ("split", value), _no_store)
    assert stored == {**payload, "f": ("split", long), "g": {"h": "short"}}
    assert noted == [long, {"h": "short"}]  # not the short texts and numbers of a dict


def _no_store(body: str) -> int:
    raise AssertionError("no list to store")


def test_an_agents_structured_input_is_its_json_text_with_an_encoder_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"a": [1, "é"], "b": object()}
    expected = json.dumps(value, ensure_ascii=False, default=str)
    made = _noted_calls(monkeypatch, json.JSONEncoder, "__init__")
    assert input_text(value) == expected and input_text("as is") == "as is"
    assert made == []


@pytest.mark.parametrize(
    "text",
    ["nothing here", "my PASSWORD is", "an Api key", "Bearer x", "AWS", "tokens", "pwd", "basics", "SeCrEt", "é pass"],
)
def test_a_text_that_may_hold_a_secret_is_told_as_before(text: str) -> None:
    lowered = text.lower()
    expected = not text.isascii() or redaction._LITERAL_STARTS.search(text) is not None
    expected = expected or any(word in lowered for word in redaction._WORDS)
    assert redaction._may_match(text) is expected


def _abc_checks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """From now on in the test, every instance an ABC isinstance check is asked about."""
    check = abc.ABCMeta.__instancecheck__
    checked: list[Any] = []

    def counting(cls: Any, instance: Any) -> bool:
        checked.append(instance)
        return check(cls, instance)

    monkeypatch.setattr(abc.ABCMeta, "__instancecheck__", counting)
    return checked


def test_a_scope_and_the_context_check_tell_plain_values_without_an_abc_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """``scope``'s previous step (every step), ``is_context`` (every agent step) and ``views.plain`` tell a text,
    a dict or a list by its type before asking whether it is a view (a Mapping: the ABC machinery)."""
    ctx = _context()
    checked = _abc_checks(monkeypatch)
    for previous in ("text", {"a": 1}, [1], 2, None):
        assert frame_scope(ctx, previous)["previous_step"] == previous
        assert not is_context(previous)
        assert views.plain(previous) == previous
    assert checked == []
    view = ctx.lazy_view()
    assert frame_scope(ctx, view)["previous_step"] is view and is_context(view) and is_context(view.materialize())


def test_an_events_payload_is_made_without_a_call_per_field(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_call(value: Any) -> Any:
        raise AssertionError("called")

    monkeypatch.setattr(events, "_plain", no_call)
    prompt = PromptSent("scripted", ({"role": "user", "content": "hi"},), True, history={"turns": 1})
    assert prompt.to_payload() == {
        "agent": "scripted",
        "messages": [{"role": "user", "content": "hi"}],
        "history_injected": True,
        "history": {"turns": 1},
    }


def test_a_prompts_history_messages_are_its_turns_message_objects() -> None:
    turns = [ConversationTurn("user", "a"), ConversationTurn("assistant", "b")]
    assert all(m is t.message for m, t in zip(as_messages(turns), turns, strict=True))
    assert as_messages(turns) == (ChatMessage("user", "a"), ChatMessage("assistant", "b"))


class _CountingConnection:
    """A SQLite connection that notes the statements sent through ``Connection.execute`` (a cursor each)."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.executed = conn, list[str]()

    def execute(self, sql: str, *args: Any) -> Any:
        self.executed.append(sql)
        return self.conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        self.executed.append(sql)
        return self.conn.executemany(sql, *args)

    def cursor(self) -> Any:
        return self.conn.cursor()

    @property
    def in_transaction(self) -> bool:
        return bool(self.conn.in_transaction)


async def test_a_steps_write_sends_its_statements_through_one_cursor(tmp_path: Path) -> None:
    """``Connection.execute`` makes a cursor per statement; a step's write (``BEGIN``, its texts, its row, its
    events, ``COMMIT``) uses a cursor of the transaction's and one of the batch's, and stores the same."""
    store = await open_store(str(tmp_path / "flujo.db"))
    try:
        await store.create_run(RunRecord(run_id="r", pipeline_name="demo", status="running", created_at=1.0))
        writer = store._writer
        assert writer is not None
        counting = _CountingConnection(writer._conn)
        writer._conn = counting  # type: ignore[assignment]
        long = "a long text " * 10
        messages = [{"role": "user", "content": f"{long} {n}"} for n in range(9)]
        events = [TraceEvent("agent.prompt", "p", {"messages": messages}, 2.0), TraceEvent("agent.reply", "p", {}, 3.0)]
        step = StepRecord(run_id="r", path="p", name="p", kind="agent", status="completed", input=long, output=long)
        await store.record_step(step, events)
        writer._conn = counting.conn
        assert counting.executed == []
        [stored] = await store.steps("r")
        assert (stored.input, stored.output) == (long, long)
        assert [e.payload for e in await store.events("r")] == [{"messages": messages}, {}]
    finally:
        await store.close()


@pytest.mark.parametrize(
    "text",
    ["1", " 1", "1 ", '{"a": [1, 2.5, "x"]}', '"\\u00e9"', "NaN", "[1,]", '{"a": }', "", "\ufeff1", "1 2", '"abc'],
)
def test_a_stored_value_is_read_as_json_loads_reads_it(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``codec.load`` scans a text that is one JSON value from end to end (all that the stores write) with
    json.loads' own scanner, without its Python layers; anything else goes to json.loads itself."""

    def read(how: Any) -> tuple[str, Any]:
        try:
            return "value", how(text)
        except json.JSONDecodeError as exc:
            return "error", str(exc)

    expected = read(json.loads)
    calls: list[str] = []
    real = json.loads

    def counted(value: str) -> Any:
        calls.append(value)
        return real(value)

    monkeypatch.setattr(json, "loads", counted)
    assert repr(read(codec._loads)) == repr(expected)
    if expected[0] == "value" and text == text.strip():
        assert calls == []  # read without json.loads


def test_a_bounded_history_is_copied_once() -> None:
    """``bound`` returns a list of its own: the slice of the history list, not a copy of that slice too."""

    class Sliced(list[ConversationTurn]):
        """A history list that remembers the slices taken of it."""

        def __init__(self, items: list[ConversationTurn]) -> None:
            super().__init__(items)
            self.slices: list[Any] = []

        def __getitem__(self, index: Any) -> Any:
            part = super().__getitem__(index)
            if isinstance(index, slice):
                self.slices.append(part)
            return part

    turns = Sliced([ConversationTurn("user" if n % 2 else "assistant", f"turn {n}", 3) for n in range(40)])
    for kept in (bound(turns), bound(turns, max_turns=10), bound(turns, max_tokens=40, keep_last=1)):
        assert kept == turns[len(turns) - len(kept) :] and type(kept) is list
        assert any(kept is part for part in turns.slices)  # the slice itself
    assert bound(tuple(turns), max_turns=4) == turns[-4:]  # a tuple's slice is made a list


def test_the_last_agent_command_of_a_dict_is_read_without_an_abc_check(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = _context()
    checked = _abc_checks(monkeypatch)
    note_agent_command(ctx, {"action": "finish", "why": "done"})
    assert agent_finished(ctx) and checked == []
    note_agent_command(ctx, MappingProxyType({"action": "ask"}))  # any mapping still counts
    assert ctx.scratchpad["last_agent_command"] == {"action": "ask"} and not agent_finished(ctx)
    ctx.scratchpad["last_agent_command"] = MappingProxyType({"action": "finish"})
    assert agent_finished(ctx)


async def test_a_steps_texts_are_stored_without_sqlites_adaptation_of_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlite3 adapts a ``bytes`` parameter (a formatted AttributeError each time when nothing is registered);
    a text's digest is bound as a ``bytearray`` instead, stored as the same BLOB."""
    adapted: list[Any] = []

    def adapting(value: bytes) -> bytes:
        adapted.append(value)
        return value

    monkeypatch.setitem(sqlite3.adapters, (bytes, sqlite3.PrepareProtocol), adapting)
    store = await open_store(str(tmp_path / "flujo.db"))
    long = "a long text " * 10
    try:
        await store.create_run(RunRecord(run_id="r", pipeline_name="demo", status="running", created_at=1.0))
        messages = [{"role": "user", "content": f"{long} {n}"} for n in range(9)]
        step = StepRecord(run_id="r", path="p", name="p", kind="agent", status="completed", output=long)
        await store.record_step(step, [TraceEvent("agent.prompt", "p", {"messages": messages}, 2.0)])
        digest = texts.run_digest("r", long)
        assert digest not in adapted and b"" not in adapted  # (a long body, compressed, still is)
        [stored] = await store.steps("r")
        assert stored.output == long
    finally:
        await store.close()
    with sqlite3.connect(tmp_path / "flujo.db") as conn:
        hashes = {bytes(row[0]) for row in conn.execute("SELECT hash FROM texts")}
    assert digest in hashes and b"" in hashes  # a list's row has an empty digest


T = TypeVar("T")


def _imports_while(monkeypatch: pytest.MonkeyPatch, work: Callable[[], T]) -> tuple[list[str], T]:
    """What ``work`` imported (every import statement it ran), and what it returned."""
    imports: list[str] = []
    real = builtins.__import__

    def counted(name: str, *args: Any, **kwargs: Any) -> Any:
        imports.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", counted)
    try:
        return imports, work()
    finally:
        monkeypatch.undo()


def test_a_turns_chat_message_is_made_without_an_import_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    ConversationTurn("user", "first").message  # noqa: B018  # the class imported once, here
    imports, made = _imports_while(
        monkeypatch, lambda: [ConversationTurn("user", f"turn {n}").message for n in range(3)]
    )
    assert imports == [] and made == [ChatMessage("user", f"turn {n}") for n in range(3)]


def test_a_turns_tokens_are_counted_without_an_import_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    ConversationTurn("user", "first").tokens  # noqa: B018  # count_tokens imported once, here
    imports, counts = _imports_while(
        monkeypatch, lambda: [ConversationTurn("user", f"turn number {n}").tokens for n in range(3)]
    )
    assert imports == [] and counts == [tokens.count_tokens(f"turn number {n}") for n in range(3)]
