"""Checks of the control-flow steps: loop, conditional, map (and the hitl message).

Rules that need more than one value: exactly one exit or condition source, ``output`` xor
``output_template``, init targets under ``context.``, names in ``named_steps``/``from_step`` that exist,
conversation settings that only act with ``conversation: true``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from blueprints.checking.checks.agents import check_agent_ref, import_check
from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.loop_bounds import check_loop_iterations
from blueprints.checking.checks.sites import StepSite, names_under
from blueprints.checking.checks.summarizer import check_summarizer
from blueprints.checking.checks.texts import check_text
from blueprints.checking.checks.write_targets import check_write_target
from blueprints.reading.positions import Path
from blueprints.reading.suggestions import did_you_mean
from blueprints.schema import (
    OUTPUT_SHORTHANDS,
    PROPAGATION_PRESETS,
    ConditionalStepModel,
    FieldsOutputModel,
    FinalizeModel,
    HitlStepModel,
    InitOpModel,
    InitPresetsModel,
    LoopSettingsModel,
    LoopStepModel,
    MapStepModel,
    PropagationModel,
    TextOutputModel,
)

_CONTEXT_TARGET = r"context(\.[A-Za-z_][A-Za-z0-9_]*)+"  # compiled at its first use (re's cache)
# Parts of the context the run itself maintains; init operations write only to the scratchpad.
_HISTORY_TARGETS = ("context.scratchpad.history", "context.history")
_READ_ONLY = ("steps", "initial_prompt", "hitl_history", "conversation_history")
_CONVERSATION_KEYS = ("history_management", "history_template", "ai_turn_source", "named_steps", "user_turn_sources")


def check_hitl(checker: Checker, site: StepSite, step_names: list[str]) -> None:
    step = site.step
    assert isinstance(step, HitlStepModel)
    if step.message is None:
        _note_default_question(checker, site)
    else:
        check_text(checker, (*site.path, "message"), step.message, step_names=step_names)
    if step.answered_by is not None:
        check_agent_ref(checker, step.answered_by, (*site.path, "answered_by"), f"step {step.name!r} is answered_by")


def _note_default_question(checker: Checker, site: StepSite) -> None:
    """Say what a ``hitl`` step without ``message`` asks (``core.conversation.default_question``)."""
    name = site.step.name
    fallback = f"Your answer for {name!r}?"
    if site.conversation is not None:
        asks = (
            "what the assistant said last in the conversation "
            f"(its newest assistant turn; {fallback!r} before it has spoken)"
        )
    else:
        asks = repr(fallback)
    checker.note(
        "default-question",
        f"step {name!r} has no message: it asks {asks}",
        checker.at(site.path),
        "add message: ... to ask something else",
    )


def check_init_ops(checker: Checker, ops: Sequence[InitOpModel], path: Path, step_names: list[str]) -> None:
    for number, op in enumerate(ops):
        here = (*path, number)
        given = {"set": op.set, "append": op.append, "merge": op.merge}
        chosen = [(verb, target) for verb, target in given.items() if target is not None]
        if not chosen:
            checker.error("missing-field", "an init operation needs one of set, append or merge", checker.at(here))
            continue
        if len(chosen) > 1:
            checker.error(
                "bad-value", "an init operation is one of set, append or merge; split it in two",
                checker.key_at((*here, chosen[1][0])),
            )  # fmt: skip
        for verb, operand in chosen:
            target_path = (*here, verb, "target")
            if not re.fullmatch(_CONTEXT_TARGET, operand.target):
                checker.error(
                    "bad-value",
                    f"init {verb} target must start with 'context.', got {operand.target!r}",
                    checker.at(target_path),
                    "e.g. target: context.scratchpad.history",
                )
            elif operand.target.split(".")[1] in _READ_ONLY:
                checker.error(
                    "bad-value",
                    f"init cannot write {operand.target!r}: only the scratchpad is writable",
                    checker.at(target_path),
                    "write under context.scratchpad.<name>",
                )
            else:
                example = "target: context.scratchpad.history"
                check_write_target(checker, target_path, operand.target, f"init {verb} target", example)
            _check_values(checker, operand.value, (*here, verb, "value"), step_names)


def _check_values(checker: Checker, value: object, path: Path, step_names: list[str]) -> None:
    if isinstance(value, str):
        check_text(checker, path, value, step_names=step_names)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_values(checker, item, (*path, str(key)), step_names)
    elif isinstance(value, list):
        for number, item in enumerate(value):
            _check_values(checker, item, (*path, number), step_names)


def _exclusive(checker: Checker, path: Path, first: str, second: str, present: set[str]) -> None:
    if first in present and second in present:
        checker.error("bad-value", f"use either {first} or {second}, not both", checker.key_at((*path, second)))


def check_loop(checker: Checker, site: StepSite, step_names: list[str]) -> None:
    step = site.step
    assert isinstance(step, LoopStepModel)
    loop, path = step.loop, (*site.path, "loop")
    present = set(loop.fields_given)
    _exclusive(checker, path, "exit_expression", "exit_condition", present)
    _exclusive(checker, path, "output_template", "output", present)
    if loop.stop_when is not None and present & {"exit_expression", "exit_condition"}:
        checker.warning(
            "ignored-key",
            "stop_when is ignored because this loop has an explicit exit_expression/exit_condition",
            checker.key_at((*path, "stop_when")),
            "remove stop_when, or fold it into the expression: ... or "
            "context.scratchpad.last_agent_command.action == 'finish'",
        )
    if loop.exit_expression is not None:
        check_text(
            checker, (*path, "exit_expression"), loop.exit_expression,
            expression=True, extra_names=("iteration",), step_names=step_names,
        )  # fmt: skip
    if loop.exit_condition is not None:
        import_check(checker, loop.exit_condition, (*path, "exit_condition"), role="exit_condition")
    if loop.history_template is not None:
        check_text(
            checker, (*path, "history_template"), loop.history_template,
            extra_names=("history",), step_names=step_names,
        )  # fmt: skip
    _check_conversation(checker, loop, path, step_names)
    check_loop_iterations(checker, loop, path)
    if isinstance(loop.init, list):
        check_init_ops(checker, loop.init, (*path, "init"), step_names)
    elif isinstance(loop.init, InitPresetsModel):
        _check_init_presets(checker, loop, loop.init, (*path, "init"), step_names)
    if isinstance(loop.propagation, PropagationModel) and loop.propagation.next_input not in PROPAGATION_PRESETS:
        next_input = loop.propagation.next_input
        check_text(
            checker, (*path, "propagation", "next_input"), next_input, extra_names=("iteration",), step_names=step_names
        )
    if loop.output_template is not None:
        check_text(checker, (*path, "output_template"), loop.output_template, step_names=step_names)
    if loop.output is not None:
        check_output(checker, loop.output, (*path, "output"), step_names)


def _check_conversation(checker: Checker, loop: LoopSettingsModel, path: Path, step_names: list[str]) -> None:
    if not loop.conversation:
        for key in _CONVERSATION_KEYS:
            if key in loop.fields_given:
                checker.warning(
                    "ignored-key",
                    f"{key} has no effect without conversation: true",
                    checker.key_at((*path, key)),
                    "add conversation: true to this loop, or remove the key",
                )
        return
    body = names_under(loop.body)
    if loop.ai_turn_source == "named_steps" and not loop.named_steps:
        checker.error(
            "missing-field",
            "ai_turn_source: named_steps needs named_steps: [step names]",
            checker.at((*path, "ai_turn_source")),
        )
    if loop.named_steps is not None and loop.ai_turn_source != "named_steps":
        checker.warning(
            "ignored-key",
            "named_steps has no effect unless ai_turn_source is named_steps",
            checker.key_at((*path, "named_steps")),
        )
    for number, name in enumerate(loop.named_steps or []):
        _check_body_name(checker, name, (*path, "named_steps", number), body, step_names, "named_steps")
    for number, name in enumerate(loop.user_turn_sources or []):
        if name != "hitl":
            _check_body_name(
                checker, name, (*path, "user_turn_sources", number), [*body, "hitl"], step_names, "user_turn_sources"
            )
    check_summarizer(checker, loop, path)
    if isinstance(loop.init, list):
        for number, op in enumerate(loop.init):
            for verb, operand in (("set", op.set), ("append", op.append), ("merge", op.merge)):
                if operand is not None and operand.target in _HISTORY_TARGETS:
                    checker.error(
                        "bad-value",
                        f"in a conversation loop {operand.target} is the conversation history, derived from "
                        "context.conversation_history; init cannot write it",
                        checker.at((*path, "init", number, verb, "target")),
                        "seed the history with init: {history: {start_with: {from_step: <step>}}}",
                    )


def _check_body_name(checker: Checker, name: str, path: Path, body: list[str], step_names: list[str], key: str) -> None:
    if name in body:
        return
    elsewhere = " (that step is outside this loop's body)" if name in step_names else ""
    checker.error(
        "unknown-reference",
        f"{key} names {name!r}, which is not a step of this loop{elsewhere}{did_you_mean(name, body)}",
        checker.at(path),
        f"steps of this loop: {', '.join(body)}",
    )


def _check_init_presets(
    checker: Checker, loop: LoopSettingsModel, init: InitPresetsModel, path: Path, step_names: list[str]
) -> None:
    if init.history is not None:
        start = init.history.start_with
        here = (*path, "history", "start_with")
        if start.from_step is not None and start.from_initial_input:
            checker.error(
                "bad-value",
                "start_with takes from_step or from_initial_input, not both",
                checker.key_at((*here, "from_initial_input")),
            )
        if start.from_step is not None and start.from_step not in step_names:
            checker.error(
                "unknown-reference",
                f"from_step names {start.from_step!r}, but no step has that name"
                f"{did_you_mean(start.from_step, step_names)}",
                checker.at((*here, "from_step")),
            )
    if init.notes is not None:
        check_text(checker, (*path, "notes", "set"), init.notes.set, step_names=step_names)


def check_output(
    checker: Checker, output: TextOutputModel | FieldsOutputModel | dict[str, object], path: Path, step_names: list[str]
) -> None:
    if isinstance(output, TextOutputModel):
        if output.text not in OUTPUT_SHORTHANDS:
            check_text(checker, (*path, "text"), output.text, step_names=step_names)
        return
    fields = output.fields if isinstance(output, FieldsOutputModel) else output
    base = (*path, "fields") if isinstance(output, FieldsOutputModel) else path
    for key, value in fields.items():
        if isinstance(value, str) and value not in OUTPUT_SHORTHANDS:
            check_text(checker, (*base, key), value, step_names=step_names)


def check_conditional(checker: Checker, site: StepSite, step_names: list[str]) -> None:
    step = site.step
    assert isinstance(step, ConditionalStepModel)
    path = site.path
    if step.condition_expression is None and step.condition is None:
        checker.error(
            "missing-field",
            f"conditional {step.name!r} needs condition_expression or condition",
            checker.at(path),
            "e.g. condition_expression: \"previous_step.action == 'finish'\"",
        )
    _exclusive(checker, path, "condition_expression", "condition", set(step.fields_given))
    if step.condition_expression is not None:
        check_text(
            checker, (*path, "condition_expression"), step.condition_expression,
            expression=True, step_names=step_names,
        )  # fmt: skip
    if step.condition is not None:
        import_check(checker, step.condition, (*path, "condition"), role="condition")


def check_map(checker: Checker, site: StepSite, step_names: list[str]) -> None:
    step = site.step
    assert isinstance(step, MapStepModel)
    path = (*site.path, "map")
    check_text(checker, (*path, "over"), step.map.over, expression=True, step_names=step_names)
    if step.map.init is not None:
        check_init_ops(checker, step.map.init, (*path, "init"), step_names)
    if step.map.finalize is not None:
        _check_finalize(checker, step.map.finalize, (*path, "finalize"), step_names)


def _check_finalize(checker: Checker, finalize: FinalizeModel, path: Path, step_names: list[str]) -> None:
    present = set(finalize.fields_given)
    if not present:
        checker.error("missing-field", "finalize needs output_template or output", checker.at(path))
    _exclusive(checker, path, "output_template", "output", present)
    if finalize.output_template is not None:
        check_text(checker, (*path, "output_template"), finalize.output_template, step_names=step_names)
    if finalize.output is not None:
        check_output(checker, finalize.output, (*path, "output"), step_names)
