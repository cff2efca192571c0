"""Checks of ``kind: ensemble`` steps: what each participant is, who it depends on, and the limits.

Errors: a participant that is not exactly one of ``uses``/``script``/``model_profile``/``ask`` (or only
``answered_by``: a simulated person plays it); an unknown agent (``answered_by`` too), import, profile
(listing the known ones), script file or participant (did-you-mean); a condition
that does not compile or reads an unknown name; an ensemble where no participant can ever start (every
one waits for another: a dependency cycle, and none opens it with ``triggers_conversation``). Warnings: a
participant that can never run, and limits that can never be reached. Keys of a participant's
reply are known only at run time, so ``context.<key>`` is never reported.
"""

from __future__ import annotations

from blueprints.checking.checks.agents import check_agent_ref
from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.checking.checks.texts import check_text
from blueprints.reading.positions import Path
from blueprints.reading.suggestions import did_you_mean, one_of
from blueprints.schema import EnsembleStepModel, ParticipantModel

CONDITION_NAMES = ("turn_count", "history", "round")
_KINDS = ("uses", "script", "model_profile", "ask")


def check_ensemble(checker: Checker, site: StepSite) -> None:
    step = site.step
    assert isinstance(step, EnsembleStepModel)
    block = step.ensemble
    here = (*site.path, "ensemble")
    names = [p.name for p in block.participants]
    seen: set[str] = set()
    for number, participant in enumerate(block.participants):
        path = (*here, "participants", number)
        if participant.name in seen:
            checker.error(
                "duplicate-name", f"two participants are named {participant.name!r}", checker.at((*path, "name"))
            )
        seen.add(participant.name)
        _check_kind(checker, participant, path)
        for index, dep in enumerate(participant.dependencies()):
            dep_path = (*path, "depends_on", index)
            if dep.participant not in names:
                checker.error(
                    "unknown-reference",
                    f"participant {participant.name!r} depends on {dep.participant!r}, which is not a participant"
                    f"{did_you_mean(dep.participant, names)}",
                    checker.at(
                        dep_path if isinstance(participant.depends_on[index], str) else (*dep_path, "participant")
                    ),
                    f"participants: {one_of(names)}",
                )
            if dep.condition is not None:
                check_text(
                    checker, (*dep_path, "condition"), dep.condition, expression=True,
                    extra_names=CONDITION_NAMES, step_names=names, any_context=True,
                )  # fmt: skip
            limit = _limit(participant, block.max_agent_executions)
            if dep.max_executions is not None and dep.max_executions > limit:
                checker.warning(
                    "unreachable-limit",
                    f"max_executions: {dep.max_executions} can never be reached: {participant.name!r} speaks at most"
                    f" {limit} time(s)",
                    checker.at((*dep_path, "max_executions")),
                    "raise the participant's max_turns, or lower max_executions",
                )
        if participant.ask is not None:
            check_text(
                checker, (*path, "ask"), participant.ask,
                extra_names=CONDITION_NAMES, step_names=names, any_context=True,
            )  # fmt: skip
        if participant.answered_by is not None:
            who = f"participant {participant.name!r} is answered_by"
            check_agent_ref(checker, participant.answered_by, (*path, "answered_by"), who)
    for name, cap in block.max_agent_executions.items():
        key = (*here, "max_agent_executions", name)
        if name not in names:
            checker.error(
                "unknown-reference",
                f"max_agent_executions names {name!r}, which is not a participant{did_you_mean(name, names)}",
                checker.key_at(key),
                f"participants: {one_of(names)}",
            )
            continue
        turns = block.participants[names.index(name)].max_turns
        if cap >= turns:
            checker.warning(
                "unreachable-limit",
                f"max_agent_executions: {name}: {cap} can never be reached: its max_turns is {turns}",
                checker.at(key),
                "the lower of the two applies",
            )
    manage = block.history_management
    if manage is not None and (manage.strategy == "summarize" or manage.summarizer_agent is not None):
        setting = "summarizer_agent" if manage.summarizer_agent is not None else "strategy"
        checker.warning(
            "ignored-key",
            f"ensemble {step.name!r} does not summarize: its history is bounded like truncate_tokens",
            checker.key_at((*here, "history_management", setting)),
            "use strategy: truncate_tokens or truncate_turns",
        )
    _check_reachable(checker, step, here)


def _named_at(participant: ParticipantModel, index: int, path: Path) -> Path:
    """Where dependency ``index`` names its participant: the entry itself, or its ``participant`` key."""
    return path if isinstance(participant.depends_on[index], str) else (*path, "participant")


def _limit(participant: ParticipantModel, caps: dict[str, int]) -> int:
    cap = caps.get(participant.name)
    return participant.max_turns if cap is None else min(cap, participant.max_turns)


def _check_kind(checker: Checker, participant: ParticipantModel, path: Path) -> None:
    values = (participant.uses, participant.script, participant.model_profile, participant.ask)
    given = [kind for kind, value in zip(_KINDS, values, strict=True) if value is not None]
    if not given and participant.answered_by is not None:  # a simulated person plays it; nothing else to check
        return
    if len(given) != 1:
        found = f" (it sets {' and '.join(given)})" if given else ""
        checker.error(
            "missing-field" if not given else "bad-value",
            f"participant {participant.name!r} must set exactly one of uses, script, model_profile or ask{found}",
            checker.at(path),
            "uses: agents.<name> | imports.<name>, script: path/to/script.py, model_profile: NAME, or ask: 'question'",
        )
        return
    if participant.type == "script" and participant.script is None:
        checker.error(
            "bad-value", f"participant {participant.name!r} has type: script but no script", checker.at((*path, "type"))
        )
    if participant.type == "llm" and participant.model_profile is None and participant.uses is None:
        checker.error(
            "bad-value",
            f"participant {participant.name!r} has type: llm but no model_profile",
            checker.at((*path, "type")),
        )
    model = checker.model
    if participant.prompt is not None and not _is_model(participant, checker):
        checker.warning(
            "ignored-key",
            f"prompt has no effect on participant {participant.name!r}, which is not a model",
            checker.key_at((*path, "prompt")),
            "a script reads what it needs from its JSON (and config); a person is asked the ask question",
        )
    if participant.uses is not None:
        section, _, name = participant.uses.partition(".")
        known = list(model.agents) if section == "agents" else list(model.imports)
        if name not in known:
            checker.error(
                "unknown-reference",
                f"{participant.uses} is not defined{did_you_mean(name, known)}",
                checker.at((*path, "uses")),
                f"define it under {section}:",
            )
    if participant.script is not None and not (checker.folder / participant.script).is_file():
        checker.error(
            "unknown-reference",
            f"script {participant.script!r} not found (looked in {checker.folder})",
            checker.at((*path, "script")),
            "script paths are relative to the folder of the blueprint",
        )
    profiles = checker.profiles
    if participant.model_profile is not None and profiles is not None and participant.model_profile not in profiles:
        known_profiles = f"known profiles: {one_of(sorted(profiles))}" if profiles else "no profiles are configured"
        checker.error(
            "unknown-reference",
            f"unknown model_profile {participant.model_profile!r}{did_you_mean(participant.model_profile, profiles)}",
            checker.at((*path, "model_profile")),
            f'{known_profiles}; define one as [profiles.{participant.model_profile}] with model = "provider:model"'
            " in flujo.toml",
        )


def _is_model(participant: ParticipantModel, checker: Checker) -> bool:
    if participant.model_profile is not None:
        return True
    if participant.uses is None or not participant.uses.startswith("agents."):
        return False
    agent = checker.model.agents.get(participant.uses.removeprefix("agents."))
    return agent is None or agent.model is not None  # an unknown agent is reported on its own


def _check_reachable(checker: Checker, step: EnsembleStepModel, here: Path) -> None:
    """Participants that can never start (waiting, directly or not, on one that never speaks), and a
    ``max_total_turns`` the participants' own limits never let the conversation reach."""
    block = step.ensemble
    names = {p.name for p in block.participants}
    can: set[str] = set()
    changed = True
    while changed:
        changed = False
        for participant in block.participants:
            if participant.name in can:
                continue
            deps = [d.participant for d in participant.dependencies() if d.participant in names]
            waits = all(d in can for d in deps) if participant.requires_all else any(d in can for d in deps)
            if not deps or participant.triggers_conversation or waits:
                can.add(participant.name)
                changed = True
    if not can:
        checker.error(
            "never-runs",
            f"no participant of ensemble {step.name!r} can start: each waits for another (a dependency cycle)",
            checker.at((*here, "participants")),
            "give one participant no depends_on, or triggers_conversation: true to speak in round 1",
        )
        return
    for number, participant in enumerate(block.participants):
        if participant.name not in can:
            checker.warning(
                "never-runs",
                f"participant {participant.name!r} never runs: it waits for participants that never speak",
                checker.at((*here, "participants", number)),
                "check its depends_on for a cycle",
            )
    most = sum(_limit(p, block.max_agent_executions) for p in block.participants if p.name in can)
    if "max_total_turns" in block.fields_given and block.max_total_turns > most:
        checker.warning(
            "unreachable-limit",
            f"max_total_turns: {block.max_total_turns} can never be reached: the participants' own limits allow"
            f" at most {most} round(s)",
            checker.at((*here, "max_total_turns")),
            "raise max_turns of the participants that should speak more, or lower max_total_turns",
        )
