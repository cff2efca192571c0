"""Hostile or broken input is bounded: nothing hangs, nothing eats memory, nothing crashes.

Every case runs in a child process capped at ~2 GB with a hang guard (tests/support/capped.py). Each was measured
to hang, take gigabytes or end in an "unexpected ... report this" traceback before the bounds existed.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from core import AgentCall, ProviderError
from core.agents import AgentSpec, build_agent
from core.text.bounds import BoundsSettings, use_bounds
from tests.support.capped import capped, capped_flujo
from tests.support.fakes.openai_server import FakeLLM

pytestmark = pytest.mark.slow

ALIAS_BOMB = """version: "0.1"
a: &a ["x","x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]
steps: [*i]
"""
HITL = 'version: "0.1"\nsteps:\n  - kind: hitl\n    name: get_goal\n    message: "Goal?"\n'


def _step(template: str) -> str:
    return (
        'version: "0.1"\nsteps:\n  - kind: step\n    name: s\n    agent: {id: flujo.builtins.passthrough}\n'
        f"    input: {json.dumps(template)}\n"
    )


def _validate(tmp_path: Path, text: str | bytes, name: str = "bp.yaml") -> tuple[int, str]:
    file = tmp_path / name
    file.write_bytes(text if isinstance(text, bytes) else text.encode())
    done = capped_flujo(["validate", str(file)], cwd=tmp_path)
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr


def test_bounds_have_documented_defaults() -> None:
    bounds = BoundsSettings()
    assert (bounds.yaml_max_depth, bounds.yaml_max_values, bounds.import_max_depth) == (100, 100_000, 32)
    assert (bounds.template_max_size, bounds.template_max_total) == (10_000_000, 50_000_000)
    assert (bounds.template_max_steps, bounds.template_max_digits, bounds.template_max_nesting) == (100_000, 4300, 100)
    assert bounds.agent_output_max_bytes == 10_000_000
    docs = (Path(__file__).resolve().parents[2] / "docs" / "blueprints.md").read_text(encoding="utf-8")
    for name, value in asdict(bounds).items():
        assert f"`bounds.{name}`" in docs and f"{value:,}".replace(",", "_") in docs.replace(",", "_"), name


def test_an_alias_bomb_is_refused_where_it_explodes(tmp_path: Path) -> None:
    code, err = _validate(tmp_path, ALIAS_BOMB)
    assert code == 1
    assert "bp.yaml:6:4: error: the YAML holds more than 100,000 values once its aliases are expanded" in err
    assert "bounds.yaml_max_values" in err


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('version: "0.1"\nx: ' + "[" * 3000 + "]" * 3000 + "\nsteps: []\n", "bp.yaml:2:103:"),
        ('version: "0.1"\nx: ' + "[" * 30000 + "]" * 30000 + "\nsteps: []\n", "bp.yaml:2:103:"),
        ('version: "0.1"\nx:\n' + "".join(" " * (n + 1) + "k:\n" for n in range(3000)), "bp.yaml:101:"),
        ('version: "0.1"\na0: &a0 [x]\n' + "".join(f"a{n}: &a{n} [*a{n - 1}]\n" for n in range(1, 3000)), "bp.yaml:"),
    ],
    ids=["flow-3000", "flow-30000", "block-3000", "aliases-3000"],
)
def test_deep_nesting_is_refused_before_it_exhausts_the_stack(tmp_path: Path, text: str, where: str) -> None:
    code, err = _validate(tmp_path, text)
    assert code == 1 and where in err and "the YAML nests more than 100 levels deep" in err, err[-400:]


def test_a_nul_byte_and_an_unreadable_scalar_are_located(tmp_path: Path) -> None:
    code, err = _validate(tmp_path, 'version: "0.1"\nsteps: []\n\x00\n')
    assert code == 1 and "bp.yaml:3:1: error: YAML syntax error: the character U+0000 is not allowed" in err
    code, err = _validate(tmp_path, 'version: "0.1"\nname: ' + "9" * 5000 + "\nsteps: []\n")
    assert code == 1 and "bp.yaml:2:7: error: cannot read this value: Exceeds the limit (4300 digits)" in err


@pytest.mark.parametrize(
    "digits",
    ["0x" + "f" * 5000, "0" + "7" * 5000, "0b" + "1" * 15000, "-0x" + "f" * 5000],
    ids=["hex", "octal", "binary", "negative"],
)
@pytest.mark.parametrize("key", ["name", "limits: {max_tokens", "loop_max"])
def test_an_integer_too_long_to_print_is_refused_in_any_base(tmp_path: Path, digits: str, key: str) -> None:
    if key == "name":
        text, where = f'version: "0.1"\nname: {digits}\nsteps: []\n', "bp.yaml:2:7"
    elif key == "loop_max":
        loop = f"  - {{kind: loop, name: l, loop: {{max_loops: {digits}, body: []}}}}\n"
        text, where = f'version: "0.1"\nsteps:\n{loop}', "bp.yaml:3:45"
    else:
        text, where = f'version: "0.1"\nlimits: {{max_tokens: {digits}}}\nsteps: []\n', "bp.yaml:2:22"
    code, err = _validate(tmp_path, text)
    assert code == 1 and f"{where}: error: cannot read this value: Exceeds the limit (4300 digits)" in err, err[-300:]


def test_a_long_import_chain_is_refused_at_the_import_that_passes_the_limit(tmp_path: Path) -> None:
    for number in range(200):
        uses = "uses: imports.next" if number < 199 else "agent: {id: flujo.builtins.passthrough}"
        imports = f"imports: {{next: c{number + 1}.yaml}}\n" if number < 199 else ""
        (tmp_path / f"c{number}.yaml").write_text(
            f'version: "0.1"\n{imports}steps:\n  - kind: step\n    name: s{number}\n    {uses}\n', encoding="utf-8"
        )
    code, err = _validate(tmp_path, (tmp_path / "c0.yaml").read_text(encoding="utf-8"), "c0.yaml")
    assert code == 1 and "c31.yaml:2:17: error: imports.next: imports nest more than 32 blueprints deep" in err
    run = capped_flujo(["run", str(tmp_path / "c0.yaml"), "--input", "x"], cwd=tmp_path)
    assert run.returncode == 3 and "unexpected" not in run.stderr, run.stderr


DEEP_ALIASES = "a0: &a0 [x]\n" + "".join(f"a{n}: &a{n} [*a{n - 1}]\n" for n in range(1, 3000))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (ALIAS_BOMB.replace('version: "0.1"\n', "").replace("steps:", "z:"), "answers.yaml:5:4: the YAML holds more"),
        (bytes(range(256)), "answers.yaml:2:118: not UTF-8 text (byte 128)"),
        ("a: &a [*a]\n", "answers.yaml:1:4: a YAML alias refers to itself"),
        ("[" * 3000 + "]" * 3000, "answers.yaml:1:101: the YAML nests more than 100 levels deep"),
        # libyaml (which reads answers files) crashes the process on this one unless the depth is checked first
        ("[" * 30000 + "]" * 30000, "answers.yaml:1:101: the YAML nests more than 100 levels deep"),
        (DEEP_ALIASES, "answers.yaml:101:7: the YAML nests more than 100 levels deep"),
        ("- one\n- t\x00wo\n", "answers.yaml:2:4: YAML syntax error: the character U+0000 is not allowed"),
        ("get_goal: one\nget_goal: two\n", "answers.yaml:2:1: duplicate key 'get_goal' (first at line 1)"),
    ],
    ids=["alias-bomb", "binary", "self-reference", "deep", "deep-30000", "deep-aliases", "nul", "duplicate-key"],
)
def test_a_hostile_answers_file_is_refused_at_file_line_col(tmp_path: Path, content: str | bytes, message: str) -> None:
    (tmp_path / "bp.yaml").write_text(HITL, encoding="utf-8")
    (tmp_path / "answers.yaml").write_bytes(content if isinstance(content, bytes) else content.encode())
    done = capped_flujo(["run", "bp.yaml", "--answers", "answers.yaml"], cwd=tmp_path, env={"FLUJO_STATE_URI": "s.db"})
    assert done.returncode == 6, done.stderr
    assert f"error: answers file {message}" in done.stderr, done.stderr


# -- templates and expressions --------------------------------------------------------------------------
HOSTILE_TEMPLATES = {
    "repeat": ("{{ 'a' * 3000000000 }}", "template_max_size"),
    "format-width": ("{{ '{:>3000000000}'.format('x') }}", "template_max_size"),
    "format-nested-width": ("{{ '{:{w}}'.format('x', w=3000000000) }}", "template_max_size"),
    "percent-width": ("{{ '%03000000000d' % 5 }}", "template_max_size"),
    "center": ("{{ 'a'.center(3000000000) }}", "template_max_size"),
    "zfill": ("{{ 'a'.zfill(3000000000) }}", "template_max_size"),
    "expandtabs": ("{{ ('\t' * 10000).expandtabs(100000) }}", "template_max_size"),
    "replace": ("{{ ('a' * 1000).replace('a', 'b' * 100000) }}", "template_max_size"),
    "join": ("{{ ','.join(['x' * 1000000] * 20) }}", "template_max_size"),
    "indent": ("{{ ('a\nb' * 1000) | indent(30000000) }}", "template_max_size"),
    "wordwrap": ("{{ ('a ' * 10000) | wordwrap(1, wrapstring='x' * 10000) }}", "template_max_size"),
    "format-filter": ("{{ '%s' | format(['x' * 1000000] * 20) }}", "template_max_size"),
    "batch": ("{{ [1, 2, 3] | batch(1000000000, 'x') | list }}", "template_max_size"),
    "lipsum": ("{{ lipsum(n=10000000) }}", "template_max_size"),
    "list-repeat": ("{{ [1] * 3000000000 }}", "template_max_size"),
    "shared-list": (
        "{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}"
        "{{ ns.x | tojson }}",
        "template_max_size",
    ),
    "doubling": (
        "{% set ns = namespace(x='ab') %}{% for i in range(60) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x }}",
        "template_max_",
    ),
    "nested-range": ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", "steps"),
    "macro-fanout": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
        "template_max_steps",
    ),
    "power": ("{{ (previous_step | length + 9) ** (9 ** 9) }}", "template_max_digits"),
    "big-int": ("{{ 10 ** 100000 }}", "template_max_digits"),
}
SAFE_TEMPLATES = {
    "arithmetic": (
        "{{ 7 * 6 }} {{ 2 ** 10 }} {{ 'a%sb' % 'X' }} {{ 'x'.center(5) }} {{ 'ab' ~ 'c' }}",
        "42 1024 aXb   x   abc",
    ),
    "filters": ("{{ ['a', 'b'] | map('upper') | join(', ') }} {{ 'x\ny' | indent(2) }}", "A, B x\n  y"),
    "loop": ("{% for i in range(3) %}{{ i }}{% endfor %}", "012"),
}

_RENDER_ALL = """
import json, sys
from core.text.templates import Expression, Template, TemplateSyntax
from core.model.errors import TemplateError
cases = json.loads(sys.stdin.read())
results = {}
for name, (kind, source) in cases.items():
    try:
        if kind == "expression":
            value = Expression(source).evaluate({})
        else:
            value = Template(source).render({"previous_step": "hi"})
        results[name] = {"ok": value if isinstance(value, (str, bool, int)) else str(value)}
    except (TemplateError, TemplateSyntax) as exc:  # stopped when it runs, or refused as it compiles
        results[name] = {"error": exc.message, "hint": exc.hint or ""}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, str]]:
    """Every template and expression below, rendered in one capped child process."""
    cases = {name: ("template", source) for name, (source, _) in {**HOSTILE_TEMPLATES, **SAFE_TEMPLATES}.items()}
    cases["exit-expression"] = ("expression", "9**(9**9) > 0")
    cases["safe-expression"] = ("expression", "(2 ** 64) > 0 and 'a' * 3 == 'aaa'")
    process = capped(["-c", "import sys; exec(sys.argv[1])", _RENDER_ALL], input_text=json.dumps(cases))
    assert process.returncode == 0, process.stderr
    results: dict[str, dict[str, str]] = json.loads(process.stdout)
    return results


@pytest.mark.parametrize("name", sorted(HOSTILE_TEMPLATES))
def test_a_hostile_template_is_stopped_naming_its_limit(rendered: dict[str, dict[str, str]], name: str) -> None:
    result = rendered[name]
    assert "error" in result, result
    assert "stopped" in result["error"] and HOSTILE_TEMPLATES[name][1] in result["error"] + result["hint"]


@pytest.mark.parametrize("name", sorted(SAFE_TEMPLATES))
def test_ordinary_templates_still_render(rendered: dict[str, dict[str, str]], name: str) -> None:
    assert rendered[name] == {"ok": SAFE_TEMPLATES[name][1]}


def test_a_huge_power_in_an_exit_expression_is_stopped(rendered: dict[str, dict[str, str]]) -> None:
    assert rendered["exit-expression"]["error"].endswith("(at most 4,300)")
    assert rendered["safe-expression"] == {"ok": True}


def test_validate_refuses_constant_computations_that_would_be_stopped(tmp_path: Path) -> None:
    """Jinja folds constants at compile time: ``9**(9**9)`` used to hang ``flujo validate``. Now it is refused
    at file:line:col, without being computed; one that depends on the run is stopped when it runs."""
    blueprint = (
        'version: "0.1"\nsteps:\n  - kind: loop\n    name: l\n    loop:\n      max_loops: 2\n'
        '      exit_expression: "9**(9**9) > 0"\n      body:\n        - kind: step\n          name: s\n'
        "          agent: {id: flujo.builtins.passthrough}\n"
    )
    code, err = _validate(tmp_path, blueprint)
    assert code == 1 and "bp.yaml:7:25: error: expression syntax error: this would be stopped when it runs" in err
    assert "bounds.template_max_digits" in err
    code, err = _validate(tmp_path, _step("{{ 10 ** 100000 }}"))
    assert code == 1 and "bp.yaml:6:13: error: template syntax error: this would be stopped when it runs" in err
    run = capped_flujo(["run", "bp.yaml", "--input", "x"], cwd=tmp_path, env={"FLUJO_STATE_URI": "s.db"})
    assert run.returncode == 3 and "template_max_digits" in run.stderr and "unexpected" not in run.stderr
    assert _validate(tmp_path, _step("{{ (previous_step | length + 9) ** (9 ** 9) }}"))[0] == 0
    run = capped_flujo(["run", "bp.yaml", "--input", "x"], cwd=tmp_path, env={"FLUJO_STATE_URI": "s.db"})
    assert run.returncode == 1 and "was stopped" in run.stderr and "template_max_digits" in run.stderr


def test_deeply_nested_brackets_are_a_located_syntax_error(tmp_path: Path) -> None:
    code, err = _validate(tmp_path, _step("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}"))
    assert code == 1 and "bp.yaml:6:13: error: template syntax error: brackets nest more than 100 deep" in err


def test_a_limit_is_a_setting(tmp_path: Path) -> None:
    (tmp_path / "bp.yaml").write_text(_step("{{ previous_step * 10 }}"), encoding="utf-8")
    env = {"FLUJO_STATE_URI": "s.db"}
    assert capped_flujo(["run", "bp.yaml", "--input", "x"], cwd=tmp_path, env=env).returncode == 0
    small = capped_flujo(
        ["run", "bp.yaml", "--input", "x", "--set", "bounds.template_max_size=5"], cwd=tmp_path, env=env
    )
    assert (
        small.returncode == 1
        and "more than 5 characters" in small.stderr
        and "bounds.template_max_size" in small.stderr
    )


# -- what agents send back ------------------------------------------------------------------------------
def test_a_command_that_prints_without_end_is_stopped(tmp_path: Path) -> None:
    blueprint = (
        'version: "0.1"\nagents:\n  spam:\n    command: ["yes"]\nsteps:\n  - kind: step\n    name: s\n'
        "    uses: agents.spam\n"
    )
    (tmp_path / "bp.yaml").write_text(blueprint, encoding="utf-8")
    done = capped_flujo(["run", "bp.yaml", "--input", "x"], cwd=tmp_path, env={"FLUJO_STATE_URI": "s.db"})
    assert done.returncode == 1, done.stderr
    assert "agents.spam: yes printed more than 10,000,000 bytes" in done.stderr
    assert "bounds.agent_output_max_bytes" in done.stderr


async def test_a_provider_reply_over_the_limit_is_refused(fake_llm: FakeLLM) -> None:
    use_bounds(BoundsSettings(agent_output_max_bytes=2000))  # this test's task only
    agent = build_agent(AgentSpec(name="talker", model="openai:gpt-4o-mini"), fake_llm.settings())
    fake_llm.reply("short")
    assert (await agent.run(AgentCall(input="hi", step="s"))).output == "short"
    fake_llm.reply("word " * 1000)
    with pytest.raises(ProviderError, match=r"the reply from .* is longer than 2,000 bytes"):
        await agent.run(AgentCall(input="hi", step="s"))
    fake_llm.reply("word " * 1000)
    with pytest.raises(ProviderError, match="longer than 2,000 bytes"):
        await agent.run(AgentCall(input="hi", step="s", on_text=lambda _: None))  # streamed
