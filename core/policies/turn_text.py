"""A step's ``turn_text``: what a person reads of the turn its result makes (docs/conversation.md).

The turn keeps the result as it was said (what the history sends to agents); ``turn_text`` only changes
its text in ``output: {text: conversation_history}``, ``scratchpad.history`` and ``flujo threads show``.
It is rendered when the result makes a turn (live or replayed, so a resumed run shows the same), with the
step's usual variables and ``output``, the result (a reply that is a JSON object read as that mapping).
"""

from __future__ import annotations

from typing import Any

from core.context import RunContext
from core.conversation import makes_turn, parse_reply
from core.policies.frame import scope
from core.steps.kinds import AgentStep, WorkflowStep


def shown_turn(step: AgentStep | WorkflowStep, ctx: RunContext, data: Any, output: Any) -> str | None:
    """``step``'s ``turn_text`` rendered for ``output`` (its input was ``data``); None when it has none or
    its result makes no turn."""
    template = step.turn_text
    if template is None or not makes_turn(ctx, step.name, hitl=False):
        return None
    variables = scope(ctx, data)
    variables["output"] = parse_reply(output)
    return template.render_text(variables)
