"""Reads of context keys that nothing in the blueprint writes (``never-written``).

An expression that reads a missing key is silently false (``context.get('needs_clarification', False)``
when the value lives in ``context.scratchpad``); a template that reads one fails at run time. So
``validate`` works out which scratchpad keys a blueprint can write, and warns at each read of a key
outside them, with a did-you-mean.

What writes the scratchpad: ``sink_to`` (of steps and questions), ``updates_context`` (the keys of the
step's ``output_schema``), loop and map ``init`` targets, ``init.notes`` (``notes``), a sub-workflow's
``config.outputs``, agent commands (``last_agent_command``) and conversations (``history``, the view of
``context.conversation_history``). A step that updates the context with an output no schema fixes (a
``python:`` or ``command:`` agent, a model without ``output_schema``, a sub-workflow, a step without an
agent) can write any key: then scratchpad keys are not checked. Nor are they in a blueprint that another
one imports with ``inherit_context`` or ``input_to: scratchpad``, whose scratchpad starts with the
parent's keys (not knowable from the child's file alone; its own validation still checks them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from jinja2 import Environment, TemplateSyntaxError, nodes

from blueprints.checking.checks.checker import Checker, Writes
from blueprints.checking.checks.sites import StepSite
from blueprints.checking.checks.write_targets import scratchpad_key
from blueprints.reading.positions import Path
from blueprints.reading.suggestions import closest
from blueprints.schema import (
    AgentStepModel,
    HitlStepModel,
    InitOpModel,
    InitPresetsModel,
    LoopStepModel,
    MapStepModel,
)
from core import VIEW_KEYS, TemplateSyntax, translate_handlebars

_PARSER = Environment()
_MAPPING_METHODS = frozenset({"get", "keys", "items", "values"})


@dataclass(frozen=True)
class Read:
    """A read of ``context.<key>`` (``scratchpad`` False) or ``context.scratchpad.<key>``."""

    key: str
    scratchpad: bool


def _fixed_keys(checker: Checker, step: AgentStepModel) -> frozenset[str] | None:
    """The keys a step's output can have when a schema fixes them; None when any key is possible."""
    schema = step.output_schema
    if schema is None and step.uses is not None and step.uses.startswith("agents."):
        agent = checker.model.agents.get(step.uses.removeprefix("agents."))
        if agent is not None and agent.python is None and agent.command is None:
            schema = agent.output_schema
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or "scratchpad" in properties:
        return None  # no schema, or a ``scratchpad`` key whose contents are merged themselves
    return frozenset(str(key) for key in properties)


def _init_targets(ops: Sequence[InitOpModel] | InitPresetsModel | None) -> Iterator[str]:
    if isinstance(ops, InitPresetsModel):
        if ops.history is not None:
            yield "history"  # a conversation's first turn; outside one, a line of scratchpad.history
        if ops.notes is not None:
            yield "notes"
        return
    for op in ops or ():
        for operand in (op.set, op.append, op.merge):
            if operand is not None:
                yield operand.target


def blueprint_writes(checker: Checker, sites: Sequence[StepSite], *, opened: bool = False) -> Writes:
    """What the steps at ``sites`` can write; ``opened`` when the scratchpad may start with other keys."""
    keys: set[str] = {"last_agent_command"}  # any agent reply with an "action"
    any_key = opened
    targets: list[str] = []
    for site in sites:
        step = site.step
        if isinstance(step, AgentStepModel | HitlStepModel) and step.sink_to is not None:
            targets.append(step.sink_to)
        if isinstance(step, AgentStepModel):
            if step.config is not None and step.config.outputs is not None:
                outputs = step.config.outputs
                targets.extend(outputs.values() if isinstance(outputs, dict) else (m.parent for m in outputs))
            if step.updates_context:
                fixed = None if step.uses is None or step.uses.startswith("imports.") else _fixed_keys(checker, step)
                if fixed is None:
                    any_key = True
                else:
                    keys |= fixed
        elif isinstance(step, LoopStepModel):
            targets.extend(_init_targets(step.loop.init))
            if step.loop.conversation:
                keys.add("history")
        elif isinstance(step, MapStepModel):
            targets.extend(_init_targets(step.map.init))
    keys |= {key for key in map(scratchpad_key, targets) if key is not None}
    return Writes(frozenset(keys), any_key)


def _is_context(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Name) and node.name == "context" and node.ctx == "load"


def _is_scratchpad(node: nodes.Node) -> bool:
    if isinstance(node, nodes.Getattr):
        return node.attr == "scratchpad" and _is_context(node.node)
    return isinstance(node, nodes.Getitem) and _const(node.arg) == "scratchpad" and _is_context(node.node)


def _const(node: nodes.Node) -> str | None:
    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, str) else None


def context_reads(source: str) -> list[Read]:
    """The context keys ``source`` (a template, or an expression wrapped in ``{{ }}``) reads by name."""
    try:
        tree = _PARSER.parse(translate_handlebars(source))
    except (TemplateSyntaxError, TemplateSyntax):
        return []
    reads: list[Read] = []
    methods = {id(call.node) for call in tree.find_all(nodes.Call)}
    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Call)):
        if isinstance(node, nodes.Call):
            base, name = node.node, None
            if isinstance(base, nodes.Getattr) and base.attr == "get" and node.args:
                name = _const(node.args[0])
                base = base.node
            else:
                continue
        elif isinstance(node, nodes.Getattr):
            if node.attr in _MAPPING_METHODS and id(node) in methods:
                continue
            base, name = node.node, node.attr
        elif isinstance(node, nodes.Getitem):
            base, name = node.node, _const(node.arg)
        else:
            continue
        if name is None:
            continue
        if _is_context(base):
            reads.append(Read(name, scratchpad=False))
        elif _is_scratchpad(base):
            reads.append(Read(name, scratchpad=True))
    return reads


def _locate(source: str, read: Read) -> tuple[int, int]:
    """1-based (line, column) where ``read`` is written in ``source`` ((1, 1) when not found)."""
    key = re.escape(read.key)
    at = rf"(\.\s*{key}\b|\[\s*['\"]{key}['\"]|\.\s*get\s*\(\s*['\"]{key}['\"])"
    base = r"context\s*(\.\s*scratchpad|\[\s*['\"]scratchpad['\"]\s*\])\s*" if read.scratchpad else r"context\s*"
    match = re.search(base + at, source)
    if match is None:
        return 1, 1
    line = source.count("\n", 0, match.start()) + 1
    return line, match.start() - (source.rfind("\n", 0, match.start()) + 1) + 1


def check_context_reads(checker: Checker, path: Path, source: str, *, expression: bool) -> None:
    """Warn at each context key ``source`` reads that the blueprint never writes."""
    writes = checker.writes
    if writes is None:
        return
    what = "expression" if expression else "template"
    text = "{{ " + source + " }}" if expression else source
    for read in context_reads(text):
        if not read.scratchpad and read.key in VIEW_KEYS:
            continue
        if read.scratchpad and (writes.any_key or read.key in writes.keys):
            continue
        if read.scratchpad:
            written, match = f"context.scratchpad.{read.key}", closest(read.key, writes.keys)
            guess = f"context.scratchpad.{match}" if match else None
            hint = "scratchpad keys are written by sink_to, updates_context, and a loop's or map's init"
        else:
            written = f"context.{read.key}"
            if writes.any_key or read.key in writes.keys:
                guess = f"context.scratchpad.{read.key}"
            else:
                match = closest(read.key, VIEW_KEYS)
                guess = f"context.{match}" if match else None
            hint = f"the context holds {', '.join(VIEW_KEYS)}; what steps write is under context.scratchpad"
        mean = f" — did you mean {guess}?" if guess else ""
        line, column = _locate(source, read)
        checker.warning(
            "never-written",
            f"{what} reads {written}, which nothing in this blueprint writes, so it is always missing{mean}",
            checker.index.inside(path, line, column) or checker.at(path),
            hint,
        )
