"""The answers ``flujo create`` collects: what the loop is for, which model, who speaks, how it
stops, what it returns. ``WizardAnswers`` is complete (every default filled in) and consistent (checked
by ``blueprints.scaffold.questions.resolve``); ``blueprints.scaffold.render`` turns it into YAML.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core import AiTurnSource, FlujoError, HistoryStrategy

Stop = Literal["finish", "rounds", "score", "expression"]
Start = Literal["ask", "input"]
Returns = Literal["conversation", "fields", "last"]

STOPS: tuple[Stop, ...] = ("finish", "rounds", "score", "expression")
STARTS: tuple[Start, ...] = ("ask", "input")
RETURNS: tuple[Returns, ...] = ("conversation", "fields", "last")
STRATEGIES: tuple[HistoryStrategy, ...] = ("truncate_tokens", "truncate_turns", "summarize")
TURN_SOURCES: tuple[AiTurnSource, ...] = ("last", "all_agents", "named_steps")

MAIN_AGENT = "assistant"
SUMMARIZER = "summarizer"
GOAL_STEP = "get_goal"
ANSWER_STEP = "answer"


class ScaffoldError(FlujoError):
    """A wizard answer that cannot make a working blueprint (a command-line mistake, not a file's)."""


@dataclass(frozen=True)
class WizardAnswers:
    """Everything the wizard needs to write a blueprint. Build it with ``resolve``, which fills defaults."""

    purpose: str
    name: str
    human: bool
    conversation: bool
    history: HistoryStrategy
    history_limit: int
    model: str
    step: str
    extra_agents: tuple[str, ...]
    ai_turn_source: AiTurnSource
    named_steps: tuple[str, ...]
    stop: Stop
    max_loops: int
    score: int
    exit_expression: str | None
    start: Start
    first_question: str
    returns: Returns
    max_cost_usd: float | None
    max_tokens: int | None

    @property
    def offline(self) -> bool:
        return self.model == "scripted"

    @property
    def loop_name(self) -> str:
        return "conversation" if self.conversation else "rounds"
