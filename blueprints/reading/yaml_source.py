"""Reading a blueprint's YAML once, keeping where every key and value is.

The text is composed into PyYAML nodes (which carry marks), then this module walks the nodes itself to
build both the plain data and the ``PositionIndex``; that is the one place YAML is parsed. While walking
it rejects duplicate keys (PyYAML silently keeps the last one) and turns every mapping key into a string:
``true:``/``false:`` (the branch keys of a conditional) become ``"true"``/``"false"``, ``1:`` becomes ``"1"``.
PyYAML's exceptions are translated into findings here and nowhere else.

Hostile input is bounded (``BoundsSettings``): nesting deeper than ``yaml_max_depth`` is refused while
composing, before PyYAML's recursion can exhaust the stack, and the walk refuses a document whose values,
counted with every alias expanded, exceed ``yaml_max_values`` or nest deeper than ``yaml_max_depth`` (an
alias bomb composes in a millisecond because its references are shared; it is the expansion that explodes).

``fast=True`` (answers files, which can hold thousands of entries) composes with libyaml, PyYAML's C
loader, about 20 x faster. libyaml's composer recurses in C and crashes the process on deep enough nesting,
so its event stream (made without recursion) is first checked against ``yaml_max_depth``; then the same
walk and bounds apply. Anything the fast path would report (a syntax error, a passed bound, a finding, a
character PyYAML refuses) is read again by the Python loader, so every message stays the same.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, NodeEvent, StreamEndEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import Reader

from blueprints.reading.findings import Finding
from blueprints.reading.positions import Path, Place, PositionIndex
from core import BoundsSettings, SourcePosition

# Plain-language hints for the YAML mistakes people make most.
_SYNTAX_HINTS = (
    ("cannot start any token", "YAML indents with spaces; replace the tab (or quote the value)"),
    ("mapping values are not allowed", "check this line's indentation, or quote a value that holds ': '"),
    ("expected <block end>", "check this line's indentation against the lines above it"),
    ("could not find expected ':'", "a key needs ': ' after it; quote values that span lines"),
    ("found undefined alias", "define the anchor (&name) before using it (*name)"),
    ("expected a single document", "a blueprint is one YAML document; remove the extra '---'"),
    ("while scanning a quoted scalar", "close the quote"),
    ("found unexpected end of stream", "close the quote or bracket that is still open"),
    ("<stream end>", "close the quote or bracket that is still open"),
)


@dataclass
class ParsedYaml:
    """The data of a YAML file, where each part of it is, and problems found while reading it."""

    data: Any
    index: PositionIndex
    findings: list[Finding] = field(default_factory=list)
    ok: bool = True


def _key_text(value: Any, node: ScalarNode) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return str(node.value)


class _OverLimit(Exception):
    """Internal: a bound of ``BoundsSettings`` was passed at ``mark``. Never escapes this module."""

    def __init__(self, message: str, hint: str, mark: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.mark = mark


def _too_deep(limit: int, mark: Any) -> _OverLimit:
    return _OverLimit(
        f"the YAML nests more than {limit} levels deep",
        "flatten the structure (the limit is the setting bounds.yaml_max_depth)",
        mark,
    )


def _too_many(limit: int, mark: Any, *, aliases: bool) -> _OverLimit:
    if aliases:
        return _OverLimit(
            f"the YAML holds more than {limit:,} values once its aliases are expanded",
            "use fewer aliases (*name) or smaller ones (the limit is the setting bounds.yaml_max_values)",
            mark,
        )
    return _OverLimit(
        f"the YAML holds more than {limit:,} values",
        "split it into smaller files (a blueprint can import others), or raise the setting bounds.yaml_max_values",
        mark,
    )


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing to compose nesting deeper than ``max_depth`` (its composer recurses
    once per level, so the check comes before the recursion that would exhaust the stack) or more than
    ``max_values`` values (refused where it passes the bound, not after composing the rest). ``aliases``:
    whether the document has used one (a value bound passed after expansion is then worded for them)."""

    def __init__(self, text: str, max_depth: int, max_values: int) -> None:
        super().__init__(text)
        self._max_depth = max_depth
        self._max_values = max_values
        self._depth = 0
        self._values = 0
        self.aliases = False

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            self.aliases = True
        else:
            self._values += 1
            if self._values > self._max_values:  # with no alias expanded, there are at least as many
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _too_many(self._max_values, mark, aliases=False)
        self._depth += 1
        try:
            if self._depth > self._max_depth:
                raise _too_deep(self._max_depth, self.peek_event().start_mark)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_expansion(root: Node, bounds: BoundsSettings, *, aliases: bool = True) -> None:
    """Raise _OverLimit when ``root``, with every alias expanded, holds more than ``yaml_max_values``
    values or nests deeper than ``yaml_max_depth``. Counted per distinct node (shared references are
    counted once each and multiplied), without recursion, so an alias bomb costs what its text does."""
    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) once expanded
    opened: set[int] = set()  # nodes whose children are being counted: one met again is a cycle
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done:
            if id(node) in opened:
                continue  # a node that contains itself is left to the walk, which reports it
            opened.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes and id(child) not in opened)
            continue
        opened.discard(id(node))
        values, depth = 1, 0
        for child in children:
            child_values, child_depth = sizes.get(id(child), (1, 0))
            values += child_values
            depth = max(depth, child_depth + 1)
        if values > bounds.yaml_max_values:
            raise _too_many(bounds.yaml_max_values, node.start_mark, aliases=aliases)
        if depth > bounds.yaml_max_depth:
            raise _too_deep(bounds.yaml_max_depth, node.start_mark)
        sizes[id(node)] = (values, depth)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


class _Walker:
    def __init__(self, loader: SafeConstructor, index: PositionIndex) -> None:
        self.loader = loader
        self.index = index
        self.findings: list[Finding] = []
        self._active: set[int] = set()

    def position(self, mark: Any) -> SourcePosition:
        return SourcePosition(self.index.file, mark.line + 1, mark.column + 1)

    def walk(self, node: Node, path: Path) -> Any:
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if id(node) in self._active:  # an alias that contains itself
            at = self.position(node.start_mark)
            self.findings.append(
                Finding(
                    "error",
                    "a YAML alias refers to itself",
                    at,
                    None,
                    "yaml-syntax",
                    self.index.excerpt(at),
                    self.index.file,
                )
            )
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                items = []
                for number, item in enumerate(node.value):
                    mark = item.start_mark
                    self.index.add((*path, number), Place(None, None, mark.line + 1, mark.column + 1, _style(item)))
                    items.append(self.walk(item, (*path, number)))
                return items
            assert isinstance(node, MappingNode)
            self.loader.flatten_mapping(node)  # resolve "<<: *defaults" merge keys
            return self._mapping(node, path)
        finally:
            self._active.discard(id(node))

    def scalar(self, node: ScalarNode) -> Any:
        try:
            return _printable(self.loader.construct_object(node, deep=True))
        except (ValueError, OverflowError) as exc:  # !!timestamp 2020-99-99, an integer of 5,000 digits
            at = self.position(node.start_mark)
            problem = str(exc).partition(";")[0]
            self.findings.append(
                Finding(
                    "error", f"cannot read this value: {problem}", at, "write it as text, in quotes",
                    "bad-value", self.index.excerpt(at), self.index.file,
                )
            )  # fmt: skip
            return None

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key_at = self.position(key_node.start_mark)
            if not isinstance(key_node, ScalarNode):
                self.findings.append(
                    Finding(
                        "error", "a key must be plain text, not a list or mapping", key_at, None,
                        "bad-value", self.index.excerpt(key_at), self.index.file,
                    )
                )  # fmt: skip
                continue
            key = _key_text(self.scalar(key_node), key_node)
            written = str(key_node.value)
            if key != written and key in ("true", "false") and not key_node.style:  # plain: None, or "" (libyaml)
                # YAML 1.1 reads yes/no/on/off as booleans: a branch named "yes" would never match.
                self.findings.append(
                    Finding(
                        "warning", f"YAML reads the key {written!r} as {key}", key_at,
                        f"write {key} if you mean the boolean, or quote it ('{written}') to mean the text",
                        "bad-value", self.index.excerpt(key_at), self.index.file,
                    )
                )  # fmt: skip
            if key in result:
                first = self.index.key((*path, key))
                where = f" (first at line {first.line})" if first else ""
                spelled = f" (YAML reads {written!r} as {key})" if key != written else ""
                self.findings.append(
                    Finding(
                        "error",
                        f"duplicate key {key!r}{spelled}{where}",
                        key_at,
                        "YAML would silently keep only one of them; remove or rename one",
                        "duplicate-key",
                        self.index.excerpt(key_at),
                        self.index.file,
                    )
                )
                continue
            value_mark = value_node.start_mark
            self.index.add(
                (*path, key),
                Place(key_at.line, key_at.column, value_mark.line + 1, value_mark.column + 1, _style(value_node)),
            )
            result[key] = self.walk(value_node, (*path, key))
        return result


def _printable(value: Any) -> Any:
    """``value``; ValueError, as Python's for a decimal one, for an integer of more digits than Python turns
    into text (``sys.get_int_max_str_digits``): PyYAML reads ``0x``, octal and ``0b`` integers of any length,
    and the first message or JSON that printed one would fail."""
    limit = sys.get_int_max_str_digits()
    # Below 2**(3 * limit) a number has fewer than ``limit`` digits; only longer ones are compared.
    if isinstance(value, int) and limit and value.bit_length() > 3 * limit and abs(value) >= 10**limit:
        raise ValueError(f"Exceeds the limit ({limit} digits) for integer string conversion")
    return value


def _style(node: Node) -> str | None:
    return (node.style or None) if isinstance(node, ScalarNode) else None  # libyaml writes a plain style as ""


def _syntax_finding(exc: yaml.YAMLError, index: PositionIndex) -> Finding:
    at: SourcePosition | None = None
    problem = str(exc)
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            at = SourcePosition(index.file, mark.line + 1, mark.column + 1)
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            # PyYAML splits "expected X, but found Y" across context and problem; put it back in order.
            problem = f"{exc.context}, {problem}" if problem.startswith("but ") else f"{problem} ({exc.context})"
    elif isinstance(exc, yaml.reader.ReaderError):
        text = "\n".join(index.lines)
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        at = SourcePosition(index.file, line, column)
        character = exc.character if isinstance(exc.character, str) else chr(exc.character)
        problem = f"the character U+{ord(character):04X} is not allowed in YAML"
    hint = next((h for needle, h in _SYNTAX_HINTS if needle in problem), None)
    return Finding("error", f"YAML syntax error: {problem}", at, hint, "yaml-syntax", index.excerpt(at), index.file)


def parse_yaml(text: str, file: str, *, bounds: BoundsSettings | None = None, fast: bool = False) -> ParsedYaml:
    """Parse ``text`` (the contents of ``file``) within ``bounds`` (the defaults when None); syntax errors
    and passed bounds come back as one finding, never raised. ``fast``: with libyaml when PyYAML has it
    (the module docstring says how it stays bounded); the result is the same."""
    bounds = bounds or BoundsSettings()
    index = PositionIndex(file, text.splitlines())
    if fast and yaml.__with_libyaml__:
        parsed = _parse_with_libyaml(text, index, bounds)
        if parsed is not None:
            return parsed
    loader: _BoundedLoader | None = None
    try:
        # rejects NUL and other unprintable characters
        loader = _BoundedLoader(text, bounds.yaml_max_depth, bounds.yaml_max_values)
        return _composed(loader, index, bounds)
    except yaml.YAMLError as exc:
        return ParsedYaml(None, index, [_syntax_finding(exc, index)], ok=False)
    except _OverLimit as exc:
        at = SourcePosition(file, exc.mark.line + 1, exc.mark.column + 1)
        finding = Finding("error", exc.message, at, exc.hint, "over-limit", index.excerpt(at), file)
        return ParsedYaml(None, index, [finding], ok=False)
    finally:
        if loader is not None:
            loader.dispose()


def _parse_with_libyaml(text: str, index: PositionIndex, bounds: BoundsSettings) -> ParsedYaml | None:
    """``text`` read by libyaml within ``bounds``, or None when anything is to be reported (the Python
    loader then reads it again and words the finding)."""
    if Reader.NON_PRINTABLE.search(text) or _nests_deeper(text, bounds.yaml_max_depth):
        return None
    loader = yaml.CSafeLoader(text)
    try:
        parsed = _composed(loader, index, bounds)
    except (yaml.YAMLError, _OverLimit):
        return None
    finally:
        loader.dispose()
    return None if parsed.findings else parsed


def _composed(loader: Any, index: PositionIndex, bounds: BoundsSettings) -> ParsedYaml:
    """The document ``loader`` composes, its places indexed, checked against ``bounds`` (``_OverLimit``) and
    walked into data with the walker's findings."""
    node = loader.get_single_node()
    if node is None:
        return ParsedYaml(None, index)
    index.add((), Place(None, None, node.start_mark.line + 1, node.start_mark.column + 1, _style(node)))
    # libyaml's loader counts nothing while composing: what it refuses is read again by ours, which words it
    _check_expansion(node, bounds, aliases=loader.aliases if isinstance(loader, _BoundedLoader) else True)
    walker = _Walker(loader, index)
    return ParsedYaml(walker.walk(node, ()), index, walker.findings)


def _nests_deeper(text: str, limit: int) -> bool:
    """Whether the YAML of ``text`` nests more than ``limit`` levels deep, counted as the Python loader
    counts them (a scalar inside 100 lists is level 101), or cannot be parsed. Read from libyaml's event
    stream: libyaml's parser keeps its state on the heap, so this never recurses."""
    loader = yaml.CSafeLoader(text)
    depth = 0
    try:
        while True:
            event = loader.get_event()
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > limit:
                    return True
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
            elif isinstance(event, NodeEvent) and depth + 1 > limit:  # a scalar or an alias is a level too
                return True
            elif event is None or isinstance(event, StreamEndEvent):
                return False
    except yaml.YAMLError:
        return True
    finally:
        loader.dispose()
