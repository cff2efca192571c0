"""The hooks a loop (or map) runs: ``init`` operations, ``propagation`` and ``output`` mappers.

They are compiled once (templates parsed at load time) and called by the engine with the run context:
``InitOps(ctx, input)`` once before the first iteration, ``NextInput(output, ctx, iteration)`` between
iterations, ``ShapeOutput(output, ctx)`` once at the end. Writes go to the scratchpad, with the same
path rules as ``sink_to``: ``context.scratchpad.notes``, ``context.notes`` and ``scratchpad.notes`` are
one place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from blueprints.positions import Path
from core.context import RunContext
from core.errors import RunError
from core.policies.context_writes import scratchpad_slot
from core.policies.frame import scope  # the engine's own template variables, so hooks see the same names
from core.templates import Template

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
class InitOps:
    """``loop.init`` / ``map.init``: operations applied once, in order, to the (isolated) context."""

    ops: tuple[InitOp, ...]

    def __call__(self, ctx: RunContext, data: Any) -> None:
        variables = scope(ctx, data)
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
        return _maybe_json(self.template.render(scope(ctx, output, iteration=iteration)))


def conversation_text(ctx: RunContext) -> str:
    """The conversation as ``User: ...`` / ``Assistant: ...`` lines (``output: text: conversation_history``).

    When no turns were recorded, a ``scratchpad.history`` list of lines is joined instead.
    """
    if ctx.conversation_history:
        return "\n".join(turn.line for turn in ctx.conversation_history)
    history = ctx.scratchpad.get("history")
    if isinstance(history, list):
        return "\n".join(str(line) for line in history)
    return ""


Shorthand = Literal["conversation_history", "initial_prompt"]


@dataclass(frozen=True)
class OutputField:
    name: str
    shorthand: Shorthand | None = None
    value: CompiledValue | None = None

    def render(self, ctx: RunContext, variables: Mapping[str, Any]) -> Any:
        if self.shorthand == "conversation_history":
            return conversation_text(ctx)
        if self.shorthand == "initial_prompt":
            return ctx.initial_prompt
        return self.value.render(variables) if self.value is not None else None


@dataclass(frozen=True)
class ShapeOutput:
    """``output_template`` / ``output`` (text, fields, or a mapping): the loop's (or map's) final value."""

    template: Template | None = None
    text: OutputField | None = None
    fields: tuple[OutputField, ...] = ()

    def __call__(self, output: Any, ctx: RunContext) -> Any:
        variables = scope(ctx, output)
        if self.template is not None:
            return self.template.render(variables)
        if self.text is not None:
            value = self.text.render(ctx, variables)
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        return {field.name: field.render(ctx, variables) for field in self.fields}
