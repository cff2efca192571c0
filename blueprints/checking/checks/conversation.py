"""Checks of what the steps of a ``conversation: true`` loop will be sent (docs/conversation.md).

History reaches a script agent (``python:``, ``command:``) as a text block before a text input; a
structured input cannot carry it. Where the input is structured for sure (a ``{{ {...} }}`` literal, the
outputs of a parallel or a map just before), ``history-not-sent`` says so; the run also records a
``history.not_injected`` trace event whenever it happens.

The run never serialises the context object into a prompt when a step's input *is* that object (a lone
``{{ previous_step }}`` from iteration 2, or ``{{ context }}``): it sends the latest user turn instead.
A template that embeds the whole object in a longer text (``"Go on: {{ previous_step }}"``,
``{{ context | tojson }}``) cannot be told apart from data at run time, so it is reported here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite, walk
from blueprints.checking.speakers import silent_reason
from blueprints.schema import (
    AgentStepModel,
    AnyStepModel,
    LoopSettingsModel,
    LoopStepModel,
    MapStepModel,
    ParallelStepModel,
    PropagationModel,
)
from core import builds_structure, whole_references

_LONE = r"\s*\{\{\s*(previous_step|context)\s*\}\}\s*"  # compiled at its first use (re's cache)


def _propagates_context(loop: LoopSettingsModel) -> bool:
    choice = loop.propagation
    word = choice.next_input if isinstance(choice, PropagationModel) else choice
    return word is None or word == "context"  # conversation: true implies propagation: context


def _inner_steps(body: Sequence[AnyStepModel]) -> list[AnyStepModel]:
    """The steps of a conversation's body, without those of a nested conversation (which owns its turns)."""
    nested = [
        site.path for site in walk(body, ()) if isinstance(site.step, LoopStepModel) and site.step.loop.conversation
    ]
    return [
        site.step for site in walk(body, ()) if not any(site.path[: len(p)] == p and site.path != p for p in nested)
    ]


def check_conversation_speakers(checker: Checker, sites: Sequence[StepSite]) -> None:
    """Warn where a ``conversation: true`` loop has no step that can make an assistant turn (by the rules of
    ``blueprints.checking.speakers``, the engine's)."""
    for site in sites:
        step = site.step
        if not isinstance(step, LoopStepModel) or not step.loop.conversation:
            continue
        reason = silent_reason(step.loop, _inner_steps(step.loop.body), checker.model.agents)
        if reason is None:
            continue
        checker.warning(
            "silent-conversation",
            f"loop {step.name!r} has conversation: true, but {reason}: the conversation never gets an assistant turn",
            checker.key_at((*site.path, "loop", "conversation")),
            "end the body with a step that calls an agent (uses: agents.<name>), choose the speakers with "
            "ai_turn_source: all_agents or named_steps, or leave out conversation: true",
        )


def check_conversation_inputs(checker: Checker, sites: Sequence[StepSite]) -> None:
    """Warn where a conversation step's ``input:`` would send the whole context object as text."""
    for site in sites:
        step, loop = site.step, site.loop
        if not isinstance(step, AgentStepModel) or step.input is None or loop is None or not loop.conversation:
            continue
        if re.fullmatch(_LONE, step.input):
            continue  # the step is sent the latest user turn, as without input
        whole = whole_references(step.input)
        first_in_body = site.path[-3:] == ("loop", "body", 0)
        if "context" in whole:
            reason = "reads the whole context object"
        elif "previous_step" in whole and first_in_body and _propagates_context(loop):
            reason = "reads previous_step, which from iteration 2 is the whole context this loop propagates"
        else:
            continue
        checker.warning(
            "context-in-prompt",
            f"step {step.name!r}: input {step.input!r} {reason}; it would be sent to the agent as text, "
            "with the whole conversation in it",
            checker.at((*site.path, "input")),
            "leave input out (the step is then sent the latest user turn after the history), "
            "or read one value, e.g. {{ context.scratchpad.goal }}",
        )


def _is_script(checker: Checker, step: AgentStepModel) -> bool:
    if isinstance(step.agent, str):
        return True  # agent: "module:function"
    if step.uses is None or not step.uses.startswith("agents."):
        return False
    agent = checker.model.agents.get(step.uses.removeprefix("agents."))
    return agent is not None and (agent.python is not None or agent.command is not None)


def _structured_output(step: AnyStepModel) -> bool:
    if isinstance(step, ParallelStepModel):
        return step.settings.reduce in (None, "keys", "values", "dedupe")
    return isinstance(step, MapStepModel) and step.map.finalize is None


def check_history_reaches_scripts(checker: Checker, sites: Sequence[StepSite]) -> None:
    """Warn where a script agent in a conversation gets a structured input, so no history block."""
    by_path = {site.path: site for site in sites}
    for site in sites:
        step, loop = site.step, site.loop
        if not isinstance(step, AgentStepModel) or loop is None or not loop.conversation:
            continue
        if step.use_history is False or not _is_script(checker, step):
            continue
        if step.input is not None:
            structured = builds_structure(step.input)
        else:
            *parent, number = site.path
            before = by_path.get((*parent, number - 1)) if isinstance(number, int) and number > 0 else None
            structured = before is not None and _structured_output(before.step)
        if structured:
            checker.warning(
                "history-not-sent",
                f"step {step.name!r}: its input is structured, so the conversation history cannot be put "
                "before it; the script agent gets no history",
                checker.at((*site.path, "input")) if step.input is not None else checker.at(site.path),
                "read context.conversation_history in the script, or set use_history: false to say it needs none",
            )


def check_use_history_placement(checker: Checker, sites: Sequence[StepSite]) -> None:
    """Warn at ``use_history`` outside a ``conversation: true`` loop, where there is no history to send."""
    for site in sites:
        step = site.step
        if not isinstance(step, AgentStepModel) or step.use_history is None:
            continue
        if site.loop is None or not site.loop.conversation:
            checker.warning(
                "ignored-key",
                "use_history has no effect outside a loop with conversation: true",
                checker.key_at((*site.path, "use_history")),
            )
