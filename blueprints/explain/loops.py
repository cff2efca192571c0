"""A loop in plain words: how it starts, how it stops, what its agents hear, what it hands on and returns.

These follow the compiler's rules (``blueprints.compiling.loops``) and the engine's (``core.conversation``):
the exit precedence (an explicit ``exit_expression``/``exit_condition`` beats ``stop_when``, which
``conversation: true`` implies), ``max_loops`` 10 by default, ``propagation: auto``, which steps speak as
the user and the assistant, and how the history is bounded (the loop's ``history_management`` keys beat
the configured ``[history]`` defaults).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from blueprints.checking.checks.sites import walk
from blueprints.checking.speakers import asks_user, last_step, own_steps, speaker_summarizer, speaks, user_sources
from blueprints.compiling.loops import DEFAULT_MAX_LOOPS
from blueprints.explain.words import condition_words, quote, sentence, template_words
from blueprints.schema import (
    AgentModel,
    AgentStepModel,
    FieldsOutputModel,
    HitlStepModel,
    InitOpModel,
    InitPresetsModel,
    LoopSettingsModel,
    LoopStepModel,
    PropagationModel,
    TextOutputModel,
)
from core import HistorySettings

FINISH = '{"action": "finish"}'


def max_loops(loop: LoopSettingsModel) -> int:
    return loop.max_loops or DEFAULT_MAX_LOOPS


def finishes_early(loop: LoopSettingsModel) -> bool:
    """Whether ``stop_when: agent_finished`` is in effect (written, or implied by ``conversation: true``)."""
    explicit = loop.exit_expression is not None or loop.exit_condition is not None
    return not explicit and (loop.stop_when == "agent_finished" or loop.conversation)


def stop_words(loop: LoopSettingsModel) -> str:
    limit = max_loops(loop)
    cap = f"after {limit} iteration{'s' if limit > 1 else ''}" + (
        " (the default max_loops)" if loop.max_loops is None else ""
    )
    ignored = " (stop_when is ignored: an explicit exit wins)" if loop.stop_when else ""
    if loop.exit_expression is not None:
        words = condition_words(loop.exit_expression, previous="the iteration's last output")
        said = words if words is not None else f"{quote(loop.exit_expression)} is true"
        return f"When {said}, checked after each iteration (exit_expression), or {cap}{ignored}."
    if loop.exit_condition is not None:
        return (
            f"When the Python function {loop.exit_condition} returns a true value, called after each iteration"
            f" with the last output and the context (exit_condition), or {cap}{ignored}."
        )
    if loop.stop_when == "agent_finished" or loop.conversation:
        implied = ", implied by conversation: true" if loop.stop_when is None else ""
        return (
            f"As soon as an agent replies {FINISH}: the iteration ends right after that step, so the steps after"
            f" it are skipped (stop_when: agent_finished{implied}); or {cap}."
        )
    return f"After exactly {limit} iteration{'s' if limit > 1 else ''}: no exit condition is set" + (
        " (the default max_loops is 10)." if loop.max_loops is None else "."
    )


def _target(target: str) -> str:
    path = target.removeprefix("context.").removeprefix("scratchpad.")
    return f"scratchpad.{path}"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return template_words(value, previous="the loop's input")
    return json.dumps(value, ensure_ascii=False)


def init_words(init: Sequence[InitOpModel] | InitPresetsModel | None, *, conversation: bool = False) -> str | None:
    """What ``init`` does before the first iteration (or item), or None. In a conversation
    ``init.history`` seeds the first turn (``history_words`` says so); outside one it writes a line."""
    said: list[str] = []
    if isinstance(init, InitPresetsModel):
        if init.history is not None and not conversation:
            start = init.history.start_with
            seed = f"{start.from_step}'s output" if start.from_step is not None else "the loop's input"
            prefix = f" prefixed {quote(start.prefix)}" if start.prefix else ""
            said.append(f"appends {seed}{prefix} to scratchpad.history")
        if init.notes is not None:
            said.append(f"sets scratchpad.notes to {_value(init.notes.set)}")
    elif init is not None:
        for op in init:
            if op.set is not None:
                said.append(f"sets {_target(op.set.target)} to {_value(op.set.value)}")
            if op.append is not None:
                said.append(f"appends {_value(op.append.value)} to {_target(op.append.target)}")
            if op.merge is not None:
                said.append(f"merges {_value(op.merge.value)} into {_target(op.merge.target)}")
    return sentence("; ".join(said)) if said else None


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


def _speakers(loop: LoopSettingsModel, agents: dict[str, AgentModel]) -> tuple[str, str]:
    """Who the user is and who the assistant is, in words."""
    hitl_is_user, named_users = user_sources(loop)
    steps = own_steps(loop.body)
    hitl = [s.name for s in steps if isinstance(s, HitlStepModel) or asks_user(s)] if hitl_is_user else []
    users = [f"your answers at {_names(hitl)}"] if hitl else []
    if named_users:
        users.append(f"the outputs of {_names([n for n in loop.user_turn_sources or () if n in named_users])}")
    user_words = " and ".join(users) + " are user turns" if users else "no step adds user turns"
    source = loop.ai_turn_source or "last"
    if source == "named_steps":
        speaking = [name for name in loop.named_steps or () if name not in named_users]
        assistant = f"the replies of {_names(speaking)} are assistant turns (ai_turn_source: named_steps)"
    elif source == "all_agents":
        speaking = [s.name for s in steps if speaks(s, agents) and s.name not in named_users]
        assistant = f"the replies of every agent ({_names(speaking)}) are assistant turns (all_agents)"
    else:
        last = last_step(loop)
        if last is not None and speaks(last, agents):
            assistant = f"the reply of {last.name} (the last agent step) is an assistant turn"
        else:
            assistant = "no step adds assistant turns (the last step is not an agent; see ai_turn_source)"
    return user_words, assistant


def summarizer_name(loop: LoopSettingsModel, defaults: HistorySettings, agents: Mapping[str, AgentModel]) -> str | None:
    """Who summarises a ``summarize`` loop: its ``summarizer_agent``, else the configured default summarizer,
    else the loop's last speaking agent (``blueprints.checking.speakers.speaker_summarizer``)."""
    manage = loop.history_management
    if manage is not None and manage.summarizer_agent is not None:
        return manage.summarizer_agent
    if defaults.summarizer_model is not None:
        return f"the configured summarizer ({defaults.summarizer_model}, history.summarizer_model)"
    speaker = speaker_summarizer(loop, agents).agent
    if speaker is not None:
        return f"{speaker} (the loop's last speaking agent, with the built-in summary prompt)"
    return None


def _bound(loop: LoopSettingsModel, defaults: HistorySettings, agents: Mapping[str, AgentModel]) -> str:
    manage = loop.history_management
    given = manage.fields_given if manage is not None else set()
    values = {
        "strategy": manage.strategy if manage is not None and "strategy" in given else defaults.strategy,
        "max_tokens": manage.max_tokens if manage is not None and manage.max_tokens is not None else None,
        "max_turns": manage.max_turns if manage is not None and manage.max_turns is not None else None,
    }
    defaulted: list[str] = []

    def pick(key: str, fallback: Any) -> Any:
        if values[key] is None or (key == "strategy" and key not in given):
            defaulted.append(key)
            return fallback
        return values[key]

    strategy = pick("strategy", defaults.strategy)
    tokens = turns = 0
    if strategy == "truncate_tokens":
        tokens = pick("max_tokens", defaults.max_tokens)
        words = f"the most recent turns within {tokens} tokens"
    elif strategy == "truncate_turns":
        turns = pick("max_turns", defaults.max_turns)
        words = f"the most recent {turns} turns"
    else:
        turns, tokens = pick("max_turns", defaults.max_turns), pick("max_tokens", defaults.max_tokens)
        ratio = (
            manage.summarize_ratio if manage is not None and "summarize_ratio" in given else defaults.summarize_ratio
        )
        summarizer = summarizer_name(loop, defaults, agents)
        if summarizer is None and not speaker_summarizer(loop, agents).needed:
            words = f"the most recent turns within {turns} turns and {tokens} tokens (nothing is summarized)"
        elif summarizer is None:
            words = (
                f"the most recent turns within {turns} turns and {tokens} tokens"
                " (no summarizer: set history_management.summarizer_agent or history.summarizer_model)"
            )
        else:
            words = (
                f"the history; once the turns since the last summary are over {turns} turns or {tokens} tokens,"
                f" {summarizer} condenses the last summary and the oldest {round(ratio * 100)}% of them into one"
                " summary, sent in place of those turns (the conversation itself is kept whole), then the most"
                " recent turns within those bounds"
            )
    source = f"; {', '.join(defaulted)} from the configured [history] defaults" if defaulted else ""
    return f"{words} (strategy {strategy}{source})"


def history_words(
    loop: LoopStepModel, *, received: str, agents: dict[str, AgentModel], defaults: HistorySettings, outer: str | None
) -> str:
    """Who speaks in a ``conversation: true`` loop, what its agents are sent and how it is bounded."""
    settings = loop.loop
    seed = f"the loop's input ({received})"
    prefix = ""
    if isinstance(settings.init, InitPresetsModel) and settings.init.history is not None:
        start = settings.init.history.start_with
        if start.from_step is not None:
            seed = f"{start.from_step}'s output"
        if start.prefix.strip() and start.prefix.strip().rstrip(":").lower() != "user":
            prefix = f" (prefixed {quote(start.prefix)})"
    users, assistant = _speakers(settings, agents)
    quiet = [
        s.step.name
        for s in walk(settings.body, ())
        if isinstance(s.step, AgentStepModel) and s.step.use_history is False
    ]
    bound = _bound(settings, defaults, agents)
    sent = f"Each agent step in the loop is sent {bound}, also within its model's context window"
    if quiet:
        sent += f"; except {_names(quiet)} (use_history: false), sent no history"
    if settings.history_template:
        sent += "; rendered with the loop's history_template"
    text = f"Starts with {seed} as the first user turn{prefix}; {users}; {assistant}. {sent}."
    if outer is not None:
        text += f" This loop keeps a history of its own: {outer}'s conversation is not sent inside it."
    return text


def next_input_words(loop: LoopSettingsModel, *, last: str) -> str:
    """What each iteration after the first receives; ``last`` says what the body's last step outputs."""
    choice = loop.propagation
    previous = f"the previous iteration's last output ({last})"
    if choice is None:
        if loop.conversation:
            return (
                "The context: the state is carried in the context (conversation: true implies propagation: context);"
                " agents are sent the conversation, never the context."
            )
        return previous[0].upper() + previous[1:] + "."
    word = choice.next_input if isinstance(choice, PropagationModel) else choice
    if word == "auto":
        updates = [
            s.step.name for s in walk(loop.body, ()) if isinstance(s.step, AgentStepModel) and s.step.updates_context
        ]
        if updates:
            return f"The context (propagation: auto, because {_names(updates)} has updates_context: true)."
        return previous[0].upper() + previous[1:] + " (propagation: auto: no step has updates_context: true)."
    if word == "context":
        return "The context, as a mapping (propagation: context)."
    if word == "previous_output":
        return previous[0].upper() + previous[1:] + " (propagation: previous_output)."
    said = template_words(word, previous="the last output")
    return f"{said[0].upper()}{said[1:]} (propagation.next_input)."


def output_words(
    template: str | None,
    output: TextOutputModel | FieldsOutputModel | dict[str, Any] | None,
    *,
    conversation: bool,
    default: str,
    previous: str = "the last output",
    received: str = "the run's input",
) -> str:
    """What a loop (or a map's finalize) returns; ``received`` says what a loop receives (``initial_prompt``)."""
    given = received if received == "the run's input" else f"the loop's input ({received})"
    if template is not None:
        return sentence(f"{_field(template, conversation, previous, given)} (output_template)")
    if output is None:
        return default
    if isinstance(output, TextOutputModel):
        return sentence(f"{_field(output.text, conversation, previous, given)} (output.text)")
    fields = output.fields if isinstance(output, FieldsOutputModel) else output
    listed = "; ".join(f"{key} = {_field(value, conversation, previous, given)}" for key, value in fields.items())
    return f"A mapping: {listed}."


def _field(value: Any, conversation: bool, previous: str, given: str) -> str:
    if value == "conversation_history":
        if conversation:
            return 'the whole conversation as "User: ..." / "Assistant: ..." lines'
        return "the lines of scratchpad.history, joined with newlines"
    if value == "initial_prompt":
        return given
    if isinstance(value, str):
        said = template_words(value, previous=previous)
        return f"the text {said}" if said.startswith('"') else said
    return json.dumps(value, ensure_ascii=False)
