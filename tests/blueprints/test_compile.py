"""A valid blueprint compiles into the expected core.steps.kinds objects, and those run on the engine."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from blueprints import compile_pipeline, load_blueprint, load_pipeline
from blueprints.compiling.loop_hooks import InitOps, NextInput, ShapeOutput
from blueprints.compiling.predicates import CallableTest, CallableValue, ExpressionTest, ExpressionValue
from core import (
    Agent,
    AgentStep,
    ConditionalStep,
    ConfigError,
    Conversation,
    Engine,
    HistoryPolicy,
    HitlStep,
    Limits,
    LoopStep,
    MapStep,
    OutputMapping,
    ParallelStep,
    Pipeline,
    RunOutcome,
    Settings,
    WorkflowStep,
)
from core.agents import AgentSpec, build_agent
from core.store import MemoryStore
from core.testing import ScriptedHuman
from tests.support.blueprint_findings import DATA


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def run(pipeline: Pipeline, data: Any = None, answers: tuple[str, ...] = ()) -> RunOutcome:
    return await Engine(store=MemoryStore(), human=ScriptedHuman(answers)).run(pipeline, data)


def test_every_step_kind_compiles_into_core_objects() -> None:
    path = DATA / "valid_all_kinds.yaml"
    pipeline = load_pipeline(path, Settings())
    assert pipeline.name == "every_kind"
    assert pipeline.limits == Limits(max_cost_usd=0.5, max_tokens=20000)
    assert pipeline.source == str(path)
    assert pipeline.source_hash == hashlib.sha256(path.read_bytes()).hexdigest()

    get_goal, loop, fan_out, route, each = pipeline.steps
    assert isinstance(get_goal, HitlStep)
    assert get_goal.message.source == "What do you want to achieve?"
    assert (get_goal.input_schema, get_goal.sink_to) == ({"type": "string"}, "scratchpad.goal")
    assert get_goal.position is not None and (get_goal.position.line, get_goal.position.column) == (18, 5)

    assert isinstance(loop, LoopStep)
    assert loop.max_loops == 4
    assert isinstance(loop.exit_when, ExpressionTest) and loop.exit_description == "stop_when: agent_finished"
    assert isinstance(loop.init, InitOps) and [op.verb for op in loop.init.ops] == ["set", "append"]
    assert loop.next_input is None  # propagation: previous_output is the engine's default
    assert isinstance(loop.output, ShapeOutput) and loop.output.template is not None
    assert loop.conversation is None
    clarify, ask = loop.body
    assert isinstance(clarify, AgentStep) and clarify.agent is not None and clarify.updates_context
    assert clarify.input is not None and clarify.input.source == "{{ previous_step }}"
    assert isinstance(ask, HitlStep)  # agent: {id: flujo.builtins.ask_user} is a human question
    assert ask.message.source == "{{ previous_step.question | default('Anything else?') }}"

    assert isinstance(fan_out, ParallelStep)
    assert [name for name, _ in fan_out.branches] == ["loud", "quiet"]
    assert (fan_out.merge_strategy, fan_out.on_branch_failure, fan_out.reduce) == ("overwrite", "ignore", "values")

    assert isinstance(route, ConditionalStep)
    assert [key for key, _ in route.branches] == ["true", "false", "yes"]
    assert isinstance(route.condition, ExpressionValue)
    assert route.default_branch is not None and route.default_branch[0].name == "fallback"

    assert isinstance(each, MapStep)
    assert each.over.source == "[1, 2, 3]"
    assert isinstance(each.init, InitOps) and isinstance(each.finalize, ShapeOutput)


async def test_the_compiled_pipeline_runs() -> None:
    pipeline = load_pipeline(DATA / "valid_all_kinds.yaml", Settings())
    outcome = await run(pipeline, "hi", ("a book", "kids", "ok"))
    assert outcome.status == "completed", outcome.error
    assert outcome.output == {"items": [2, 4, 6], "prompt": "hi"}


def test_agents_are_built_once_per_definition_through_the_factory(tmp_path: Path) -> None:
    built: list[AgentSpec] = []

    def factory(spec: AgentSpec, settings: Settings) -> Agent:
        built.append(spec)
        return build_agent(spec, settings)

    path = write(
        tmp_path,
        """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [a], system_prompt: "Be brief.", timeout: 5, max_retries: 0}
steps:
  - {kind: step, name: one, uses: agents.bot}
  - {kind: step, name: two, uses: agents.bot}
  - {kind: step, name: three, uses: agents.bot, output_schema: {type: object}}
  - {kind: step, name: four, agent: {id: flujo.builtins.stringify}}
  - {kind: step, name: five, agent: "tests.support.blueprint_skills:shout"}
""",
    )
    pipeline = compile_pipeline(load_blueprint(path), Settings(), agent_factory=factory)
    one, two, three, _, _ = pipeline.steps
    assert isinstance(one, AgentStep) and isinstance(two, AgentStep) and isinstance(three, AgentStep)
    assert one.agent is two.agent and three.agent is not one.agent
    assert built[0] == AgentSpec(
        name="bot", model="scripted", system_prompt="Be brief.", timeout=5, max_retries=0, replies=("a",)
    )
    assert built[1].output_schema == {"type": "object"}
    assert (built[2].name, built[2].builtin) == ("four", "flujo.builtins.stringify")
    assert (built[3].name, built[3].python) == ("five", "tests.support.blueprint_skills:shout")


def test_config_error_from_build_agent_is_prefixed_with_the_agents_position(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
version: "0.1"
agents:
  bot: {model: "openai:gpt-4o-mini"}
steps:
  - {kind: step, name: one, uses: agents.bot}
""",
    )
    with pytest.raises(ConfigError) as caught:
        load_pipeline(path, Settings())
    assert caught.value.message.startswith(f"{path}:3:3: agents.bot uses openai:gpt-4o-mini but OPENAI_API_KEY")
    assert caught.value.hint is not None


def test_an_import_compiles_into_a_workflow_step_holding_the_imported_pipeline() -> None:
    [step] = load_pipeline(DATA / "imports_present.yaml", Settings()).steps
    assert isinstance(step, WorkflowStep)
    assert (step.name, step.input_to, step.outputs, step.updates_context) == ("call_sub", "initial_prompt", None, False)
    assert step.position is not None and step.position.line == 5
    child = load_pipeline(DATA / "valid_all_kinds.yaml", Settings())
    assert step.pipeline.name == child.name == "every_kind"
    assert step.pipeline.source == str(DATA / "valid_all_kinds.yaml")
    assert [s.name for s in step.pipeline.steps] == [s.name for s in child.steps]


def test_import_config_compiles_in_both_outputs_shapes(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text('version: "0.1"\nsteps: [{name: echo}]\n', encoding="utf-8")
    path = write(
        tmp_path,
        """version: "0.1"
imports: {child: child.yaml}
steps:
  - name: listed
    uses: imports.child
    input: "{{ previous_step }}!"
    updates_context: true
    sink_to: scratchpad.result
    config:
      input_to: both
      input_scratchpad_key: question
      inherit_context: true
      outputs:
        - {child: scratchpad.a, parent: scratchpad.b}
  - name: mapped
    uses: imports.child
    config:
      outputs: {steps.echo.output: context.scratchpad.echoed, output: c}
""",
    )
    listed, mapped = load_pipeline(path, Settings()).steps
    assert isinstance(listed, WorkflowStep) and isinstance(mapped, WorkflowStep)
    assert listed.pipeline is mapped.pipeline  # one import, compiled once
    assert (listed.input_to, listed.input_key, listed.inherit_context, listed.updates_context, listed.sink_to) == (
        "both", "question", True, True, "scratchpad.result",
    )  # fmt: skip
    assert listed.input is not None and listed.input.source == "{{ previous_step }}!"
    assert listed.outputs == (OutputMapping("scratchpad.a", "scratchpad.b"),)
    assert mapped.outputs == (
        OutputMapping("steps.echo.output", "context.scratchpad.echoed"),
        OutputMapping("output", "c"),
    )


def test_conversation_loop_compiles_its_settings_and_implied_exit() -> None:
    pipeline = load_pipeline(DATA / "pending.yaml", Settings())
    loop = pipeline.steps[1]
    assert isinstance(loop, LoopStep)
    assert isinstance(loop.exit_when, ExpressionTest)
    assert loop.exit_description == "stop_when: agent_finished (implied by conversation: true)"
    conversation = loop.conversation
    assert isinstance(conversation, Conversation)
    assert conversation.history.strategy == "summarize" and conversation.history.summarizer is not None
    assert conversation.history_template is not None
    assert conversation.ai_turn_source == "named_steps" and conversation.named_steps == ("reply",)
    assert conversation.user_turn_sources == ("hitl",)
    assert (conversation.seed_from_input, conversation.seed_from_step, conversation.seed_prefix) == (
        False,
        "get_goal",
        "User: ",
    )
    assert isinstance(loop.next_input, NextInput) and loop.next_input.mode == "context"
    assert HistoryPolicy().strategy == "truncate_tokens"


async def test_stop_when_agent_finished_ends_the_loop(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [{action: ask}, {action: ask}, {action: finish}]}
steps:
  - kind: loop
    name: chat
    loop:
      stop_when: agent_finished
      body:
        - {kind: step, name: talk, uses: agents.bot}
""",
    )
    outcome = await run(load_pipeline(path, Settings()))
    assert outcome.output == {"action": "finish"}


async def test_loop_hooks_init_propagation_and_output(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
version: "0.1"
steps:
  - kind: loop
    name: count
    loop:
      max_loops: 3
      init:
        - set: {target: context.scratchpad.seen, value: []}
        - merge: {target: context.scratchpad.meta, value: '{"started": "{{ previous_step }}"}'}
      propagation: {next_input: "{{ previous_step }}+"}
      output: {fields: {last: "{{ previous_step }}", start: initial_prompt, meta: "{{ context.scratchpad.meta }}"}}
      body:
        - {kind: step, name: add, agent: {id: flujo.builtins.passthrough}}
""",
    )
    outcome = await run(load_pipeline(path, Settings()), "go")
    assert outcome.status == "completed", outcome.error
    assert outcome.output == {"last": "go++", "start": "go", "meta": {"started": "go"}}


async def test_exit_condition_and_condition_callables(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [{done: false}, {done: true}]}
steps:
  - kind: loop
    name: until_done
    loop:
      exit_condition: "tests.support.blueprint_skills:finished"
      body:
        - {kind: step, name: work, uses: agents.bot}
  - kind: conditional
    name: route
    condition: "tests.support.blueprint_skills:pick"
    branches:
      a: [{kind: step, name: in_a, agent: {id: flujo.builtins.stringify}}]
      b: [{kind: step, name: in_b, agent: {id: flujo.builtins.stringify}, input: "b!"}]
""",
    )
    pipeline = load_pipeline(path, Settings())
    loop, route = pipeline.steps
    assert isinstance(loop, LoopStep) and isinstance(loop.exit_when, CallableTest)
    assert loop.exit_description == "tests.support.blueprint_skills:finished"
    assert isinstance(route, ConditionalStep) and isinstance(route.condition, CallableValue)
    outcome = await run(pipeline)
    assert outcome.output == "b!"


async def test_output_text_conversation_history_joins_the_history(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
version: "0.1"
steps:
  - kind: loop
    name: notes
    loop:
      max_loops: 2
      init:
        - append: {target: context.scratchpad.history, value: "User: {{ previous_step }}"}
      output: {text: conversation_history}
      body:
        - {kind: step, name: pass, agent: {id: flujo.builtins.passthrough}}
""",
    )
    outcome = await run(load_pipeline(path, Settings()), "hello")
    assert outcome.output == "User: hello"


def test_ask_user_without_question_asks_the_input(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
version: "0.1"
steps:
  - {kind: step, name: ask, agent: {id: flujo.builtins.ask_user}, sink_to: scratchpad.answer}
  - {kind: step, name: ask2, agent: {id: flujo.builtins.ask_user}, input: "Sure about {{ previous_step }}?"}
""",
    )
    ask, ask2 = load_pipeline(path, Settings()).steps
    assert (
        isinstance(ask, HitlStep) and ask.message.source == "{{ previous_step }}" and ask.sink_to == "scratchpad.answer"
    )
    assert isinstance(ask2, HitlStep) and ask2.message.source == "Sure about {{ previous_step }}?"


def test_passthrough_step_has_no_agent(tmp_path: Path) -> None:
    path = write(tmp_path, 'version: "0.1"\nsteps:\n  - {kind: step, name: echo, input: "{{ previous_step }}!"}\n')
    blueprint = load_blueprint(path)
    assert [f.code for f in blueprint.findings] == ["passthrough-step"]
    [step] = compile_pipeline(blueprint, Settings()).steps
    assert isinstance(step, AgentStep) and step.agent is None


def test_pipeline_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    path = write(tmp_path, 'version: "0.1"\nsteps:\n  - {kind: hitl, name: ask, message: "?"}\n')
    assert load_pipeline(path, Settings()).name == "flow"


def test_examples_validate_without_errors() -> None:
    examples = sorted((Path(__file__).parents[2] / "blueprints" / "examples").glob("*.yaml"))
    assert examples
    for example in examples:
        errors = [str(f) for f in load_blueprint(example).findings if f.is_error]
        assert errors == [], example
