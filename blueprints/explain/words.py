"""Plain words for expressions, templates and JSON Schemas, for ``flujo explain``. No model is involved.

An expression is parsed with Jinja's parser (expressions are written in Jinja's expression language) and
translated node by node for the forms blueprints commonly use: comparisons, ``and``/``or``/``not``, paths
into ``previous_step``, ``steps``, ``context`` and ``iteration``, ``| length``, ``| fromjson``,
``.startswith(...)``, ``is defined``. Anything else is quoted as written: the words never claim more than
they understand. Callers show the source beside the words, so nothing is lost either way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jinja2 import Environment, TemplateSyntaxError, nodes

_PARSER = Environment()
_LONE = re.compile(r"^\s*\{\{(.*)\}\}\s*$", re.DOTALL)
_COMPARISONS = {
    "eq": "is",
    "ne": "is not",
    "gt": "is more than",
    "gteq": "is at least",
    "lt": "is less than",
    "lteq": "is at most",
    "in": "is in",
    "notin": "is not in",
}
_CONTEXT_WORDS = {
    "hitl_history": "the answers given so far",
    "conversation_history": "the conversation history",
    "initial_prompt": "the run's input",
    "steps": "the step outputs",
}
FINISH_EXPRESSION = "context.scratchpad.last_agent_command.action == 'finish'"


class _Unknown(Exception):
    """A construct the words do not cover: the caller quotes the source instead."""


def quote(text: str, *, limit: int = 80) -> str:
    """``text`` in double quotes on one line (whitespace collapsed), cut at ``limit`` characters."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 3].rstrip() + "..."
    return f'"{flat}"'


def sentence(text: str) -> str:
    """``text`` with a capital first letter and a final full stop."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    if text.endswith((".", "?", "!")) or (text.endswith(('"', ")")) and text[-2:-1] in (".", "?", "!")):
        return text
    return text + "."


def clause(text: str) -> str:
    """A sentence made part of another: lower-case first letter, no final full stop."""
    text = text.strip().removesuffix(".")
    return text[:1].lower() + text[1:]


def _parse(source: str) -> nodes.Node:
    template = _PARSER.parse("{{ " + source + " }}")
    body = template.body[0]
    if not isinstance(body, nodes.Output) or len(body.nodes) != 1:
        raise _Unknown(source)
    return body.nodes[0]


class _Speaker:
    """Turns expression nodes into words; ``previous`` names what ``previous_step`` is where it is read."""

    def __init__(self, previous: str) -> None:
        self.previous = previous

    def path(self, node: nodes.Node) -> str:
        parts: list[str] = []
        while True:
            if isinstance(node, nodes.Getattr):
                parts.append(node.attr)
                node = node.node
            elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
                parts.append(str(node.arg.value))
                node = node.node
            else:
                break
        if not isinstance(node, nodes.Name):
            raise _Unknown(node)
        parts.append(node.name)
        parts.reverse()
        return _path_words(parts, self.previous)

    def value(self, node: nodes.Node) -> str:
        if isinstance(node, nodes.Const):
            return _constant(node.value)
        if isinstance(node, nodes.List | nodes.Tuple):
            return "[" + ", ".join(self.value(item) for item in node.items) + "]"
        if isinstance(node, nodes.Filter) and node.node is not None and not node.args:
            inner = self.value(node.node)
            if node.name in ("length", "count"):
                return f"the number of items in {inner}"
            if node.name == "fromjson":
                return f"{inner} (decoded from JSON)"
            if node.name in ("lower", "upper", "trim"):
                return inner
            raise _Unknown(node)
        return self.path(node)

    def condition(self, node: nodes.Node) -> str:
        if isinstance(node, nodes.And):
            return f"{self.condition(node.left)} and {self.condition(node.right)}"
        if isinstance(node, nodes.Or):
            return f"{self.condition(node.left)}, or {self.condition(node.right)}"
        if isinstance(node, nodes.Not):
            if isinstance(node.node, nodes.Test) and node.node.name == "defined":
                return f"{self.value(node.node.node)} is not set"
            return f"{self.value(node.node)} is false or empty"
        if isinstance(node, nodes.Compare) and len(node.ops) == 1:
            op = node.ops[0]
            if op.op not in _COMPARISONS:
                raise _Unknown(node)
            return f"{self.value(node.expr)} {_COMPARISONS[op.op]} {self.value(op.expr)}"
        if isinstance(node, nodes.Test) and node.name == "defined" and not node.args:
            return f"{self.value(node.node)} is set"
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and len(node.args) == 1:
            verb = {"startswith": "starts with", "endswith": "ends with"}.get(node.node.attr)
            if verb is None or node.kwargs or node.dyn_args or node.dyn_kwargs:
                raise _Unknown(node)
            return f"{self.value(node.node.node)} {verb} {self.value(node.args[0])}"
        if isinstance(node, nodes.Const) and isinstance(node.value, bool):
            return "always" if node.value else "never"
        return f"{self.value(node)} is true"


def _constant(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _path_words(parts: Sequence[str], previous: str) -> str:
    root, rest = parts[0], list(parts[1:])
    if root == "previous_step":
        base = previous
    elif root == "iteration" and not rest:
        return "the iteration number"
    elif root == "initial_prompt":
        base = "the run's input"
    elif root == "steps" and len(rest) >= 2 and rest[1] == "output":
        base, rest = f"{rest[0]}'s output", rest[2:]
    elif root == "context" and rest[:1] == ["scratchpad"] and len(rest) >= 2:
        if rest[1:] == ["last_agent_command", "action"]:
            return "the action of the last agent command"
        return "scratchpad." + ".".join(rest[1:])
    elif root == "context" and len(rest) == 1 and rest[0] in _CONTEXT_WORDS:
        return _CONTEXT_WORDS[rest[0]]
    else:
        return ".".join(parts)
    if not rest:
        return base
    return f"the {'.'.join(rest)} of {base}"


def condition_words(source: str, *, previous: str = "the last output") -> str | None:
    """``source`` (an expression read as true/false) in words, or None when the words do not cover it."""
    if " ".join(source.split()) == FINISH_EXPRESSION:
        return 'an agent replied {"action": "finish"}'
    try:
        return _Speaker(previous).condition(_parse(source))
    except (_Unknown, TemplateSyntaxError):
        return None


def value_words(source: str, *, previous: str = "the last output") -> str | None:
    """``source`` (an expression read for its value) in words, or None when the words do not cover it."""
    try:
        return _Speaker(previous).value(_parse(source))
    except (_Unknown, TemplateSyntaxError):
        return None


def template_words(source: str, *, previous: str = "the last output") -> str:
    """A template in words: a lone ``{{ expression }}`` as its value, any other template quoted."""
    lone = _LONE.match(source)
    if lone and "{{" not in lone.group(1) and "}}" not in lone.group(1):
        words = value_words(lone.group(1).strip(), previous=previous)
        if words is not None:
            return words
    return quote(source)


def schema_words(schema: Mapping[str, Any]) -> str:
    """What a JSON Schema accepts, briefly: ``a whole number from 1 to 8``, ``one of ask, finish``."""
    if "enum" in schema and isinstance(schema["enum"], list):
        return "one of " + ", ".join(str(item) for item in schema["enum"])
    kind = schema.get("type")
    if kind == "integer" or kind == "number":
        noun = "a whole number" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"{noun} from {low} to {high}"
        if low is not None:
            return f"{noun} of at least {low}"
        if high is not None:
            return f"{noun} of at most {high}"
        return noun
    if kind == "boolean":
        return "yes or no"
    if kind == "string":
        return "text"
    if kind == "array":
        return "a JSON list"
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        return "JSON with " + ", ".join(str(key) for key in properties)
    if kind == "object":
        return "a JSON object"
    return "JSON matching " + json.dumps(schema, ensure_ascii=False)[:60]
