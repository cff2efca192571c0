"""Checks of templates and expressions: syntax, variable names, and ``steps.<name>`` references.

Every template and expression is compiled here with ``core.text.templates`` (the same compiler the run
uses), so a syntax error is reported at the value's line in the file, offset by the error's line within
a block scalar. A variable that is not one of the known names is an error: in a template it would fail
at run time, and in an expression it would silently be false.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from jinja2.defaults import DEFAULT_NAMESPACE

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.context_keys import check_context_reads
from blueprints.reading.positions import Path
from blueprints.reading.suggestions import did_you_mean, one_of
from core import Expression, Template, TemplateSyntax, referenced_names, step_references

# The variables every template and expression sees (see core.policies.frame.scope); ``iteration`` is
# there only for a loop's exit_expression and propagation template, which pass it as ``extra_names`` ...
SCOPE_NAMES = ("context", "previous_step", "steps", "initial_prompt")
# ... the callables core.text.templates offers (its _SAFE_GLOBALS), and Jinja's own globals.
_FUNCTION_NAMES = (
    "str",
    "int",
    "float",
    "bool",
    "len",
    "list",
    "dict",
    "min",
    "max",
    "abs",
    "round",
    "sorted",
    "tojson",
)
_KNOWN = frozenset((*SCOPE_NAMES, *_FUNCTION_NAMES, *DEFAULT_NAMESPACE))


def _locate(source: str, pattern: str) -> tuple[int, int]:
    """1-based (line, column) of the first match of ``pattern`` in ``source`` (1, 1 when absent)."""
    match = re.search(pattern, source)
    if match is None:
        return 1, 1
    line = source.count("\n", 0, match.start()) + 1
    column = match.start() - (source.rfind("\n", 0, match.start()) + 1) + 1
    return line, column


def check_text(
    checker: Checker,
    path: Path,
    source: str,
    *,
    expression: bool = False,
    extra_names: Iterable[str] = (),
    step_names: Iterable[str],
    any_context: bool = False,
) -> None:
    """Compile ``source`` (a template, or an expression) and check the names it reads. ``any_context``:
    its ``context`` holds keys known only at run time (an ensemble's accumulated context), so its context
    reads are not checked against what the blueprint writes."""
    what = "expression" if expression else "template"
    try:
        if expression:
            Expression(source)
        else:
            Template(source)
    except TemplateSyntax as exc:
        position = checker.index.inside(path, exc.line or 1) if exc.line else checker.at(path)
        checker.error(
            "template-syntax",
            f"{what} syntax error: {exc.message}",
            position or checker.at(path),
            exc.hint
            or (
                "check that every '{{' has a matching '}}' and every block is closed"
                if not expression
                else "write a Jinja expression, e.g. context.scratchpad.done == true"
            ),
        )
        return
    known = _KNOWN | set(extra_names)
    # The name finders read template text; an expression is the inside of one ``{{ }}``.
    text = "{{ " + source + " }}" if expression else source
    for name in sorted(referenced_names(text) - known):
        line, column = _locate(source, rf"\b{re.escape(name)}\b")
        checker.error(
            "unknown-reference",
            f"{what} reads {name!r}, which is not defined{did_you_mean(name, known)}",
            checker.index.inside(path, line, column) or checker.at(path),
            f"{what}s can read {one_of((*SCOPE_NAMES, *extra_names))}",
        )
    defined = set(step_names)
    for step in sorted(step_references(text) - defined):
        line, column = _locate(source, rf"steps\s*(\.\s*{re.escape(step)}\b|\[\s*['\"]{re.escape(step)}['\"])")
        checker.error(
            "unknown-reference",
            f"{what} refers to steps.{step}, but no step is named {step!r}{did_you_mean(step, defined)}",
            checker.index.inside(path, line, column) or checker.at(path),
            "steps.<name>.output reads the output of the step with that name",
        )
    if not any_context:
        check_context_reads(checker, path, source, expression=expression)
