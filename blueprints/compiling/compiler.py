"""Compiling a validated blueprint into ``core.steps.kinds`` objects (a Pipeline the engine runs).

Every template, expression and ``module:function`` is compiled or imported here, once; the resulting
steps hold only ready-to-call objects. The loop's and the map's own blocks are compiled by ``loops``, an
ensemble by ``ensembles``; what every step's compiler uses is ``base``. A step whose agent has tools carries
them (``core.steps.kinds.ToolUse``, built by ``tools``).

A step ``uses: imports.<alias>`` becomes a ``WorkflowStep`` holding the imported blueprint compiled into a
Pipeline of its own. Each imported file is compiled once per ``compile_pipeline`` call, so two steps using
the same import (or two blueprints importing the same file) share its agents, as two steps naming the
same agent do. An imported blueprint's own ``limits:`` do not apply to it as a sub-workflow: the budget
is the top-level run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path as FilePath
from typing import Any, assert_never

from blueprints.checking.loader import Blueprint
from blueprints.compiling.agents import AgentBuilder, AgentFactory
from blueprints.compiling.base import CompilerBase
from blueprints.compiling.loops import compile_loop, compile_map
from blueprints.compiling.predicates import CallableValue, ExpressionValue
from blueprints.reading.positions import Path
from blueprints.schema import (
    AgentRefModel,
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
from core import (
    AgentStep,
    BlueprintError,
    ConditionalStep,
    HitlStep,
    Limits,
    OutputMapping,
    ParallelStep,
    Pipeline,
    ScopeFunction,
    Settings,
    Step,
    Template,
    WorkflowStep,
)


class StepCompiler(CompilerBase):
    """Compiles the steps of one blueprint, one step kind after another; ``path`` arguments are data paths
    into the YAML."""

    def steps(self, models: Sequence[AnyStepModel], path: Path) -> tuple[Step, ...]:
        return tuple(self.step(model, (*path, number)) for number, model in enumerate(models))

    def step(self, model: AnyStepModel, path: Path) -> Step:
        if isinstance(model, AgentStepModel):
            return self.agent_step(model, path)
        if isinstance(model, HitlStepModel):
            return HitlStep(
                name=model.name,
                message=self.template(model.message, (*path, "message")) if model.message is not None else None,
                input_schema=model.input_schema,
                sink_to=model.sink_to,
                position=self.position(path),
                answered_by=self.agents.person(model.answered_by) if model.answered_by else None,
            )
        if isinstance(model, LoopStepModel):
            return compile_loop(self, model, path)
        if isinstance(model, ParallelStepModel):
            settings, here = model.settings, (*path, *model.settings_path)
            return ParallelStep(
                name=model.name,
                branches=tuple(
                    (name, self.steps(branch, (*here, "branches", name))) for name, branch in settings.branches.items()
                ),
                merge_strategy=settings.merge_strategy,
                on_branch_failure=settings.on_branch_failure,
                reduce=settings.reduce,
                position=self.position(path),
            )
        if isinstance(model, ConditionalStepModel):
            return self.conditional(model, path)
        if isinstance(model, MapStepModel):
            return compile_map(self, model, path)
        if isinstance(model, EnsembleStepModel):
            from blueprints.compiling.ensembles import compile_ensemble  # the blueprints with an ensemble only

            return compile_ensemble(self, model, path)
        assert_never(model)

    def agent_step(self, model: AgentStepModel, path: Path) -> AgentStep | HitlStep | WorkflowStep:
        input_template = self.template(model.input, (*path, "input")) if model.input is not None else None
        turn_text = self.template(model.turn_text, (*path, "turn_text")) if model.turn_text is not None else None
        if model.uses is not None and model.uses.startswith("imports."):
            return self.workflow_step(model, input_template, path, turn_text)
        if isinstance(model.agent, AgentRefModel) and model.agent.id == "flujo.builtins.ask_user":
            question = model.agent.params.get("question")
            if isinstance(question, str):
                message = self.template(question, (*path, "agent", "params", "question"))
            else:
                message = input_template or Template("{{ previous_step }}")
            return HitlStep(name=model.name, message=message, sink_to=model.sink_to, position=self.position(path))
        uses_agent = model.uses is not None and model.uses.startswith("agents.")
        return AgentStep(
            name=model.name,
            agent=self.agents.for_step(model, path),
            tools=self.tools_of((model.uses or "").removeprefix("agents.")) if uses_agent else None,
            input=input_template,
            updates_context=model.updates_context,
            sink_to=model.sink_to,
            use_history=model.use_history,
            turn_text=turn_text,
            position=self.position(path),
        )

    def workflow_step(
        self, model: AgentStepModel, input_template: Template | None, path: Path, turn_text: Template | None = None
    ) -> WorkflowStep:
        config = model.config or ImportConfigModel()
        outputs: tuple[OutputMapping, ...] | None = None
        if isinstance(config.outputs, list):
            outputs = tuple(OutputMapping(child=m.child, parent=m.parent) for m in config.outputs)
        elif config.outputs is not None:
            outputs = tuple(OutputMapping(child=child, parent=parent) for child, parent in config.outputs.items())
        return WorkflowStep(
            name=model.name,
            pipeline=self.imported((model.uses or "").removeprefix("imports.")),
            input=input_template,
            input_to=config.input_to,
            input_key=config.input_scratchpad_key,
            inherit_context=config.inherit_context,
            outputs=outputs,
            updates_context=model.updates_context,
            sink_to=model.sink_to,
            turn_text=turn_text,
            position=self.position(path),
        )

    def conditional(self, model: ConditionalStepModel, path: Path) -> ConditionalStep:
        condition: ScopeFunction
        if model.condition_expression is not None:
            condition = ExpressionValue(self.expression(model.condition_expression, (*path, "condition_expression")))
            description = model.condition_expression
        elif model.condition is not None:
            function = self.function(model.condition, (*path, "condition"), role="condition")
            condition, description = CallableValue(function, model.condition), model.condition
        else:  # validation reports this; kept for models built in code
            raise BlueprintError(
                f"conditional {model.name!r} needs condition_expression or condition", position=self.position(path)
            )
        return ConditionalStep(
            name=model.name,
            condition=condition,
            branches=tuple(
                (key, self.steps(branch, (*path, "branches", key))) for key, branch in model.branches.items()
            ),
            default_branch=(
                self.steps(model.default_branch, (*path, "default_branch"))
                if model.default_branch is not None
                else None
            ),
            condition_description=description,
            position=self.position(path),
        )


def default_agent_factory() -> AgentFactory:
    """``core.agents.build_agent`` (imported on first use: it is only needed to compile)."""
    from core.agents import build_agent

    return build_agent


def compile_pipeline(
    blueprint: Blueprint, settings: Settings, *, agent_factory: AgentFactory | None = None
) -> Pipeline:
    """The Pipeline ``blueprint`` describes, its agents built with ``agent_factory`` (``build_agent``),
    its sub-workflows compiled from its imported blueprints.

    Raises BlueprintError (an import that fails, at its file:line:col) or ConfigError (from building an
    agent, its message prefixed with the agent's file:line:col).
    """
    return _compile(blueprint, settings, agent_factory or default_agent_factory(), {})


def _compile(
    blueprint: Blueprint, settings: Settings, factory: AgentFactory, compiled: dict[FilePath, Pipeline]
) -> Pipeline:
    """``compile_pipeline`` with ``compiled``: the Pipeline of each file compiled so far in this call."""
    key = blueprint.path.resolve()
    known = compiled.get(key)
    if known is not None:
        return known

    def imported(alias: str) -> Pipeline:
        return _compile(blueprint.imports[alias], settings, factory, compiled)

    agents = AgentBuilder(blueprint, settings, factory)
    compiler = StepCompiler(blueprint, agents, imported)
    model = blueprint.model
    limits = Limits(max_cost_usd=settings.limits.max_cost_usd, max_tokens=settings.limits.max_tokens)
    if model.limits is not None:  # the blueprint's own limits beat the configured defaults, key by key
        limits = Limits(
            max_cost_usd=_first_set(model.limits.max_cost_usd, limits.max_cost_usd),
            max_tokens=_first_set(model.limits.max_tokens, limits.max_tokens),
        )
    pipeline = Pipeline(
        steps=compiler.steps(model.steps, ("steps",)),
        name=blueprint.name,
        limits=limits,
        source=str(blueprint.path),
        source_hash=blueprint.tree_hash,
    )
    compiled[key] = pipeline
    return pipeline


def _first_set(value: Any, default: Any) -> Any:
    return default if value is None else value
