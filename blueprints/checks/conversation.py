"""Checks of what the steps of a ``conversation: true`` loop will be sent (docs/conversation.md).

The run never serialises the context object into a prompt when a step's input *is* that object (a lone
``{{ previous_step }}`` from iteration 2, or ``{{ context }}``): it sends the latest user turn instead.
A template that embeds the whole object in a longer text (``"Go on: {{ previous_step }}"``,
``{{ context | tojson }}``) cannot be told apart from data at run time, so it is reported here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from blueprints.checks.checker import Checker
from blueprints.checks.sites import StepSite
from blueprints.schema import AgentStepModel, LoopSettingsModel, PropagationModel
from core.templates import whole_references

_LONE = re.compile(r"\s*\{\{\s*(previous_step|context)\s*\}\}\s*")


def _propagates_context(loop: LoopSettingsModel) -> bool:
    choice = loop.propagation
    word = choice.next_input if isinstance(choice, PropagationModel) else choice
    return word is None or word == "context"  # conversation: true implies propagation: context


def check_conversation_inputs(checker: Checker, sites: Sequence[StepSite]) -> None:
    """Warn where a conversation step's ``input:`` would send the whole context object as text."""
    for site in sites:
        step, loop = site.step, site.loop
        if not isinstance(step, AgentStepModel) or step.input is None or loop is None or not loop.conversation:
            continue
        if _LONE.fullmatch(step.input):
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
