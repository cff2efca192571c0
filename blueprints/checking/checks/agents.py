"""Checks of agent definitions and of how ``kind: step`` steps name their agent.

An agent is exactly one of a model, a python callable or a command (one that names none of them has already
been given the settings' ``default_model``, if there is one: ``blueprints.checking.default_model``, so here it
has no model at all); model names are checked against
the known providers; python callables are imported now, so an unimportable path is an error at its
line instead of a silent echo at run time.
"""

from __future__ import annotations

from blueprints.checking.callables import load_callable
from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.checking.checks.texts import check_text
from blueprints.checking.model_ids import model_id_problem
from blueprints.reading.suggestions import did_you_mean, one_of
from blueprints.schema import AgentModel, AgentRefModel, AgentStepModel
from core import PROVIDER_NAMES, BlueprintError, provider_of

PROVIDERS = PROVIDER_NAMES
# Parameters each builtin understands; anything else would be silently ignored, so it is an error.
BUILTIN_PARAMS: dict[str, tuple[str, ...]] = {
    "flujo.builtins.passthrough": (),
    "flujo.builtins.stringify": (),
    "flujo.builtins.ask_user": ("question",),
}
_MODEL_ONLY = ("system_prompt", "examples", "model_settings", "context_window", "base_url")


def import_check(checker: Checker, spec: str, path: tuple[str | int, ...], *, role: str | None = None) -> None:
    """Import ``spec`` now; an import failure becomes an error at ``path``."""
    try:
        load_callable(spec, position=checker.at(path), search=checker.folder, role=role)
    except BlueprintError as exc:
        checker.error("import-failed", exc.message, exc.position, exc.hint)


def check_agent_definition(checker: Checker, name: str, agent: AgentModel) -> None:
    path = ("agents", name)
    kinds = {"model": agent.model, "python": agent.python, "command": agent.command}
    chosen = [key for key, value in kinds.items() if value is not None]
    if not chosen:
        checker.error(
            "missing-field",
            f"agent {name!r} has no model: give it model: (or python: or command:), or set default_model in the"
            " settings",
            checker.key_at(path),
            "e.g. model: openai:gpt-4o-mini (model: scripted with replies: [...] for offline runs); or"
            ' default_model = "openai:gpt-4o-mini" in flujo.toml or ~/.config/flujo/config.toml (or'
            " FLUJO_DEFAULT_MODEL), for every agent that names no model",
        )
    elif len(chosen) > 1:
        checker.error(
            "bad-value",
            f"agent {name!r} sets {' and '.join(chosen)}; an agent is exactly one of them",
            checker.key_at((*path, chosen[1])),
        )
    if agent.model is not None:
        _check_model_name(checker, name, agent)
    if agent.python is not None:
        import_check(checker, agent.python, (*path, "python"))
    if agent.command:
        from blueprints.checking.checks.tools import check_program

        check_program(checker, f"agent {name!r}", agent.command, (*path, "command"), tool=False)
    if agent.model is None and chosen:  # with none chosen, the agent is to be a model: the error above says so
        for key in _MODEL_ONLY:
            if key in agent.fields_given:
                checker.warning(
                    "ignored-key",
                    f"{key} has no effect on agent {name!r}, which is not a model",
                    checker.key_at((*path, key)),
                )


def _check_model_name(checker: Checker, name: str, agent: AgentModel) -> None:
    model = agent.model or ""
    path = ("agents", name, "model")
    problem = model_id_problem(model)
    if problem is not None:
        checker.error("bad-value", f"agent {name!r}: {problem.message}", checker.at(path), problem.hint)
    elif (row := provider_of(model)) is not None and row.api == "local" and model.partition(":")[2]:
        _check_model_file(checker, name, model.partition(":")[2], path)
    if model == "scripted" and not agent.replies:
        checker.error(
            "missing-field",
            f"agent {name!r}: model scripted needs replies: [...]",
            checker.key_at(("agents", name)),
            "replies are returned in order, the last one repeating",
        )
    if model != "scripted" and agent.replies is not None:
        checker.warning(
            "ignored-key",
            f"replies has no effect on agent {name!r}; only model: scripted uses them",
            checker.key_at(("agents", name, "replies")),
        )


def _check_model_file(checker: Checker, name: str, file: str, path: tuple[str, ...]) -> None:
    """A ``model: local:FILE`` that exists is read as llama.cpp would need it (its header and the length its
    tensors need), so a damaged or cut-off file is an error here rather than at its first call. A file that
    does not exist yet is left to the run, which names it. A run does not stop on this finding
    (``load_blueprint``): building the agent reads the file again and fails as a configuration error (exit 6),
    as a file damaged after validation would."""
    from pathlib import Path

    from core import ConfigError, read_gguf

    if "\0" in file:  # the OS refuses to look such a path up
        checker.error(
            "bad-value", f"agent {name!r}: the model file {file!r} holds a NUL byte, which no file name can",
            checker.at(path), "name the model's .gguf file",
        )  # fmt: skip
        return
    model_path = Path(file).expanduser()
    model_path = model_path if model_path.is_absolute() else checker.folder / model_path
    if not model_path.exists():
        return
    try:
        read_gguf(model_path)
    except ConfigError as exc:
        checker.error("model-file", f"agent {name!r}: {exc.message}", checker.at(path), exc.hint)


def check_agent_step(checker: Checker, site: StepSite, step_names: list[str]) -> None:
    """Checks of one ``kind: step``: what it calls, its builtin params, its input template."""
    step = site.step
    assert isinstance(step, AgentStepModel)
    path = site.path
    if step.uses is not None and step.agent is not None:
        checker.error(
            "bad-value", f"step {step.name!r} sets both uses and agent; keep one", checker.key_at((*path, "agent"))
        )
    if step.uses is not None:
        _check_uses(checker, step, path)
    if isinstance(step.agent, str):
        import_check(checker, step.agent, (*path, "agent"))
    elif isinstance(step.agent, AgentRefModel):
        _check_builtin_params(checker, step.agent, (*path, "agent"), step_names)
    if step.uses is None and step.agent is None:
        checker.warning(
            "passthrough-step",
            f"step {step.name!r} has no agent; it passes its input through",
            checker.at(path),
            "add uses: agents.<name>, or agent: {id: flujo.builtins.passthrough} to make this explicit",
        )
        if step.output_schema is not None:
            checker.warning(
                "ignored-key",
                f"output_schema has no effect on step {step.name!r}, which has no agent",
                checker.key_at((*path, "output_schema")),
            )
    if step.input is not None:
        check_text(checker, (*path, "input"), step.input, step_names=step_names)


def _check_uses(checker: Checker, step: AgentStepModel, path: tuple[str | int, ...]) -> None:
    section, _, name = (step.uses or "").partition(".")
    where = checker.at((*path, "uses"))
    if section == "agents":
        if name not in checker.model.agents:
            defined = list(checker.model.agents)
            checker.error(
                "unknown-reference",
                f"step {step.name!r} uses agent {name!r}, which is not defined{did_you_mean(name, defined)}",
                where,
                f"agents defined: {', '.join(defined)}" if defined else "define it under agents: at the top",
            )
        return
    imports = checker.model.imports
    if name not in imports:
        checker.error(
            "unknown-reference",
            f"step {step.name!r} uses import {name!r}, which is not declared{did_you_mean(name, imports)}",
            where,
            "declare it under imports: (alias: path/to/blueprint.yaml)",
        )
    # Whether the imported file exists (and imports no cycle) is checked where imports are followed:
    # blueprints.checking.import_graph, at the imports: entry.


def check_agent_ref(checker: Checker, ref: str, path: tuple[str | int, ...], who: str) -> None:
    """``ref`` (``agents.<name>``, as in ``answered_by``) must name an agent defined under ``agents:``;
    ``who`` starts the message (``step 'ask' is answered_by``)."""
    name = ref.partition(".")[2]
    if name not in checker.model.agents:
        defined = list(checker.model.agents)
        checker.error(
            "unknown-reference",
            f"{who} agent {name!r}, which is not defined{did_you_mean(name, defined)}",
            checker.at(path),
            f"agents defined: {', '.join(defined)}" if defined else "define it under agents: at the top",
        )


def _check_builtin_params(
    checker: Checker, ref: AgentRefModel, path: tuple[str | int, ...], step_names: list[str]
) -> None:
    allowed = BUILTIN_PARAMS[ref.id]
    for key, value in ref.params.items():
        if key not in allowed:
            takes = f"it takes {one_of(allowed)}" if allowed else "it takes no params"
            checker.error(
                "unknown-key",
                f"unknown param {key!r} for {ref.id}{did_you_mean(key, allowed)}",
                checker.key_at((*path, "params", key)),
                takes,
            )
        elif key == "question":
            if isinstance(value, str):
                check_text(checker, (*path, "params", key), value, step_names=step_names)
            else:
                checker.error("bad-value", "question: expected text", checker.at((*path, "params", key)))
