"""Templates and expressions: the sandbox holds, handlebars blocks mean what they mean in handlebars, and a
lone ``{{ expression }}`` yields its value."""

from __future__ import annotations

from typing import Any

import pytest

from core import Expression, Template, TemplateError, TemplateSyntax


def render(source: str, **variables: Any) -> Any:
    return Template(source).render(variables)


ESCAPES = [
    "''.__class__.__mro__[1].__subclasses__()",
    "().__class__.__bases__[0].__subclasses__()",
    "cycler.__init__.__globals__.os.popen('id').read()",
    "lipsum.__globals__['os']",
    "joiner.__init__.__globals__",
    "namespace.__init__.__globals__",
    "str.mro()",
    "len.__self__.__import__('os')",
    "'{0.__class__.__init__.__globals__}'.format(1)",
    "'{a.__class__}'.format_map({'a': 1})",
    "self._TemplateReference__context",
    "context.scratchpad.update({'pwned': 1})",
    "context.scratchpad.__setitem__('pwned', 1)",
    "steps.pop('a')",
]


@pytest.mark.parametrize("payload", ESCAPES)
def test_sandbox_escapes_fail_in_templates_and_never_run_in_expressions(payload: str) -> None:
    context = {"scratchpad": {}}
    with pytest.raises(TemplateError):
        render("{{ " + payload + " }}", context=context, steps={"a": 1})
    with pytest.raises(TemplateError):
        render("x {{ " + payload + " }} y", context=context, steps={"a": 1})
    try:
        value = Expression(payload).evaluate({"context": context, "steps": {"a": 1}})
    except TemplateError:
        value = None
    assert value in (None, "")  # nothing reached: an unsafe attribute is undefined or refused
    assert context == {"scratchpad": {}}


def test_else_if_chains_like_handlebars() -> None:
    source = "{{#if a}}A{{else if b}}B{{else}}C{{/if}}"
    assert render(source, a=True, b=True) == "A"
    assert render(source, a=False, b=True) == "B"
    assert render(source, a=False, b=False) == "C"
    assert render("{{#if a}}A{{else if b}}B{{/if}}", a=False, b=False) == ""
    with pytest.raises(TemplateSyntax):
        Template("{{#if a}}A{{else b}}B{{/if}}")


def test_if_unless_and_each_treat_a_missing_value_as_falsy_like_handlebars() -> None:
    context: dict[str, Any] = {"scratchpad": {}}
    assert render("{{#if context.scratchpad.summary}}S{{else}}none{{/if}}", context=context) == "none"
    assert render("{{#if context.scratchpad.a.b.c}}S{{else}}none{{/if}}", context=context) == "none"
    assert render("{{#unless context.scratchpad.summary}}first time{{/unless}}", context=context) == "first time"
    assert render("{{#each context.scratchpad.todo}}x{{else}}empty{{/each}}", context=context) == "empty"
    assert render(
        "{{#if context.scratchpad.s}}S={{ context.scratchpad.s }}{{/if}}", context={"scratchpad": {"s": 1}}
    ) == ("S=1")
    # ...while printing a missing value is still an error that names it
    with pytest.raises(TemplateError, match="'summary' is undefined"):
        render("Summary: {{ context.scratchpad.summary }}", context=context)
    with pytest.raises(TemplateError, match="'missing' is undefined"):
        render("{{ steps.missing.output }}", steps={})
    assert render("{{ steps.missing.output | default('n/a') }}", steps={}) == "n/a"


def test_nested_each_and_if_with_this_and_index() -> None:
    source = (
        "{{#each groups}}{{@index}}:{{ this.name }}["
        "{{#each this.entries}}{{#if this.ok}}{{@index}}={{ this.v }}{{else}}-{{/if}};{{/each}}"
        "]{{ this.name }} {{/each}}"
    )
    groups = [
        {"name": "g0", "entries": [{"ok": True, "v": "a"}, {"ok": False, "v": "b"}]},
        {"name": "g1", "entries": [{"ok": True, "v": "c"}]},
    ]
    # the inner block's this/@index are the inner item's; after it, the outer ones again
    assert render(source, groups=groups) == "0:g0[0=a;-;]g0 1:g1[0=c;]g1 "


def test_history_template_standalone_lines_render_like_handlebars() -> None:
    source = "<history>\n{{#each history}}\n{{ this.role }}: {{ this.content }}\n{{/each}}\n</history>\n"
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert render(source, history=history) == "<history>\nuser: hi\nassistant: hello\n</history>\n"


def test_lone_expression_keeps_its_value_and_anything_else_is_text() -> None:
    assert render("{{ x }}", x={"a": [1, 2]}) == {"a": [1, 2]}
    assert render("  {{ x }}\n", x=3) == 3
    assert render("{{ x }}{{ x }}", x=3) == "33"
    assert render("{{ x }} }}", x=3) == "3 }}"
    assert render("{{ '}}' }}") == "}}"
    assert render("{{ x }}", x=None) is None
    assert Template("{{ x }}").render_text({"x": {"a": 1}}) == '{"a": 1}'


def test_lone_expression_building_a_value_with_a_missing_name_is_an_error() -> None:
    with pytest.raises(TemplateError, match="'nope' is undefined"):
        render("{{ {'goal': nope} }}")
    with pytest.raises(TemplateError, match="'typo' is undefined"):
        render("{{ [1, steps.typo] }}", steps={})


def test_expression_missing_values_are_none_even_inside_built_values() -> None:
    scope = {"context": {"scratchpad": {}}}
    assert Expression("context.scratchpad.cmd.action == 'finish'").evaluate(scope) is False
    assert Expression("context.scratchpad.missing").evaluate(scope) is None
    assert Expression("[context.scratchpad.a, 1]").evaluate(scope) == [None, 1]
    assert Expression("{'k': context.scratchpad.a}").evaluate(scope) == {"k": None}
