"""Templates and safe expressions: one sandboxed Jinja2 environment for both.

- Templates render strings (``"Goal: {{ steps.get_goal.output }}"``). A template that is a single
  ``{{ expression }}`` and nothing else returns the expression's *value* (a dict stays a dict).
- The handlebars blocks used by the Flujo specs (``{{#each xs}}``, ``{{#if x}}``, ``{{else}}``,
  ``{{else if y}}``, ``{{#unless x}}``, ``{{this.role}}``, ``{{@index}}``) are translated to Jinja before
  compiling, with ``trim_blocks``/``lstrip_blocks`` so the output matches handlebars' standalone-line rule.
  As in handlebars, a block over a missing value is falsy (``#each`` over it renders its ``else``).
- Expressions (exit_expression, condition_expression, when) compile with ``compile_expression``: the
  same language and the same sandbox; Python ``eval`` is never used. A missing attribute in an
  expression is undefined (falsy), so ``context.scratchpad.cmd.action == 'finish'`` is simply false
  before any command exists; in a template it is an error that names the variable.
- Syntax errors surface at compile time as ``TemplateSyntax`` (the loader adds file:line:col); so does
  nesting deeper than ``bounds.template_max_nesting``.
- Both run in ``core.text.sandbox.BoundedSandbox``: what a render or evaluation may make and do is bounded
  (``core.text.bounds``); a passed bound is a TemplateError naming the setting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jinja2 import ChainableUndefined, StrictUndefined, TemplateSyntaxError, Undefined, UndefinedError, nodes
from jinja2.exceptions import SecurityError

from core.model.errors import SourcePosition, TemplateError
from core.model.views import ATOMIC, json_default, plain
from core.text.bounds import BoundExceeded, current_bounds, rendering
from core.text.sandbox import UNREAD, BoundedSandbox, read_keys


class TemplateSyntax(ValueError):
    """A template or expression that does not compile; ``line`` is 1-based within the text."""

    def __init__(self, message: str, *, line: int | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.hint = hint


def _tojson(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=json_default)


def _fromjson(value: Any) -> Any:
    """Decode JSON text (``'["a", "b"]' | fromjson``); values that are not text pass through."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"fromjson: not JSON ({exc.msg} at character {exc.pos})") from None


# Plain, side-effect-free callables an author may use (``str(x)``, ``len(xs)`` ...).
_SAFE_GLOBALS: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "len": len,
    "list": list,
    "dict": dict,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "sorted": sorted,
    "tojson": _tojson,
}


class _StrictChainedUndefined(ChainableUndefined, StrictUndefined):
    """A template's missing value: an error as soon as it is used (printed, iterated, compared, tested for
    truth), but reading an attribute of it chains, so ``a.b.c is defined`` and ``a.b.c | default(x)`` work
    when ``a`` is missing (the handlebars ``{{#if}}`` translation relies on it); the error names ``a``."""

    __slots__ = ()


def _make_env(undefined: type[Undefined]) -> BoundedSandbox:
    env = BoundedSandbox(
        undefined=undefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.globals.update(_SAFE_GLOBALS)
    env.add_filter("tojson", _tojson)
    env.add_filter("fromjson", _fromjson)
    return env


_OPENING = {"(": ")", "[": "]", "{": "}"}
_NESTING_HINT = "nest less deeply (the limit is the setting bounds.template_max_nesting)"
# The patterns of this module are compiled at their first use (``re``'s own cache keeps them): a run whose
# blueprint has no template needs none of them (compiling them at import cost every run 3 M instructions).
_TAG = r"(?s)\{\{.*?\}\}|\{%.*?%\}"


def _check_nesting(source: str, *, expression: bool) -> None:
    """Refuse brackets nested deeper than ``bounds.template_max_nesting`` inside ``{{ }}``/``{% %}`` (or
    anywhere in an expression): Jinja's parser recurses once per level and would exhaust the stack."""
    limit = current_bounds().template_max_nesting
    parts = [source] if expression else [match.group(0)[2:-2] for match in re.finditer(_TAG, source)]
    for part in parts:
        depth = 0
        for character in part:
            if character in _OPENING:
                depth += 1
                if depth > limit:
                    line = source.count("\n", 0, source.find(part)) + 1 if part else None
                    raise TemplateSyntax(f"brackets nest more than {limit} deep", line=line, hint=_NESTING_HINT)
            elif character in ")]}":
                depth = max(depth - 1, 0)


_LOADING = {nodes.Include: "include", nodes.Extends: "extends", nodes.Import: "import", nodes.FromImport: "from"}


def _refuse_loading(tree: nodes.Template) -> None:
    """Templates are strings in the blueprint; there are no template files for ``{% include %}``,
    ``{% extends %}``, ``{% import %}`` or ``{% from %}`` to load, so they are syntax errors here, not
    failures at run time."""
    for kind, word in _LOADING.items():
        for node in tree.find_all(kind):
            raise TemplateSyntax(
                f"{{% {word} %}} is not supported: a template cannot load other templates",
                line=node.lineno,
                hint="write the text in place, or define a {% macro %} in the same template",
            )


_COMPUTING = (nodes.BinExpr, nodes.Call, nodes.Filter)


def _check_constants(tree: nodes.Template) -> None:
    """Refuse, as a syntax error (so at file:line:col, before anything runs), a computation made only of
    constants that would pass a bound when it runs (``{{ 'a' * 3000000000 }}``, ``9**(9**9) > 0``).
    Jinja's own constant folding is off for the bounded operators; this evaluates each outermost constant
    computation once, within the same bounds. Any other failure is left for the run to report."""
    pure = _TEMPLATE_ENV.globals  # range, lipsum, str ...: a call of one on constants is a constant
    candidates = [
        node
        for node in tree.find_all(_COMPUTING)
        if all(name.name in pure and name.ctx == "load" for name in node.find_all(nodes.Name))
    ]
    inner = {id(child) for node in candidates for child in node.find_all(_COMPUTING)}
    for node in candidates:
        if id(node) in inner:
            continue
        try:
            with rendering():
                _TEMPLATE_ENV.from_string(nodes.Template([nodes.Output([node], lineno=node.lineno)], lineno=1)).render()
        except BoundExceeded as exc:
            raise TemplateSyntax(
                f"this would be stopped when it runs: {exc.message}",
                line=node.lineno,
                hint=f"make it smaller; the limit is the setting bounds.{exc.setting}",
            ) from None
        except Exception:  # a constant that fails otherwise (1 / 0) is the run's to report
            continue


def _check_expression_constants(source: str) -> None:
    """``_check_constants`` for an expression (compiled already, so its syntax is known to be fine)."""
    try:
        tree = _TEMPLATE_ENV.parse("{{ " + source + " }}")
    except TemplateSyntaxError:  # an expression whose text cannot stand inside {{ }}: nothing to check
        return
    _check_constants(tree)


def _quoted(source: str, *, limit: int = 100) -> str:
    """``source`` quoted for an error message: its start and its end when longer than ``limit``, cut with …
    (a template can be megabytes long; its error stays one readable line)."""
    if len(source) > limit:
        source = source[: limit // 2] + "…" + source[-(limit // 2) :]
    return repr(source)


def _bound_error(kind: str, source: str, exc: BoundExceeded, where: str = "") -> TemplateError:
    return TemplateError(
        f"{where}{kind} {_quoted(source)} was stopped: {exc.message}",
        hint=f"make it smaller; the limit is the setting bounds.{exc.setting}",
    )


_TEMPLATE_ENV = _make_env(_StrictChainedUndefined)
_EXPRESSION_ENV = _make_env(ChainableUndefined)

_HB_TOKEN = r"\{\{\s*(#each|#if|#unless|else|/each|/if|/unless)\b\s*([^}]*?)\s*\}\}"
_HB_THIS = r"\{\{\s*this((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}"
_HB_INDEX = r"\{\{\s*@index\s*\}\}"


def translate_handlebars(text: str) -> str:
    """Rewrite the handlebars subset into Jinja; raise TemplateSyntax on unbalanced blocks."""
    if "{{#" not in text and "{{/" not in text and "{{ #" not in text and "this" not in text and "@index" not in text:
        return text
    stack: list[str] = []

    def block(match: re.Match[str]) -> str:
        word, arg = match.group(1), match.group(2).strip()
        line = text.count("\n", 0, match.start()) + 1
        # As in handlebars, a missing value is simply falsy (an empty list for #each), not an error.
        if word == "#each":
            stack.append("each")
            return "{% for this in ((" + arg + ") if (" + arg + ") is defined else ()) %}"
        if word in ("#if", "#unless"):
            stack.append("if")
            test = _hb_truthy(arg)
            return "{% if " + ("not " + test if word == "#unless" else test) + " %}"
        if word == "else":
            if not stack:
                raise TemplateSyntax("{{else}} outside a block", line=line)
            chained = re.fullmatch(r"if\s+(.+)", arg, re.DOTALL)
            if chained and stack[-1] == "if":  # {{else if x}}: handlebars' chained condition
                return "{% elif " + _hb_truthy(chained.group(1)) + " %}"
            if arg:
                raise TemplateSyntax(f"{{{{else {arg}}}}} is not supported; write {{{{else if ...}}}}", line=line)
            return "{% else %}"
        wanted = "each" if word == "/each" else "if"
        if not stack or stack[-1] != wanted:
            raise TemplateSyntax(f"{{{{{word}}}}} does not close an open block", line=line)
        stack.pop()
        return "{% endfor %}" if wanted == "each" else "{% endif %}"

    out = re.sub(_HB_TOKEN, block, text)
    if stack:
        raise TemplateSyntax(f"unclosed {{{{#{stack[-1]}}}}} block")
    out = re.sub(_HB_THIS, lambda m: "{{ this" + m.group(1) + " }}", out)
    return re.sub(_HB_INDEX, "{{ loop.index0 }}", out)


def _hb_truthy(arg: str) -> str:
    return "((" + arg + ") is defined and (" + arg + "))"


def _undefined_inside(value: Any) -> Undefined | None:
    """The first undefined value inside lists/tuples/dicts (``{{ {'goal': stepz.x} }}``), if any."""
    if isinstance(value, Undefined):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else ()
    for item in items:
        if type(item) in ATOMIC:  # not a call for each number of a long list
            continue
        found = _undefined_inside(item)
        if found is not None:
            return found
    return None


def _undefined_to_none(value: Any) -> Any:
    if isinstance(value, Undefined):
        return None
    if isinstance(value, dict):
        return {key: _undefined_to_none(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_undefined_to_none(item) for item in value)
    return value


_NO_ATTRIBUTE = r"'([\w .]+) object' has no attribute '([^']+)'"
_SINGLE_EXPRESSION = r"(?s)^\s*\{\{(.*)\}\}\s*$"


def _where(position: SourcePosition | None) -> str:
    """The prefix of a run-time error of a template written at ``position``: ``"file:line:col: "``."""
    return "" if position is None else f"{position}: "


class Template:
    """A compiled template. ``render`` returns a str, or a value for a lone ``{{ expression }}``.

    ``position``: where the blueprint writes it; its run-time errors (TemplateError) start with it."""

    __slots__ = ("_expression", "_path", "_template", "_where", "source")

    def __init__(self, source: str, *, position: SourcePosition | None = None) -> None:
        self.source = source
        self._where = _where(position)
        self._expression: Any = None
        self._path: tuple[str, tuple[str, ...]] | None = None
        self._template: Any = None
        _check_nesting(source, expression=False)
        try:
            lone = re.match(_SINGLE_EXPRESSION, source)
            if lone and "{{" not in lone.group(1) and "}}" not in lone.group(1):
                self._expression = _TEMPLATE_ENV.compile_expression(lone.group(1), undefined_to_none=False)
                _check_expression_constants(lone.group(1))
                self._path = _name_path(lone.group(1))
            else:
                tree = _TEMPLATE_ENV.parse(translate_handlebars(source))
                _refuse_loading(tree)
                _check_constants(tree)
                self._template = _TEMPLATE_ENV.from_string(tree)
        except TemplateSyntaxError as exc:
            raise TemplateSyntax(exc.message or str(exc), line=exc.lineno) from None
        except RecursionError:
            raise TemplateSyntax("the template nests too deeply", hint=_NESTING_HINT) from None

    def render(self, variables: Mapping[str, Any]) -> Any:
        try:
            with rendering() as meter:
                if self._expression is not None:
                    value = UNREAD
                    if self._path is not None and self._path[0] in variables:  # {{ steps.ask.output }}
                        value = read_keys(variables[self._path[0]], self._path[1])
                    if value is UNREAD:  # anything else, a missing key included, is Jinja's to read
                        value = self._expression(**variables)
                    value = meter.check(value)
                    missing = _undefined_inside(value)
                    if missing is not None:
                        str(missing)  # raises UndefinedError naming the missing variable
                    return plain(value)  # a lone {{ context }} yields data, not a view of the run
                return self._template.render(**variables)
        except BoundExceeded as exc:
            raise _bound_error("template", self.source, exc, self._where) from None
        except UndefinedError as exc:
            message = re.sub(_NO_ATTRIBUTE, r"'\2' is undefined (no such key)", exc.message or str(exc))
            raise TemplateError(
                f"{self._where}template {_quoted(self.source)}: {message}",
                hint="check the variable name; available: context, previous_step, steps, initial_prompt",
            ) from None
        except SecurityError as exc:
            raise TemplateError(f"{self._where}template {_quoted(self.source)} tried something unsafe: {exc}") from None
        except TemplateError:
            raise
        except Exception as exc:  # a filter or a value misbehaved: report it as the template's failure
            raise TemplateError(f"{self._where}template {_quoted(self.source)} failed: {exc}") from None

    def render_text(self, variables: Mapping[str, Any]) -> str:
        """Render and always return text (values are JSON-encoded when they are not strings)."""
        value = self.render(variables)
        return value if isinstance(value, str) else _tojson(value)

    @property
    def variables(self) -> set[str]:
        """Top-level variable names the template reads (for the loader's checks)."""
        return referenced_names(self.source)

    def __repr__(self) -> str:
        return f"Template({self.source!r})"


def _name_path(expression: str) -> tuple[str, tuple[str, ...]] | None:
    """``("steps", ("ask", "output"))`` for ``steps.ask.output``: an expression that only reads a variable and
    names after dots, which ``Template.render`` reads on run data without running Jinja (``read_keys``, as
    the sandbox reads them: the same value); None for any other expression."""
    try:
        body = _TEMPLATE_ENV.parse("{{ " + expression + " }}").body
    except (TemplateSyntaxError, RecursionError):  # compiled as an expression already: Jinja reads it
        return None
    if len(body) != 1 or not isinstance(body[0], nodes.Output) or len(body[0].nodes) != 1:
        return None
    node, names = body[0].nodes[0], []
    while isinstance(node, nodes.Getattr):
        names.append(node.attr)
        node = node.node
    if not isinstance(node, nodes.Name) or node.ctx != "load":
        return None
    return node.name, tuple(reversed(names))


class Expression:
    """A compiled safe expression, evaluated against a mapping of variables; ``position`` as a Template's."""

    __slots__ = ("_compiled", "_where", "source")

    def __init__(self, source: str, *, position: SourcePosition | None = None) -> None:
        self.source = source
        self._where = _where(position)
        _check_nesting(source, expression=True)
        try:
            self._compiled = _EXPRESSION_ENV.compile_expression(source, undefined_to_none=True)
            _check_expression_constants(source)
        except TemplateSyntaxError as exc:
            raise TemplateSyntax(exc.message or str(exc), line=exc.lineno) from None
        except RecursionError:
            raise TemplateSyntax("the expression nests too deeply", hint=_NESTING_HINT) from None

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        try:
            with rendering() as meter:
                value = meter.check(self._compiled(**variables))
        except BoundExceeded as exc:
            raise _bound_error("expression", self.source, exc, self._where) from None
        except SecurityError as exc:
            raise TemplateError(
                f"{self._where}expression {_quoted(self.source)} tried something unsafe: {exc}"
            ) from None
        except Exception as exc:  # e.g. comparing a str with an int: report it as the expression's failure
            raise TemplateError(f"{self._where}expression {_quoted(self.source)} failed: {exc}") from None
        # Missing is None, also inside a list or mapping the expression built.
        return value if _undefined_inside(value) is None else _undefined_to_none(value)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


_MACRO_NAMES = frozenset(("caller", "varargs", "kwargs"))


def referenced_names(source: str) -> set[str]:
    """Top-level names a template or expression reads, e.g. {'steps', 'context'}."""
    try:
        ast = _TEMPLATE_ENV.parse(translate_handlebars(source))
    except (TemplateSyntaxError, TemplateSyntax, RecursionError):
        return set()
    assigned = {node.name for node in ast.find_all(nodes.Name) if node.ctx in ("store", "param")}
    assigned |= {node.name for node in ast.find_all(nodes.Macro)}  # {% macro g(n) %} defines g
    # Inside a macro, Jinja defines caller (for {% call %}), varargs and kwargs.
    in_macros = {id(name) for macro in ast.find_all(nodes.Macro) for name in macro.find_all(nodes.Name)}
    read = {
        node.name
        for node in ast.find_all(nodes.Name)
        if node.ctx == "load" and not (node.name in _MACRO_NAMES and id(node) in in_macros)
    }
    return read - assigned - {"this", "loop"}


def builds_structure(source: str) -> bool:
    """Whether ``source`` is one ``{{ expression }}`` that builds a mapping or a list literal
    (``{{ {'ask': previous_step} }}``): such a template renders a value, never text."""
    lone = re.match(_SINGLE_EXPRESSION, source)
    if lone is None or "{{" in lone.group(1) or "}}" in lone.group(1):
        return False
    try:
        expression = _TEMPLATE_ENV.parse("{{ " + lone.group(1) + " }}")
    except TemplateSyntaxError:
        return False
    if len(expression.body) != 1 or not isinstance(expression.body[0], nodes.Output):
        return False
    values = expression.body[0].nodes
    return len(values) == 1 and isinstance(values[0], (nodes.Dict, nodes.List, nodes.Tuple))


def whole_references(source: str) -> set[str]:
    """Top-level names a template reads as a whole object (``{{ context }}``, ``{{ previous_step | tojson }}``),
    rather than only through one of their keys (``{{ context.scratchpad.goal }}``)."""
    try:
        ast = _TEMPLATE_ENV.parse(translate_handlebars(source))
    except (TemplateSyntaxError, TemplateSyntax, RecursionError):
        return set()
    bases = {id(node.node) for node in ast.find_all(nodes.Getattr)}
    bases |= {id(node.node) for node in ast.find_all(nodes.Getitem)}
    return {node.name for node in ast.find_all(nodes.Name) if node.ctx == "load" and id(node) not in bases}


def step_references(source: str) -> set[str]:
    """Step names read as ``steps.<name>`` or ``steps['name']`` in a template or expression."""
    try:
        ast = _TEMPLATE_ENV.parse(translate_handlebars(source))
    except (TemplateSyntaxError, TemplateSyntax, RecursionError):
        return set()
    names: set[str] = set()
    for node in ast.find_all(nodes.Getattr):
        if isinstance(node.node, nodes.Name) and node.node.name == "steps":
            names.add(node.attr)
    for item in ast.find_all(nodes.Getitem):
        if (
            isinstance(item.node, nodes.Name)
            and item.node.name == "steps"
            and isinstance(item.arg, nodes.Const)
            and isinstance(item.arg.value, str)
        ):
            names.add(item.arg.value)
    return names
