"""The summarizer of a conversation loop that summarizes: the loop's own, the settings' default, or its speaker.

A loop summarizes when its ``history_management.strategy`` is ``summarize``, or, without one, when the
configured default ``history.strategy`` is. Its summarizer is its ``summarizer_agent`` (an agent under
``agents:``), else the settings' ``history.summarizer_model``, else the loop's last speaking agent with the
built-in summary prompt (``blueprints.checking.speakers.speaker_summarizer``); a loop none of whose steps is sent the
history needs none. Without any (that agent is scripted or a script, or nothing speaks) it is an error, the
same in ``flujo validate`` and ``flujo run``: both check the blueprint against the settings they were given
(``Checker.history``); nothing here reads them.
"""

from __future__ import annotations

from blueprints.checking.checks.checker import Checker
from blueprints.checking.speakers import speaker_summarizer
from blueprints.reading.positions import Path
from blueprints.reading.suggestions import did_you_mean
from blueprints.schema import LoopSettingsModel
from core import HistorySettings

MISSING_HINT = (
    "name one in history_management.summarizer_agent: <an agent under agents>, or configure a default: "
    "summarizer_model under [history] in flujo.toml, FLUJO_HISTORY__SUMMARIZER_MODEL, or "
    "--set history.summarizer_model=openai:gpt-4o-mini"
)


def summarizes(loop: LoopSettingsModel, history: HistorySettings) -> bool:
    """Whether ``loop`` (a ``conversation: true`` loop) uses the ``summarize`` strategy."""
    manage = loop.history_management
    if manage is not None and "strategy" in manage.fields_given:
        return manage.strategy == "summarize"
    return history.strategy == "summarize"


def missing_summarizer(loop: LoopSettingsModel) -> str:
    """The message for a loop that summarizes with no summarizer (``MISSING_HINT`` is its hint)."""
    manage = loop.history_management
    if manage is not None and "strategy" in manage.fields_given:
        return "strategy: summarize needs summarizer_agent, and no default summarizer is configured"
    return (
        "this conversation loop summarizes (the configured history.strategy is summarize) but has no "
        "summarizer_agent, and no default summarizer is configured"
    )


def check_summarizer(checker: Checker, loop: LoopSettingsModel, path: Path) -> None:
    """``summarizer_agent`` names an agent; a loop that summarizes has a summarizer."""
    manage = loop.history_management
    name = manage.summarizer_agent if manage is not None else None
    if name is not None and name not in checker.model.agents:
        agents = list(checker.model.agents)
        checker.error(
            "unknown-reference",
            f"summarizer_agent {name!r} is not defined under agents{did_you_mean(name, agents)}",
            checker.at((*path, "history_management", "summarizer_agent")),
        )
    if name is not None or checker.history.summarizer_model is not None or not summarizes(loop, checker.history):
        return
    speaker = speaker_summarizer(loop, checker.model.agents)
    if speaker.agent is not None or not speaker.needed:
        return
    written = manage is not None and "strategy" in manage.fields_given
    where = (*path, "history_management", "strategy") if written else (*path, "conversation")
    checker.error("missing-field", missing_summarizer(loop), checker.at(where), missing_hint(speaker.reason))


def missing_hint(reason: str) -> str:
    """``MISSING_HINT``, after why the loop's last speaking agent cannot summarize in its place."""
    return f"{reason}; {MISSING_HINT}"
