"""The wizard's questions, in the order they are asked, and ``resolve``: answers from flags, a person or
the defaults, checked into a complete ``WizardAnswers``.

Each question has a command-line flag (``flag``), a default that may depend on earlier answers, a
condition for when it applies (``--history`` only for a conversation) and a check. The terminal side
(``flujo_cli.commands.create``) only shows the questions and reads the answers; with ``ask=None``,
``resolve`` takes every answer from the flags or the defaults, so ``--no-interactive`` with the same
flags writes the same file as a session that typed those answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from blueprints.checking.checks.agents import PROVIDERS
from blueprints.reading.suggestions import did_you_mean
from blueprints.scaffold.answers import (
    ANSWER_STEP,
    GOAL_STEP,
    MAIN_AGENT,
    RETURNS,
    STARTS,
    STOPS,
    STRATEGIES,
    SUMMARIZER,
    TURN_SOURCES,
    ScaffoldError,
    WizardAnswers,
)
from core import PROVIDERS as PROVIDER_ROWS
from core import BoundsSettings, Expression, TemplateSyntax, provider_of

Values = Mapping[str, Any]
Kind = Literal["text", "choice", "yes_no", "number", "names", "amount"]
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LIMIT_DEFAULTS = {"truncate_tokens": 4096, "truncate_turns": 20, "summarize": 10}


def _always(values: Values) -> bool:
    return True


def _no_check(value: Any, values: Values) -> str | None:
    return None


@dataclass(frozen=True)
class Question:
    """One question of the wizard and its flag."""

    key: str
    flag: str
    text: Callable[[Values], str]
    kind: Kind
    default: Callable[[Values], Any]
    applies: Callable[[Values], bool] = _always
    needs: str = ""  # when it applies, for the message about a flag given where it does not
    ask_if: Callable[[Values], bool] | None = None  # asked only then (default: whenever it applies)
    choices: Callable[[Values], tuple[str, ...]] | None = None
    help: tuple[str, ...] = ()  # the choices spelled out, one per line, shown before the question
    check: Callable[[Any, Values], str | None] = _no_check

    def asked(self, values: Values) -> bool:
        return self.applies(values) and (self.ask_if is None or self.ask_if(values))


def slug(text: str) -> str:
    """A blueprint name from a purpose: ``clarify a goal`` → ``clarify_a_goal``."""
    words = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40].strip("_")
    if not words:
        return "my_loop"
    return words if words[0].isalpha() else f"loop_{words}"


def _identifier(value: Any, values: Values) -> str | None:
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        return f"{value!r} is not a name: use letters, digits and _, starting with a letter"
    return None


def _reserved(values: Values) -> set[str]:
    return {GOAL_STEP, ANSWER_STEP, "conversation", "rounds", MAIN_AGENT, SUMMARIZER}


def _check_step(value: Any, values: Values) -> str | None:
    problem = _identifier(value, values)
    if problem is None and value in _reserved(values):
        problem = f"{value!r} is taken by the blueprint the wizard writes; choose another name"
    return problem


def _check_extras(value: Any, values: Values) -> str | None:
    for name in value:
        problem = _check_step(name, values)
        if problem is not None:
            return problem
    if values.get("step") in value or len(set(value)) != len(value):
        return "each agent step needs its own name"
    return None


def _check_named(value: Any, values: Values) -> str | None:
    steps = (values["step"], *values["extra_agents"])
    unknown = [name for name in value if name not in steps]
    if not value:
        return "name at least one agent step"
    if unknown:
        return f"{', '.join(unknown)} is not an agent step of the loop (they are: {', '.join(steps)})"
    return None


def _priced(model: Any) -> bool:
    """Whether a run of ``model`` may cost money (``local`` runs on this machine: a cost limit is not asked)."""
    provider = provider_of(str(model))
    return provider is None or provider.priced


def _check_model(value: Any, values: Values) -> str | None:
    _, colon, model = str(value).partition(":")
    if value == "scripted" or (provider_of(str(value)) is not None and (model or not colon)):
        return None
    return f"{value!r} is not a model: use scripted (offline) or provider:model with provider {', '.join(PROVIDERS)}"


def _model_help() -> tuple[str, ...]:
    """The wizard's lines about models, one per provider of the registry."""
    return (
        "scripted: offline, with canned replies (no key needed)",
        *(f"{p.example}: {p.words}" for p in PROVIDER_ROWS),
    )


# The most tokens or turns --history-limit and --max-tokens may give. The schema asks only for a whole number
# from 1 (history_management.max_tokens/max_turns, limits.max_tokens), so a file with more is valid, but it
# says nothing a file with this says: a billion tokens is hundreds of times the largest context window a
# provider offers (a history budget past the prompt's room is cut to it anyway) and, as a run's budget,
# thousands of dollars at any listed price; a billion turns outlasts 1,000,000 rounds
# (bounds.loop_max_iterations) of a thousand speakers. 10**30 was written as given.
MOST_TOKENS = 1_000_000_000


def _check_count(what: Callable[[Values], str]) -> Callable[[Any, Values], str | None]:
    """A check of a whole number from 1 to ``MOST_TOKENS``; its message names the range and ``what`` it counts."""

    def check(value: Any, values: Values) -> str | None:
        if value is None or 1 <= value <= MOST_TOKENS:
            return None
        return f"give a whole number from 1 to {MOST_TOKENS:,} ({what(values)})"

    return check


# Per history strategy: the question the history limit asks, and what the number counts (its range's message).
_LIMITS = {
    "truncate_tokens": (
        "How many tokens of recent history should the agent be sent at most?",
        "the tokens of history sent: history_management.max_tokens",
    ),
    "truncate_turns": (
        "How many recent turns should the agent be sent at most?",
        "the turns of history sent: history_management.max_turns",
    ),
    "summarize": (
        "Summarize the older turns once the history is longer than how many turns?",
        "the turns kept before summarizing: history_management.max_turns",
    ),
}


def _limit_words(values: Values) -> str:
    return _LIMITS[values["history"]][1]


def _check_rounds(value: Any, values: Values) -> str | None:
    """``max_loops`` within the ceiling ``flujo validate`` holds a loop to (the default ``bounds.loop_max_iterations``,
    which the wizard's own check of the file it writes uses)."""
    ceiling = BoundsSettings().loop_max_iterations
    if value is None or 1 <= value <= ceiling:
        return None
    return f"give a whole number from 1 to {ceiling:,} (the rounds a loop may run: bounds.loop_max_iterations)"


def _check_score(value: Any, values: Values) -> str | None:
    return None if 1 <= value <= 10 else "the score is from 1 to 10"


def _check_expression(value: Any, values: Values) -> str | None:
    if not value:
        return "give the expression, e.g. iteration >= 3"
    try:
        Expression(value)
    except TemplateSyntax as exc:
        return f"the expression does not compile: {exc.message}"
    return None


def _check_text(value: Any, values: Values) -> str | None:
    return None if isinstance(value, str) and value.strip() and "\n" not in value else "give one line of text"


def _check_amount(value: Any, values: Values) -> str | None:
    return None if value is None or value > 0 else "give an amount above 0, or nothing for no limit"


def _stops(values: Values) -> tuple[str, ...]:
    return STOPS if not values["human"] else tuple(s for s in STOPS if s != "score")


def _returns(values: Values) -> tuple[str, ...]:
    return RETURNS if values["conversation"] else tuple(r for r in RETURNS if r != "conversation")


def _in(choices: Callable[[Values], tuple[str, ...]]) -> Callable[[Any, Values], str | None]:
    def check(value: Any, values: Values) -> str | None:
        allowed = choices(values)
        if value in allowed:
            return None
        if value == "score" and values.get("human"):
            return "score is for a loop without a person answering (--no-human); use finish, rounds or expression"
        if value == "conversation" and values.get("conversation") is False:
            return "conversation needs a conversation (--conversation); use fields or last"
        guess = did_you_mean(value, allowed) if isinstance(value, str) else ""
        return f"{value!r} is not one of {', '.join(allowed)}{guess}"

    return check


def _limit_text(values: Values) -> str:
    return _LIMITS[values["history"]][0]


def _conversation(values: Values) -> bool:
    return bool(values["conversation"])


def _text(words: str) -> Callable[[Values], str]:
    return lambda values: words


QUESTIONS: tuple[Question, ...] = (
    Question("purpose", "--purpose", _text("What is the loop for, in a few words?"), "text",
             lambda v: "clarify a goal", check=_check_text),
    Question("name", "--name", _text("Name of the blueprint"), "text", lambda v: slug(v["purpose"]),
             check=_identifier),
    Question("human", "--human/--no-human", _text("Does a person answer the agent in each round?"), "yes_no",
             lambda v: True),
    Question("conversation", "--conversation/--no-conversation",
             _text("Should the agent remember the conversation (its history is sent on every call)?"), "yes_no",
             lambda v: True),
    Question("history", "--history", _text("How should the history be kept short?"), "choice",
             lambda v: "truncate_tokens", applies=_conversation, needs="a conversation (--conversation)",
             choices=lambda v: STRATEGIES, check=_in(lambda v: STRATEGIES),
             help=("truncate_tokens: send the latest turns within a token budget",
                   "truncate_turns: send the latest N turns",
                   "summarize: a summarizer agent condenses the older turns")),
    Question("history_limit", "--history-limit", _limit_text, "number",
             lambda v: _LIMIT_DEFAULTS[v["history"]], applies=_conversation,
             needs="a conversation (--conversation)", check=_check_count(_limit_words)),
    Question("model", "--model", _text("Which model?"), "text", lambda v: "scripted", check=_check_model,
             help=_model_help()),
    Question("step", "--step", _text("Name of the agent's step"), "text",
             lambda v: "ask" if v["human"] else "draft", ask_if=lambda v: False, check=_check_step),
    Question("extra_agents", "--extra-agent",
             lambda v: "Other agents acting in each round, after " + ("your answer" if v["human"] else v["step"])
             + " (names, comma-separated; Enter for none)", "names", lambda v: (), check=_check_extras),
    Question("ai_turn_source", "--ai-turn-source", _text("Whose replies are the assistant's turns?"), "choice",
             lambda v: "named_steps" if v["extra_agents"] else "last", applies=_conversation,
             needs="a conversation (--conversation)", ask_if=lambda v: bool(v["extra_agents"]),
             choices=lambda v: TURN_SOURCES, check=_in(lambda v: TURN_SOURCES),
             help=("named_steps: only the steps you name", "all_agents: every agent step",
                   "last: the last agent step of the round")),
    Question("named_steps", "--named-step", _text("Which steps speak as the assistant (comma-separated)?"),
             "names", lambda v: (v["step"],),
             applies=lambda v: v["conversation"] and v["ai_turn_source"] == "named_steps",
             needs="--ai-turn-source named_steps", check=_check_named),
    Question("stop", "--stop", _text("How does the loop stop?"), "choice", lambda v: "finish", choices=_stops,
             check=_in(_stops),
             help=('finish: when the agent replies {"action": "finish"}', "rounds: after a number of rounds",
                   "score: when the agent scores its draft high enough (only without a person)",
                   "expression: your own exit_expression")),
    Question("max_loops", "--max-loops",
             lambda v: "How many rounds?" if v["stop"] == "rounds" else "At most how many rounds?", "number",
             lambda v: 5, check=_check_rounds),
    Question("score", "--score", _text("Stop when the score (1-10) reaches"), "number", lambda v: 8,
             applies=lambda v: v["stop"] == "score", needs="--stop score", check=_check_score),
    Question("exit_expression", "--exit-expression", _text("Stop when this expression is true"), "text",
             lambda v: None, applies=lambda v: v["stop"] == "expression", needs="--stop expression",
             check=_check_expression, help=("e.g. iteration >= 3, or steps.ask.output.action == 'done'",)),
    Question("start", "--start", _text("Where does the first message come from?"), "choice",
             lambda v: "ask" if v["human"] else "input", choices=lambda v: STARTS, check=_in(lambda v: STARTS),
             help=("ask: a question before the loop", "input: the text given with flujo run --input")),
    Question("first_question", "--first-question", _text("The first question"), "text",
             lambda v: "What do you want to achieve?", applies=lambda v: v["start"] == "ask",
             needs="--start ask", check=_check_text),
    Question("returns", "--returns", _text("What should the loop return?"), "choice",
             lambda v: "conversation" if v["conversation"] else "last", choices=_returns, check=_in(_returns),
             help=("conversation: the whole conversation as text",
                   "fields: the goal and the result (and the conversation) as a mapping",
                   "last: the agent's last reply")),
    Question("max_cost_usd", "--max-cost-usd", _text("Stop a run before it costs more than (USD; Enter for no limit)"),
             "amount", lambda v: None, applies=lambda v: v["model"] != "scripted", needs="a real model (--model)",
             ask_if=lambda v: _priced(v["model"]), check=_check_amount),
    Question("max_tokens", "--max-tokens", _text("Token limit for a run"), "number", lambda v: None,
             applies=lambda v: v["model"] != "scripted", needs="a real model (--model)", ask_if=lambda v: False,
             check=_check_count(_text("the tokens a run may use: limits.max_tokens"))),
)  # fmt: skip

Ask = Callable[[Question, Any, Values], Any]


def parse_answer(question: Question, text: str, values: Values) -> Any:
    """A typed answer to ``question`` (``ScaffoldError`` when it does not fit); checked like a flag's value."""
    text = text.strip()
    value: Any
    if question.kind == "yes_no":
        if text.lower() not in ("y", "yes", "n", "no"):
            raise ScaffoldError("answer yes or no")
        value = text.lower() in ("y", "yes")
    elif question.kind in ("number", "amount"):
        if not text and question.default(values) is None:
            value = None
        else:
            try:
                value = int(text) if question.kind == "number" else float(text)
            except ValueError:
                raise ScaffoldError("give a number" if question.kind == "amount" else "give a whole number") from None
    elif question.kind == "names":
        value = tuple(name.strip() for name in text.split(",") if name.strip())
    else:
        value = text or None
    problem = question.check(value, values)
    if problem is not None:
        raise ScaffoldError(problem)
    return value


def resolve(given: Mapping[str, Any], ask: Ask | None = None) -> WizardAnswers:
    """Complete answers: each from ``given`` (the flags), else ``ask`` (a person), else the default.

    A given value that does not fit, or that belongs to a question that does not apply (``--score``
    without ``--stop score``), is a ``ScaffoldError`` naming the flag.
    """
    values: dict[str, Any] = {}
    for question in QUESTIONS:
        if not question.applies(values):
            if given.get(question.key) is not None:
                raise ScaffoldError(f"{question.flag} does not apply here: it needs {question.needs}")
            values[question.key] = question.default(values)
            continue
        if given.get(question.key) is not None:
            value = given[question.key]
        elif ask is not None and question.asked(values):
            values[question.key] = ask(question, question.default(values), values)
            continue
        else:
            value = question.default(values)
        problem = question.check(value, values)
        if problem is not None:
            raise ScaffoldError(f"{question.flag.split('/')[0]}: {problem}")
        values[question.key] = value
    values["extra_agents"] = tuple(values["extra_agents"])
    values["named_steps"] = tuple(values["named_steps"])
    return WizardAnswers(**values)
