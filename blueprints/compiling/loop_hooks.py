"""The hooks a loop (or map) runs: ``init`` operations, ``propagation`` and ``output`` mappers.

They are compiled once (templates parsed at load time) and called by the engine with the run context:
``InitOps(ctx, input)`` once before the first iteration, ``NextInput(output, ctx, iteration)`` between
iterations, ``ShapeOutput(output, ctx, input)`` once at the end. Writes go to the scratchpad, with the same
path rules as ``sink_to``: ``context.scratchpad.notes``, ``context.notes`` and ``scratchpad.notes`` are
one place.

The two words ``output`` accepts for a value (docs/loops.md): ``initial_prompt`` is the loop's (or
ensemble's) own input (what its first iteration received: the previous step's output), or the run's input
when that is nothing or the context itself (and in a map's ``finalize``, always); ``conversation_history``
is the conversation the step runs in, as lines, and outside one the lines ``context.scratchpad.history``
holds (what ``init`` and ``append`` wrote).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from blueprints.reading.positions import Path
from core import (
    RunContext,
    RunError,
    Template,
    is_context,
    scratchpad_slot,
    template_scope,  # the engine's own template variables, so hooks see the same names
    turn_text,
)

InitVerb = Literal["set", "append", "merge"]


@dataclass(frozen=True)
class CompiledValue:
    """A value whose strings are templates: rendered into a fresh value each time."""

    value: Any

    @classmethod
    def of(cls, raw: Any, *, template: Callable[[str, Path], Template], path: Path) -> CompiledValue:
        """``raw`` with each text compiled by ``template`` (the step compiler's: it knows where the text is
        written, at data ``path`` and below, so that its run-time errors name the place)."""
        return cls(_compile(raw, template, path))

    def render(self, variables: Mapping[str, Any]) -> Any:
        return _render(self.value, variables)


def _compile(raw: Any, template: Callable[[str, Path], Template], path: Path) -> Any:
    if isinstance(raw, str):
        return template(raw, path)
    if isinstance(raw, dict):
        return {key: _compile(item, template, (*path, str(key))) for key, item in raw.items()}
    if isinstance(raw, list):
        return [_compile(item, template, (*path, number)) for number, item in enumerate(raw)]
    return raw


def _render(value: Any, variables: Mapping[str, Any]) -> Any:
    if isinstance(value, Template):
        return value.render(variables)
    if isinstance(value, dict):
        return {key: _render(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [_render(item, variables) for item in value]
    return value


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


@dataclass(frozen=True)
class InitOp:
    verb: InitVerb
    target: str
    value: CompiledValue

    def apply(self, ctx: RunContext, variables: Mapping[str, Any]) -> None:
        node, last = scratchpad_slot(ctx, self.target)
        value = self.value.render(variables)
        if self.verb == "set":
            node[last] = value
        elif self.verb == "append":
            current = node.get(last)
            if current is None:
                node[last] = [value]
            elif isinstance(current, list):
                current.append(value)
            else:
                raise RunError(f"init append: {self.target} holds {type(current).__name__}, not a list")
        else:
            value = _maybe_json(value)
            if not isinstance(value, Mapping):
                raise RunError(f"init merge into {self.target}: the value is {type(value).__name__}, not a mapping")
            current = node.get(last)
            merged = dict(current) if isinstance(current, Mapping) else {}
            merged.update(value)
            node[last] = merged


@dataclass(frozen=True)
class HistoryLine:
    """``init.history.start_with`` of a loop that is not a conversation: one line appended to
    ``context.scratchpad.history``, ``prefix`` and the text of ``from_step``'s output (else of the loop's
    input). Nothing is written when that value is missing. (In a conversation the same key seeds the first
    user turn instead: ``core.conversation``.)"""

    from_step: str | None
    prefix: str

    def apply(self, ctx: RunContext, variables: Mapping[str, Any]) -> None:
        if self.from_step is not None:
            record = ctx.steps.get(self.from_step)
            value = record.get("output") if isinstance(record, dict) else None
        else:
            value = variables["previous_step"]
        if value is None or is_context(value):
            return
        node, last = scratchpad_slot(ctx, "context.scratchpad.history")
        current = node.get(last)
        line = f"{self.prefix}{turn_text(value)}"
        if current is None:
            node[last] = [line]
        elif isinstance(current, list):
            current.append(line)
        else:
            raise RunError(f"init.history: context.scratchpad.history holds {type(current).__name__}, not a list")


@dataclass(frozen=True)
class InitOps:
    """``loop.init`` / ``map.init``: operations applied once, in order, to the (isolated) context."""

    ops: tuple[InitOp | HistoryLine, ...]

    def __call__(self, ctx: RunContext, data: Any) -> None:
        variables = template_scope(ctx, data)
        for op in self.ops:
            op.apply(ctx, variables)


@dataclass(frozen=True)
class NextInput:
    """``propagation``: what the next iteration receives as its input."""

    mode: Literal["context", "previous_output", "template"]
    template: Template | None = None

    def __call__(self, output: Any, ctx: RunContext, iteration: int) -> Any:
        if self.mode == "context":
            return ctx.lazy_view()  # the context carries the state; copied only where something reads it
        if self.mode == "previous_output" or self.template is None:
            return output
        return _maybe_json(self.template.render(template_scope(ctx, output, iteration=iteration)))


def conversation_text(ctx: RunContext) -> str:
    """The conversation as ``User: ...`` / ``Assistant: ...`` lines (``output: text: conversation_history``).

    In a conversation (a ``conversation: true`` loop, or a step inside one) its turns, else the lines of a
    ``scratchpad.history`` list. Outside a conversation the ``scratchpad.history`` lines come first (what
    ``init``/``append`` wrote), then the turns a conversational loop before this step left.
    """
    turns = ctx.conversation_history
    history = ctx.scratchpad.get("history")
    lines = [str(line) for line in history] if isinstance(history, list) else None
    if turns and (ctx.conversation is not None or lines is None):
        return "\n".join(turn.line for turn in turns)
    return "\n".join(lines or ())


def loop_input(ctx: RunContext, given: Any) -> Any:
    """``initial_prompt`` in ``output``: the step's own input, or the run's input when the step was given
    nothing or the context itself (a step after ``propagation: context``)."""
    if given is None or is_context(given):
        return ctx.initial_prompt
    return given


Shorthand = Literal["conversation_history", "initial_prompt"]


@dataclass(frozen=True)
class OutputField:
    name: str
    shorthand: Shorthand | None = None
    value: CompiledValue | None = None

    def render(self, ctx: RunContext, variables: Mapping[str, Any], given: Any) -> Any:
        if self.shorthand == "conversation_history":
            return conversation_text(ctx)
        if self.shorthand == "initial_prompt":
            return loop_input(ctx, given)
        return self.value.render(variables) if self.value is not None else None


@dataclass(frozen=True)
class ShapeOutput:
    """``output_template`` / ``output`` (text, fields, or a mapping): the loop's (or map's) final value."""

    template: Template | None = None
    text: OutputField | None = None
    fields: tuple[OutputField, ...] = ()

    def __call__(self, output: Any, ctx: RunContext, given: Any) -> Any:
        variables = template_scope(ctx, output)
        if self.template is not None:
            return self.template.render(variables)
        if self.text is not None:
            value = self.text.render(ctx, variables, given)
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        return {field.name: field.render(ctx, variables, given) for field in self.fields}
