"""``render_blueprint``: the YAML ``flujo create`` writes for a set of answers.

The file is written by hand, line by line, rather than dumped: it uses the friendly presets
(``conversation: true``, ``stop_when: agent_finished``, ``output: {text: conversation_history}``), keeps the
keys in the order a reader wants them, and says in short comments what each one does. Text from the
answers is written as JSON strings, which are valid YAML double-quoted scalars, so any text is safe.
Templates appear only where a value must be read from a step (the question the agent asked, a score).
With ``model: scripted`` every agent gets replies that make the loop end by itself, so the blueprint
runs offline to completion with one answer per question.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from blueprints.scaffold.answers import ANSWER_STEP, GOAL_STEP, MAIN_AGENT, SUMMARIZER, WizardAnswers
from core import provider_of

_COMMENT_COLUMN = 40


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, indent: int, text: str, comment: str = "") -> None:
        line = " " * indent + text
        if comment:
            line = line.ljust(_COMMENT_COLUMN - 1) + " # " + comment
        self.lines.append(line)

    def blank(self) -> None:
        self.lines.append("")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _mapping(pairs: Mapping[str, object]) -> str:
    """A one-line flow mapping: ``{action: ask, question: "..."}``."""

    def show(value: object) -> str:
        if isinstance(value, str):
            return value if value.isidentifier() else _q(value)
        return json.dumps(value)

    return "{" + ", ".join(f"{key}: {show(value)}" for key, value in pairs.items()) + "}"


def _header(a: WizardAnswers, file: str) -> list[str]:
    run = f"flujo run {file}" + (' --input "..."' if a.start == "input" else "")
    lines = [
        f"# {file} — a loop to {a.purpose}.",
        "# Written by `flujo create`; edit it freely.",
        f"# Run it:     {run}",
        f"# Explain it: flujo explain {file}",
    ]
    if a.offline:
        lines += [
            "# Offline as written: the agents are scripted (they reply with `replies`, in order).",
            "# For a real model, replace `model: scripted` and `replies:` with e.g. model: openai:gpt-4o-mini",
            "# (export OPENAI_API_KEY=...) or model: ollama:llama3.2 (a local Ollama); see docs/configuration.md.",
        ]
    else:
        provider = provider_of(a.model)
        assert provider is not None, "the wizard accepts only models of the registry"
        lines.append(f"# Needs {provider.needs}.")
    return lines


@dataclass(frozen=True)
class _Shape:
    """What the main agent is told to reply, the JSON Schema of that reply, and its offline replies."""

    prompt: tuple[str, ...]
    schema: tuple[tuple[str, str], ...] = ()
    required: tuple[str, ...] = ()
    replies: tuple[Mapping[str, object] | str, ...] = ()


# "help me pick a restaurant" is what the person wants; the agent helps them "pick a restaurant".
_ASKING_FOR_HELP = re.compile(r"^(?:please\s+)?help\s+(?:me|us)\s+(?:to\s+)?", re.IGNORECASE)


def _for_them(purpose: str) -> str:
    """``purpose`` as what the agent helps a person do: ``help me pick a restaurant`` → ``pick a restaurant``."""
    return _ASKING_FOR_HELP.sub("", purpose, count=1) or purpose


def _shape(a: WizardAnswers) -> _Shape:
    finish = a.stop == "finish" or a.conversation  # a conversation stops on {"action": "finish"} anyway
    if a.human:
        ask = 'Reply with JSON only: {"action": "ask", "question": "..."}'
        replies: list[Mapping[str, object]] = [
            {"action": "ask", "question": "What matters most to you about it?"},
            {"action": "ask", "question": "Is there anything to avoid, or a deadline?"},
        ]
        if a.stop == "finish":
            replies.append({"action": "finish", "summary": "That is all I need. Thank you!"})
        return _Shape(
            (
                f"You help a person {_for_them(a.purpose)}. Ask one short question at a time.",
                *(
                    (f"{ask} to ask,", 'or {"action": "finish", "summary": "..."} when you know enough.')
                    if finish
                    else (f"{ask}.",)
                ),
            ),
            (
                ("action", "{type: string, enum: [ask, finish]}"),
                ("question", "{type: string}"),
                ("summary", "{type: string}"),
            ),
            ("action",),
            tuple(replies),
        )
    task = f"You work to {a.purpose}. Improve the draft you are given."
    if a.stop == "score":
        return _Shape(
            (task, 'Reply with JSON only: {"draft": "...", "score": N}, scoring the new draft from 1 to 10.'),
            (("draft", "{type: string}"), ("score", "{type: integer}")),
            ("draft", "score"),
            (
                {"draft": "A first draft.", "score": 4},
                {"draft": "A better draft.", "score": 7},
                {"draft": "A good draft.", "score": 9},
            ),
        )
    if finish:
        return _Shape(
            (
                task,
                'Reply with JSON only: {"action": "revise", "draft": "..."} while it can be better,',
                'or {"action": "finish", "draft": "..."} when it is good.',
            ),
            (("action", "{type: string, enum: [revise, finish]}"), ("draft", "{type: string}")),
            ("action", "draft"),
            (
                {"action": "revise", "draft": "A first draft."},
                {"action": "revise", "draft": "A better draft."},
                {"action": "finish", "draft": "A good draft."},
            ),
        )
    return _Shape(
        (task, "Reply with the new draft only."), replies=("A first draft.", "A better draft.", "A good draft.")
    )


def _main_agent(out: _Lines, a: WizardAnswers) -> None:
    shape = _shape(a)
    out.add(2, f"{MAIN_AGENT}:")
    out.add(4, f"model: {a.model}")
    out.add(4, "system_prompt: |")
    for line in shape.prompt:
        out.add(6, line)
    if shape.schema:
        out.add(4, "output_schema:")
        out.add(6, "type: object")
        out.add(6, "properties:")
        for key, value in shape.schema:
            out.add(8, f"{key}: {value}")
        out.add(6, f"required: [{', '.join(shape.required)}]")
    if a.offline:
        out.add(4, "replies:", "returned in order; the last one repeats")
        for reply in shape.replies:
            out.add(6, "- " + (_q(reply) if isinstance(reply, str) else _mapping(reply)))


def _agents(out: _Lines, a: WizardAnswers) -> None:
    out.add(0, "agents:")
    _main_agent(out, a)
    for name in a.extra_agents:
        out.add(2, f"{name}:")
        out.add(4, f"model: {a.model}")
        out.add(
            4, "system_prompt: " + _q(f"You are {name}, one step of a loop to {a.purpose}. Reply in one short line.")
        )
        if a.offline:
            out.add(4, "replies: " + json.dumps([f"{name}: noted."]))
    if a.conversation and a.history == "summarize":
        out.add(2, f"{SUMMARIZER}:")
        out.add(4, f"model: {a.model}")
        out.add(4, "system_prompt: " + _q("Summarise the conversation you are given in two sentences."))
        if a.offline:
            out.add(4, "replies: " + json.dumps(["The person said what they want and answered the first questions."]))


def _conversation_keys(out: _Lines, a: WizardAnswers) -> None:
    out.add(6, "conversation: true", "keep the history; send it to the agents")
    out.add(6, "history_management:")
    if a.history == "truncate_tokens":
        out.add(8, "strategy: truncate_tokens", "send the most recent turns...")
        out.add(8, f"max_tokens: {a.history_limit}", "...within this many tokens")
    elif a.history == "truncate_turns":
        out.add(8, "strategy: truncate_turns", "send the most recent turns...")
        out.add(8, f"max_turns: {a.history_limit}", "...at most this many")
    else:
        out.add(8, "strategy: summarize", "past max_turns, condense the oldest half")
        out.add(8, f"summarizer_agent: {SUMMARIZER}")
        out.add(8, f"max_turns: {a.history_limit}")
    if a.ai_turn_source == "named_steps":
        out.add(6, "ai_turn_source: named_steps", "only these steps speak as the assistant")
        out.add(6, f"named_steps: [{', '.join(a.named_steps)}]")
    elif a.ai_turn_source == "all_agents":
        out.add(6, "ai_turn_source: all_agents", "every agent's reply is an assistant turn")


def _stop_keys(out: _Lines, a: WizardAnswers) -> None:
    if a.stop == "rounds":
        words = "at most" if a.conversation else "exactly"
        out.add(6, f"max_loops: {a.max_loops}", f"{words} {a.max_loops} rounds")
        return
    out.add(6, f"max_loops: {a.max_loops}", f"at most {a.max_loops} rounds")
    if a.stop == "finish":
        out.add(6, "stop_when: agent_finished", 'ends when an agent replies {"action": "finish"}')
    elif a.stop == "score":
        out.add(6, "exit_expression: " + _q(f"steps.{a.step}.output.score >= {a.score}"), "ends on a good score")
    elif a.exit_expression is not None:
        out.add(6, "exit_expression: " + _q(a.exit_expression), "checked after each round")


def _body(out: _Lines, a: WizardAnswers) -> None:
    out.add(6, "body:")
    out.add(8, "- kind: step")
    out.add(10, f"name: {a.step}")
    out.add(10, f"uses: agents.{MAIN_AGENT}")
    if a.human:
        out.add(8, "- kind: hitl", "you answer the agent's question")
        out.add(10, f"name: {ANSWER_STEP}")
        out.add(10, "message: " + _q(f"{{{{ steps.{a.step}.output.question }}}}"))
    for name in a.extra_agents:
        out.add(8, "- kind: step")
        out.add(10, f"name: {name}")
        out.add(10, f"uses: agents.{name}")


def _output(out: _Lines, a: WizardAnswers) -> None:
    if a.returns == "last":
        out.add(6, "# no output: block, so the loop returns the last reply of its last round")
        return
    out.add(6, "output:")
    if a.returns == "conversation":
        out.add(8, "text: conversation_history", "the whole conversation, as lines")
        return
    out.add(8, "fields:")
    goal = "initial_prompt" if a.start == "input" else _q(f"{{{{ steps.{GOAL_STEP}.output }}}}")
    out.add(10, f"goal: {goal}")
    if a.conversation:
        out.add(10, "conversation: conversation_history")
    out.add(10, 'result: "{{ previous_step }}"', "the last reply")


def render_blueprint(answers: WizardAnswers, *, file: str) -> str:
    """The blueprint ``answers`` describe, as YAML text; ``file`` is where it will be written (for the header)."""
    a = answers
    out = _Lines()
    for line in _header(a, file):
        out.add(0, line)
    out.add(0, 'version: "0.1"')
    out.add(0, f"name: {a.name}")
    out.blank()
    _agents(out, a)
    out.blank()
    if a.max_cost_usd is not None or a.max_tokens is not None:
        limits = {k: v for k, v in (("max_cost_usd", a.max_cost_usd), ("max_tokens", a.max_tokens)) if v is not None}
        out.add(0, f"limits: {_mapping(limits)}", "flujo stops the run before passing them")
        out.blank()
    out.add(0, "steps:")
    if a.start == "ask":
        out.add(2, "- kind: hitl", "the conversation starts with your answer")
        out.add(4, f"name: {GOAL_STEP}")
        out.add(4, "message: " + _q(a.first_question))
        out.blank()
    out.add(2, "- kind: loop")
    out.add(4, f"name: {a.loop_name}")
    out.add(4, "loop:")
    if a.conversation:
        _conversation_keys(out, a)
    _stop_keys(out, a)
    _body(out, a)
    _output(out, a)
    return out.text()
