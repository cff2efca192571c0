"""``explain_blueprint``: a validated blueprint in plain words, step by step, in document order.

The walk follows the step tree (loop bodies, parallel and conditional branches, map bodies, and the steps
of imported blueprints run as sub-workflows) carrying a ``Scope`` (how often a step runs at most, inside
which loops, maps and conversations) and what each step receives. Loop words are in ``explain.loops``,
expression words in ``explain.words``, the opening sentence and the agents in ``explain.overview``, the cost
section in ``explain.usage``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import assert_never

from blueprints.checking.loader import Blueprint
from blueprints.checking.speakers import asks_user, speaker_summarizer
from blueprints.explain.ensembles import explain_ensemble
from blueprints.explain.loops import (
    finishes_early,
    history_words,
    init_words,
    max_loops,
    next_input_words,
    output_words,
    stop_words,
)
from blueprints.explain.model import AgentSummary, AgentTools, Explanation, Note, Part, StepExplanation, StepGroup
from blueprints.explain.overview import agent_words, overview, used_by
from blueprints.explain.scope import Call, Scope, Tally
from blueprints.explain.tools import agent_tools, step_words
from blueprints.explain.usage import cost_words
from blueprints.explain.words import (
    clause,
    condition_words,
    quote,
    schema_words,
    sentence,
    template_words,
    value_words,
)
from blueprints.reading.positions import Path
from blueprints.schema import (
    AgentStepModel,
    AnyStepModel,
    ConditionalStepModel,
    EnsembleStepModel,
    HitlStepModel,
    ImportConfigModel,
    LoopStepModel,
    MapStepModel,
    ParallelStepModel,
)
from core import OFFLINE_MODELS, Settings

_MERGE = {
    "merge_scratchpad": "each branch's scratchpad changes are applied in branch order (for a key several set,"
    " the last branch wins)",
    "keep_first": "each branch's scratchpad changes are kept; for a key several branches set, the first wins",
    "error_on_conflict": "each branch's scratchpad changes are kept; two branches setting one key to different"
    " values fail the step",
    "overwrite": "the context of the last successful branch replaces the run's",
    "no_merge": "nothing from the branches' contexts is kept",
}
_REDUCE = {
    None: "a mapping of branch name to the branch's last output, in branch order",
    "keys": "the list of branch names (reduce: keys)",
    "values": "the list of branch outputs, in branch order (reduce: values)",
    "concat": "the branch outputs one after another: texts joined with newlines, lists spliced (reduce: concat)",
    "dedupe": "the branch outputs one after another as one list, each value kept once, where it first appears"
    " (reduce: dedupe)",
    "union": "the branch outputs combined: mappings merged, or one list without duplicates (reduce: union)",
    "first": "the first branch's output (reduce: first)",
    "last": "the last branch's output (reduce: last)",
}


class _Walk:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.tally = Tally()
        self.returns: dict[str, str] = {}

    def steps(
        self, models: Sequence[AnyStepModel], path: Path, scope: Scope, number: str, receives: str
    ) -> tuple[StepExplanation, ...]:
        explained: list[StepExplanation] = []
        for index, model in enumerate(models):
            here = f"{number}.{index + 1}" if number else str(index + 1)
            explained.append(self.step(model, (*path, index), scope, here, receives))
            asks = isinstance(model, HitlStepModel) or asks_user(model)
            receives = f"your answer at {model.name}" if asks else f"{model.name}'s output"
        return tuple(explained)

    def step(self, model: AnyStepModel, path: Path, scope: Scope, number: str, receives: str) -> StepExplanation:
        line = scope.blueprint.position(path).line
        parts: tuple[Part, ...] = ()
        if isinstance(model, AgentStepModel):
            if model.uses is not None and model.uses.startswith("imports."):
                does, parts = self.workflow(model, path, scope, number, receives)
                kind = "sub-workflow"
            elif asks_user(model):
                does, kind = self.ask(model, _question(model), scope, receives), "step"
            else:
                does, kind = self.agent_step(model, scope, number, receives), "step"
        elif isinstance(model, HitlStepModel):
            if model.message is None:  # the question the run composes (core.conversation.default_question)
                receives = (
                    "what the assistant said last (no message: the conversation's newest assistant turn)"
                    if scope.conversation is not None
                    else quote(f"Your answer for {model.name!r}?")
                )
            does, kind = self.ask(model, model.message, scope, receives, schema=model.input_schema), "hitl"
        elif isinstance(model, LoopStepModel):
            does, parts, kind = *self.loop(model, path, scope, number, receives), "loop"
        elif isinstance(model, ParallelStepModel):
            does, parts, kind = *self.parallel(model, path, scope, number, receives), "parallel"
        elif isinstance(model, ConditionalStepModel):
            does, parts, kind = *self.conditional(model, path, scope, number, receives), "conditional"
        elif isinstance(model, MapStepModel):
            does, parts, kind = *self.map(model, path, scope, number, receives), "map"
        elif isinstance(model, EnsembleStepModel):
            words = explain_ensemble(model, scope, self.settings, receives)
            self.tally.calls.extend(words.calls)
            self.tally.human.extend(words.human)
            self.returns[model.name] = words.returns
            does, parts, kind = words.does, words.parts, "ensemble"
        else:
            assert_never(model)
        return StepExplanation(number, model.name, kind, line, does, parts)

    def ask(
        self, model: AnyStepModel, message: str | None, scope: Scope, receives: str, *, schema: object = None
    ) -> str:
        question = template_words(message, previous=receives) if message is not None else receives
        person = model.answered_by if isinstance(model, HitlStepModel) else None
        said = [f"Asks you: {question}" if person is None else f"Asks a simulated person, {person}: {question}"]
        if isinstance(schema, dict):
            said.append(f"The answer must be {schema_words(schema)}")
        sink = model.sink_to if isinstance(model, AgentStepModel | HitlStepModel) else None
        if sink is not None:
            said.append(f"The answer is also kept at {_scratch(sink)}")
        self.tally.human.append(f"{scope.prefix}{model.name}, {scope.often}: {question}")
        self.returns[model.name] = f"your answer at {model.name}"
        return " ".join(sentence(s) for s in said)

    def agent_step(self, model: AgentStepModel, scope: Scope, number: str, receives: str) -> str:
        agents = scope.blueprint.model.agents
        message = template_words(model.input, previous=receives) if model.input is not None else receives
        said: list[str] = []
        label = f"{scope.prefix}{model.name}"
        if model.uses is not None:
            name = model.uses.removeprefix("agents.")
            agent = agents[name]
            what, _ = agent_words(agent)
            said.append(f"Calls {name} ({what}){self.sent(model, scope, message)}")
            tools = agent_tools(agent, scope.blueprint)
            schema = model.output_schema or agent.output_schema
            if tools is not None:
                said.append(step_words(name, tools))
                self.approvals(label, name, tools, scope)
                schema = None  # the answer of a tool loop is the model's text (validate warns of output_schema)
            if schema is not None:
                said.append(f"Its reply must be {schema_words(schema)}")
            metered = agent.model if agent.model is not None and agent.model not in OFFLINE_MODELS else None
            heard = scope.conversation_label if model.use_history is not False else None
            turns = tools.max_tool_calls + 1 if tools is not None else 1
            self.call(Call(label, name, metered, scope.times, scope.per_item, schema is not None, heard, turns))
            self.returns[model.name] = f"{name}'s reply"
        elif isinstance(model.agent, str):
            said.append(f"Calls the Python function {model.agent}{self.sent(model, scope, message)}")
            heard = scope.conversation_label if model.use_history is not False else None
            self.call(Call(label, model.agent, None, scope.times, scope.per_item, False, heard))
            self.returns[model.name] = f"what {model.agent} returns"
        elif model.agent is not None and model.agent.id == "flujo.builtins.stringify":
            said.append(f"Turns {message} into text")
            self.returns[model.name] = f"{model.name}'s text"
        else:
            none = " (no agent)" if model.agent is None else ""
            said.append(f"Passes {message} on unchanged{none}")
            self.returns[model.name] = f"{model.name}'s output"
        if model.updates_context:
            said.append("Its output (a mapping) is merged into the scratchpad")
        if model.sink_to is not None:
            said.append(f"Its output is also kept at {_scratch(model.sink_to)}")
        return " ".join(sentence(s) for s in said)

    def call(self, call: Call) -> None:
        self.tally.calls.append(call)

    def approvals(self, label: str, agent: str, tools: AgentTools, scope: Scope) -> None:
        """The questions of the tools that ask first: one before each call of such a tool."""
        calls = f"up to {tools.max_tool_calls} calls"
        when = calls if scope.often == "once" else f"{calls} each time it runs, {scope.often}"
        for tool in tools.ask:
            self.tally.human.append(
                f"{label}, before each call of {tool} (approve: ask; {when}): "
                f'"Allow {agent} to call {tool}(...)? [y/N]"'
            )
        for server in tools.may_ask:
            self.tally.human.append(
                f"{label}, before each call of a tool of {server} that its MCP server marks destructive ({when}): "
                f'"Allow {agent} to call TOOL(...)? [y/N]"'
            )
        self.workflow_tools(label, tools, scope, when)

    def workflow_tools(self, label: str, tools: AgentTools, scope: Scope, when: str) -> None:
        """What a sub-workflow tool does in each of its calls: the questions it asks, the model calls it makes
        (each counted as often as the tool may be called)."""
        defined = scope.blueprint.model.tools
        for name in tools.names:
            workflow = defined[name].workflow if name in defined else None
            child = scope.blueprint.imports.get(workflow.removeprefix("imports.")) if workflow else None
            if child is None:
                continue
            inner = _Walk(self.settings)
            inner.steps(child.model.steps, ("steps",), Scope(child), "", "its input")
            for question in inner.tally.human:
                self.tally.human.append(f"{label}, in each call of {name} (a sub-workflow; {when}): {question}")
            calls = tools.max_tool_calls * scope.times
            for found, into in (
                (inner.tally.calls, self.tally.calls),
                (inner.tally.summarizer_calls, self.tally.summarizer_calls),
            ):
                into.extend(
                    replace(
                        call,
                        label=f"{label} › {name} › {call.label}",
                        times=call.times * calls,
                        per_item=(*scope.per_item, *call.per_item),
                    )
                    for call in found
                )

    @staticmethod
    def sent(model: AgentStepModel, scope: Scope, message: str) -> str:
        """How the step's call is sent its input; in a conversation, after the history (the rules of
        docs/conversation.md, "The current message")."""
        if scope.conversation is None:
            return f", sent {message}"
        if model.use_history is False:
            return f", without the conversation history (use_history: false), sent {message}"
        if model.input is None and message == "the iteration's input":
            return " with the conversation so far; its message is the newest turn"
        if model.input is None:
            return f" with the conversation so far; its message is {message}"
        return f" with the conversation so far and the message {message}"

    def loop(
        self, model: LoopStepModel, path: Path, scope: Scope, number: str, receives: str
    ) -> tuple[str, tuple[Part, ...]]:
        settings = model.loop
        limit = max_loops(settings)
        inner = scope.in_loop(model, limit)
        first_call = len(self.tally.calls)
        body = self.steps(settings.body, (*path, "loop", "body"), inner, number, "the iteration's input")
        what = "A conversation" if settings.conversation else "A loop"
        count = len(settings.body)
        does = (
            f"{what}: repeats {count} step{'s' if count > 1 else ''}, at most {limit} time{'s' if limit > 1 else ''}."
            f" Iteration 1 receives {receives}."
        )
        parts: list[Part] = []
        init = init_words(settings.init, conversation=settings.conversation)
        if init is not None:
            parts.append(Note("Before iteration 1", init))
        parts.append(StepGroup("Each iteration", body))
        parts.append(Note("Stops", stop_words(settings)))
        agents = dict(scope.blueprint.model.agents)
        if settings.conversation:
            outer = scope.conversation.name if scope.conversation is not None else None
            history = history_words(
                model, received=receives, agents=agents, defaults=self.settings.history, outer=outer
            )
            parts.append(Note("History", history))
            self.summarizer(model, inner, self.tally.calls[first_call:])
        last = settings.body[-1].name
        simple = isinstance(settings.body[-1], AgentStepModel | HitlStepModel)
        last_returns = clause(self.returns.get(last, f"{last}'s output")) if simple else f"{last}'s output"
        if limit > 1:
            parts.append(Note("Next iteration receives", next_input_words(settings, last=last_returns)))
        default = f"The last output of the last iteration: {last_returns}"
        if finishes_early(settings):
            default += " (in the iteration where an agent finishes, that agent's reply)"
        default += "."
        returns = output_words(
            settings.output_template,
            settings.output,
            conversation=settings.conversation or scope.conversation is not None,
            default=default,
            received=receives,
        )
        parts.append(Note("Returns", returns))
        self.returns[model.name] = returns
        return does, tuple(parts)

    def summarizer(self, model: LoopStepModel, scope: Scope, calls: Sequence[Call]) -> None:
        """Record the summarizer's calls: at most one before each call that is sent this loop's history."""
        manage = model.loop.history_management
        defaults = self.settings.history
        strategy = manage.strategy if manage is not None and "strategy" in manage.fields_given else defaults.strategy
        if strategy != "summarize":
            return
        if manage is not None and manage.summarizer_agent is not None:
            name = manage.summarizer_agent
            agent = scope.blueprint.model.agents.get(name)
            model_id = agent.model if agent is not None else None
        elif defaults.summarizer_model is not None:
            name, model_id = "the configured summarizer", defaults.summarizer_model
        else:
            speaker = speaker_summarizer(model.loop, scope.blueprint.model.agents).agent
            if speaker is None:
                return
            name, model_id = speaker, scope.blueprint.model.agents[speaker].model
        metered = model_id if model_id is not None and model_id not in OFFLINE_MODELS else None
        label = scope.conversation_label or model.name  # ``scope`` is the loop's own: its conversation
        heard = [call for call in calls if call.conversation == label]
        times = sum(call.times for call in heard)
        per_item = next((call.per_item for call in heard if call.per_item), ())
        self.tally.summarizer_calls.append(Call(label, name, metered, times, per_item, False))

    def parallel(
        self, model: ParallelStepModel, path: Path, scope: Scope, number: str, receives: str
    ) -> tuple[str, tuple[Part, ...]]:
        settings, here = model.settings, (*path, *model.settings_path)
        names = list(settings.branches)
        does = (
            f"Runs {len(names)} branches at the same time ({', '.join(names)}), each on its own copy of the"
            f" context; each branch receives {receives}."
        )
        parts: list[Part] = []
        for index, (name, branch) in enumerate(settings.branches.items()):
            steps = self.steps(branch, (*here, "branches", name), scope, f"{number}.{chr(ord('a') + index)}", receives)
            parts.append(StepGroup(f"Branch {name}", steps))
        failure = (
            "a failed branch is left out and the rest go on (on_branch_failure: ignore)"
            if settings.on_branch_failure == "ignore"
            else "a failed branch fails the step"
        )
        parts.append(Note("Then", sentence(f"{_MERGE[settings.merge_strategy]}; {failure}")))
        returns = sentence(_REDUCE[settings.reduce])
        parts.append(Note("Returns", returns))
        self.returns[model.name] = returns
        return does, tuple(parts)

    def conditional(
        self, model: ConditionalStepModel, path: Path, scope: Scope, number: str, receives: str
    ) -> tuple[str, tuple[Part, ...]]:
        keys = list(model.branches)
        if model.condition_expression is not None:
            source = model.condition_expression
            if set(keys) <= {"true", "false"}:
                words = condition_words(source, previous=receives) or f"{quote(source)} is true"
                does = f"Runs branch true when {words}, else branch false (condition_expression: {source})."
            else:
                words = value_words(source, previous=receives) or f"the value of {quote(source)}"
                does = f"Runs the branch named by {words} (condition_expression: {source})."
        else:
            does = (
                f"Runs the branch named by the value the Python function {model.condition} returns,"
                f" called with {receives} and the context (condition)."
            )
        parts: list[Part] = []
        for index, (key, branch) in enumerate(model.branches.items()):
            label = key if key in ("true", "false") else repr(key)
            inner = scope.in_branch(f"when {model.name} takes branch {label}")
            here = f"{number}.{chr(ord('a') + index)}"
            parts.append(
                StepGroup(f"When {label}", self.steps(branch, (*path, "branches", key), inner, here, receives))
            )
        if model.default_branch is not None:
            inner = scope.in_branch(f"when {model.name} takes no named branch")
            here = f"{number}.{chr(ord('a') + len(keys))}"
            steps = self.steps(model.default_branch, (*path, "default_branch"), inner, here, receives)
            parts.append(StepGroup("Otherwise", steps))
        else:
            parts.append(Note("Otherwise", "Any other value fails the step (there is no default_branch)."))
        returns = "The last output of the branch that ran."
        parts.append(Note("Returns", returns))
        self.returns[model.name] = returns
        return does, tuple(parts)

    def map(
        self, model: MapStepModel, path: Path, scope: Scope, number: str, receives: str
    ) -> tuple[str, tuple[Part, ...]]:
        settings = model.map
        over = value_words(settings.over, previous=receives) or quote(settings.over)
        count = len(settings.body)
        does = (
            f"Runs {count} step{'s' if count > 1 else ''} once for each item of {over}, one item after another"
            f" (map.over: {settings.over})."
        )
        parts: list[Part] = []
        init = init_words(settings.init)
        if init is not None:
            parts.append(Note("Before the first item", init))
        inner = scope.in_map(model.name)
        parts.append(
            StepGroup("For each item", self.steps(settings.body, (*path, "map", "body"), inner, number, "the item"))
        )
        finalize = settings.finalize
        default = "The list of each item's last output."
        returns = (
            output_words(
                finalize.output_template,
                finalize.output,
                conversation=scope.conversation is not None,
                default=default,
                previous="the list of results",
            )
            if finalize is not None
            else default
        )
        parts.append(Note("Returns", returns))
        self.returns[model.name] = returns
        return does, tuple(parts)

    def workflow(
        self, model: AgentStepModel, path: Path, scope: Scope, number: str, receives: str
    ) -> tuple[str, tuple[Part, ...]]:
        alias = (model.uses or "").removeprefix("imports.")
        child = scope.blueprint.imports[alias]
        file = scope.blueprint.model.imports[alias]
        config = model.config or ImportConfigModel()
        given = template_words(model.input, previous=receives) if model.input is not None else receives
        placed = {
            "initial_prompt": f"{given} is its input",
            "scratchpad": f"{given} goes into its scratchpad (a mapping is merged, anything else is kept at"
            f" scratchpad.{config.input_scratchpad_key})",
            "both": f"{given} is its input and also goes into its scratchpad",
        }[config.input_to]
        does = f"Runs {file} as a sub-workflow: a child run with a context of its own; {placed}."
        if config.inherit_context:
            does += " Its scratchpad starts as a copy of this run's."
        inner = scope.in_import(child, model.name)
        steps = self.steps(child.model.steps, ("steps",), inner, number, "its input")
        outputs = config.outputs
        pairs = [(m.child, m.parent) for m in outputs] if isinstance(outputs, list) else list((outputs or {}).items())
        if pairs:
            copied = "; ".join(f"its {child_path} is copied to {_scratch(parent)}" for child_path, parent in pairs)
            back = f"when it completes, {copied}"
        elif model.updates_context:
            back = "its whole scratchpad is merged into this run's (updates_context)"
        else:
            back = "only its output; nothing of its context"
        last = child.model.steps[-1].name
        returns = f"The sub-workflow's output: the output of its last step, {last}."
        self.returns[model.name] = returns
        parts: tuple[Part, ...] = (
            StepGroup(f"Inside {file}", steps),
            Note("Gives back", sentence(back)),
            Note("Returns", returns),
        )
        return does, parts


def _question(model: AgentStepModel) -> str | None:
    """The question of an ``ask_user`` step: ``params.question``, else its ``input``."""
    if model.agent is not None and not isinstance(model.agent, str):
        question = model.agent.params.get("question")
        if isinstance(question, str):
            return question
    return model.input


def _scratch(path: str) -> str:
    return "scratchpad." + path.removeprefix("context.").removeprefix("scratchpad.")


def explain_blueprint(
    blueprint: Blueprint, settings: Settings | None = None, *, default_model_from: str | None = None
) -> Explanation:
    """``blueprint`` in plain words. ``settings`` gives the defaults a blueprint does not set (history
    bounds, the default summarizer, limits) and the model prices; without it, flujo's built-in defaults.
    Load the blueprint with the same settings, so that what is valid agrees with what is explained. An agent
    that runs the settings' ``default_model`` says so, and where it was set: ``default_model_from``
    (``user settings /home/ada/.config/flujo/config.toml:1:1``), when the caller knows."""
    settings = settings or Settings()
    walker = _Walk(settings)
    model = blueprint.model
    root = Scope(blueprint)
    steps = walker.steps(model.steps, ("steps",), root, "", "the run's input")
    agents = dict(model.agents)
    used = used_by(blueprint)
    summaries = tuple(
        AgentSummary(
            name,
            *_defaulted(agent_words(agent), name in blueprint.defaulted, default_model_from),
            tuple(used.get(name, ())),
            agent_tools(agent, blueprint),
        )
        for name, agent in agents.items()
    )
    opening = overview(model.steps)
    last = model.steps[-1].name
    last_returns = clause(walker.returns.get(last, f"{last}'s output"))
    returns = sentence(f"the output of the last step, {last}: {last_returns}")
    cost = cost_words(walker.tally, model.limits, defaults=settings.limits, models=settings.models)
    human = tuple(walker.tally.human) or ("Nowhere: the run never asks you anything.",)
    warnings = sum(1 for finding in blueprint.findings if finding.severity == "warning")
    return Explanation(str(blueprint.path), blueprint.name, opening, summaries, steps, human, returns, cost, warnings)


def _defaulted(words: tuple[str, bool], defaulted: bool, source: str | None) -> tuple[str, bool]:
    """An agent's words, saying that its model is the settings' ``default_model`` (and where that was set)."""
    if not defaulted:
        return words
    what, offline = words
    return f"{what} (default_model, from {source})" if source else f"{what} (default_model)", offline
