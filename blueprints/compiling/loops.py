"""Compiling ``loop`` and ``map`` steps: exit predicates, conversation settings, loop-block hooks.

Exit precedence (docs/loops.md): an explicit ``exit_expression`` or ``exit_condition`` wins; otherwise
``stop_when: agent_finished``, which ``conversation: true`` implies. ``max_loops`` defaults to 10.
``propagation: auto`` means ``context`` when a body step has ``updates_context: true``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from blueprints.checking.checks.sites import walk
from blueprints.checking.checks.summarizer import missing_hint, missing_summarizer
from blueprints.checking.speakers import speaker_summarizer
from blueprints.compiling.base import CompilerBase
from blueprints.compiling.loop_hooks import (
    CompiledValue,
    HistoryLine,
    InitOp,
    InitOps,
    InitVerb,
    NextInput,
    OutputField,
    ShapeOutput,
)
from blueprints.compiling.predicates import AgentFinishedTest, CallableTest, ExpressionTest, agent_finished
from blueprints.reading.positions import Path
from blueprints.schema import (
    AgentStepModel,
    FieldsOutputModel,
    InitOpModel,
    InitPresetsModel,
    InitTargetModel,
    LoopSettingsModel,
    LoopStepModel,
    MapStepModel,
    PropagationModel,
    TextOutputModel,
)
from core import Agent, BlueprintError, Conversation, HistoryPolicy, LoopStep, MapStep, ScopeFunction

DEFAULT_MAX_LOOPS = 10


def compile_loop(c: CompilerBase, model: LoopStepModel, path: Path) -> LoopStep:
    loop, here = model.loop, (*path, "loop")
    exit_when, description = _exit(c, loop, here)
    return LoopStep(
        name=model.name,
        body=c.steps(loop.body, (*here, "body")),
        max_loops=loop.max_loops or DEFAULT_MAX_LOOPS,
        exit_when=exit_when,
        exit_description=description,
        init=_init(c, loop.init, (*here, "init"), conversation=bool(loop.conversation)),
        next_input=_propagation(c, loop, here),
        output=_output(c, loop.output_template, loop.output, here),
        conversation=_conversation(c, loop, here) if loop.conversation else None,
        finish_early=isinstance(exit_when, AgentFinishedTest),  # the loop also ends its iteration early on it
        position=c.position(path),
    )


def compile_map(c: CompilerBase, model: MapStepModel, path: Path) -> MapStep:
    settings, here = model.map, (*path, "map")
    finalize = settings.finalize
    return MapStep(
        name=model.name,
        over=c.expression(settings.over, (*here, "over")),
        body=c.steps(settings.body, (*here, "body")),
        init=_init(c, settings.init, (*here, "init")),
        finalize=(_output(c, finalize.output_template, finalize.output, (*here, "finalize")) if finalize else None),
        position=c.position(path),
    )


def _exit(c: CompilerBase, loop: LoopSettingsModel, path: Path) -> tuple[ScopeFunction | None, str | None]:
    if loop.exit_expression is not None:
        expression = c.expression(loop.exit_expression, (*path, "exit_expression"))
        return ExpressionTest(expression), loop.exit_expression
    if loop.exit_condition is not None:
        function = c.function(loop.exit_condition, (*path, "exit_condition"), role="exit_condition")
        return CallableTest(function, loop.exit_condition), loop.exit_condition
    if loop.stop_when == "agent_finished":
        return agent_finished(), "stop_when: agent_finished"
    if loop.conversation:
        return agent_finished(), "stop_when: agent_finished (implied by conversation: true)"
    return None, None


def _conversation(c: CompilerBase, loop: LoopSettingsModel, path: Path) -> Conversation:
    manage = loop.history_management
    defaults = c.agents.settings.history  # flujo.toml / FLUJO_HISTORY__* / --set; the loop's own keys win
    given = manage.fields_given if manage is not None else set()
    strategy = manage.strategy if manage is not None and "strategy" in given else defaults.strategy
    name = manage.summarizer_agent if manage is not None else None
    summarizer: Agent | None = None
    if name is not None:
        summarizer = c.agents.named(name)
    elif strategy == "summarize" and defaults.summarizer_model is not None:
        summarizer = c.agents.default_summarizer(c.position(path))
    elif strategy == "summarize":
        speaker = speaker_summarizer(loop, c.blueprint.model.agents)
        if speaker.agent is not None:
            summarizer = c.agents.speaker_summarizer(speaker.agent)
        elif speaker.needed:  # validated against other settings than these: never compile a silent no-op
            raise BlueprintError(missing_summarizer(loop), position=c.position(path), hint=missing_hint(speaker.reason))
        # else no step is sent the history: there is never anything to summarize
    history = HistoryPolicy(
        strategy=strategy,
        max_tokens=manage.max_tokens if manage is not None and manage.max_tokens is not None else defaults.max_tokens,
        max_turns=manage.max_turns if manage is not None and manage.max_turns is not None else defaults.max_turns,
        summarizer=summarizer,
        summarize_ratio=(
            manage.summarize_ratio if manage is not None and "summarize_ratio" in given else defaults.summarize_ratio
        ),
    )
    seed_from_step: str | None = None
    prefix = ""
    if isinstance(loop.init, InitPresetsModel) and loop.init.history is not None:
        start = loop.init.history.start_with
        seed_from_step, prefix = start.from_step, start.prefix
    return Conversation(
        history=history,
        history_template=(
            c.template(loop.history_template, (*path, "history_template")) if loop.history_template else None
        ),
        ai_turn_source=loop.ai_turn_source or "last",
        named_steps=tuple(loop.named_steps or ()),
        user_turn_sources=tuple(loop.user_turn_sources) if loop.user_turn_sources is not None else ("hitl",),
        seed_from_input=seed_from_step is None,
        seed_prefix=prefix,
        seed_from_step=seed_from_step,
    )


def _init(
    c: CompilerBase,
    init: Sequence[InitOpModel] | InitPresetsModel | None,
    path: Path,
    *,
    conversation: bool = False,
) -> InitOps | None:
    ops: list[InitOp | HistoryLine] = []
    if isinstance(init, InitPresetsModel):
        if init.history is not None and not conversation:  # a conversation seeds its first turn instead
            start = init.history.start_with
            ops.append(HistoryLine(start.from_step, start.prefix))
        if init.notes is not None:
            value = CompiledValue(c.template(init.notes.set, (*path, "notes", "set")))
            ops.append(InitOp("set", "context.scratchpad.notes", value))
    elif init is not None:
        for number, op in enumerate(init):
            verbs: tuple[tuple[InitVerb, InitTargetModel | None], ...] = (
                ("set", op.set),
                ("append", op.append),
                ("merge", op.merge),
            )
            for verb, operand in verbs:
                if operand is not None:
                    where = (*path, number, verb, "value")
                    ops.append(
                        InitOp(verb, operand.target, CompiledValue.of(operand.value, template=c.template, path=where))
                    )
    return InitOps(tuple(ops)) if ops else None


def _propagation(c: CompilerBase, loop: LoopSettingsModel, path: Path) -> NextInput | None:
    choice = loop.propagation
    if choice is None:
        # conversation: true implies propagation: context (the history carries the conversation; a step
        # without an explicit input is sent the latest user turn, never the context object)
        return NextInput("context") if loop.conversation else None
    word = choice.next_input if isinstance(choice, PropagationModel) else choice
    if word == "auto":
        updates = any(
            isinstance(site.step, AgentStepModel) and site.step.updates_context for site in walk(loop.body, ())
        )
        word = "context" if updates else "previous_output"
    if word == "context":
        return NextInput("context")
    if word == "previous_output":
        return None  # the engine's default: the next iteration receives the last output
    return NextInput("template", c.template(word, (*path, "propagation", "next_input")))


def _field(c: CompilerBase, name: str, value: Any, path: Path) -> OutputField:
    if value == "conversation_history":
        return OutputField(name, shorthand="conversation_history")
    if value == "initial_prompt":
        return OutputField(name, shorthand="initial_prompt")
    if isinstance(value, str):
        return OutputField(name, value=CompiledValue(c.template(value, path)))
    return OutputField(name, value=CompiledValue.of(value, template=c.template, path=path))


def output_hook(
    c: CompilerBase, output: TextOutputModel | FieldsOutputModel | dict[str, Any] | None, path: Path
) -> ShapeOutput | None:
    """The ``output:`` block at ``path`` (a loop's, or an ensemble's) as the hook that shapes the final value."""
    return _output(c, None, output, path)


def _output(
    c: CompilerBase,
    template: str | None,
    output: TextOutputModel | FieldsOutputModel | dict[str, Any] | None,
    path: Path,
) -> ShapeOutput | None:
    if template is not None:
        return ShapeOutput(template=c.template(template, (*path, "output_template")))
    if output is None:
        return None
    here = (*path, "output")
    if isinstance(output, TextOutputModel):
        return ShapeOutput(text=_field(c, "text", output.text, (*here, "text")))
    if isinstance(output, FieldsOutputModel):
        return ShapeOutput(fields=tuple(_field(c, k, v, (*here, "fields", k)) for k, v in output.fields.items()))
    return ShapeOutput(fields=tuple(_field(c, k, v, (*here, k)) for k, v in output.items()))
