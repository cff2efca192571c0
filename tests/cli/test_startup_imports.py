"""What a plain ``flujo run`` leaves unimported: the optional extras (OpenTelemetry, MCP, the local model) and
what only some runs need (issue 36: start-up). Each module here was a measurable part of every run's start-up
before it was imported only by the runs that use it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.conversation_run import write

ROOT = Path(__file__).resolve().parents[2]
NEVER = (
    "opentelemetry",  # the [otel] extra: only with a collector configured or lens export --otlp
    "mcp",  # the [mcp] extra: only for an mcp: tool
    "xllamacpp",  # the [local] extra: only for model: local
    "core.agents.local_server",
    "textual",  # the viewer
    "httpx",  # no provider called
    "jsonschema",  # no schema checked
    "tiktoken",  # no history counted
    "psycopg",
    "typer._adapters",  # Typer's pydantic conversion of option values (flujo_cli/typed_values.py)
    "rich.status",  # the spinner, made at a terminal only (and rich.table with it)
    "rich.table",
    "core.replay",  # --replay only
    "blueprints.checking.salvage",  # a blueprint with errors only
    "tomllib",  # a settings file only
    # What only the runs using a feature import (its first use imports it):
    "core.model.tools",  # tools: a step with tools: only
    "core.policies.tool_loop",
    "core.tools.offered",
    "core.tools.workflow_tool",
    "core.tools.spec",
    "core.tools.sessions",  # made by the first tool a run's step uses
    "core.agents.json_tools",
    "core.conversation.ensemble.state",  # an ensemble step only
    "core.conversation.ensemble.view",
    "core.conversation.summary",  # a conversation only (so the conversational run below leaves it out)
    "core.answering.simulated_person",  # --simulate-user or answered_by: only (or an answer rejected)
    "blueprints.compiling.persona",
    "core.answering.replay",  # --replay-answers only
    "blueprints.compiling.tools",  # a blueprint with tools only (checked or compiled)
    "blueprints.checking.checks.tools",
    "blueprints.compiling.ensembles",  # a blueprint with an ensemble only
    "blueprints.checking.checks.ensemble",
)
ONE_STEP = 'version: "0.1"\nagents:\n  a: {model: echo}\nsteps:\n  - {kind: step, name: s, uses: agents.a}\n'


def _imported(
    tmp_path: Path, *args: str, never: tuple[str, ...] = NEVER, env: dict[str, str] | None = None
) -> list[str]:
    spy = (
        "import atexit, json, sys; "
        f"atexit.register(lambda: print('IMPORTED', json.dumps([m for m in {never!r} if m in sys.modules]), "
        "file=sys.stderr)); from flujo_cli.main import main; main()"
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), **(env or {})}
    env["FLUJO_STATE_URI"] = str(tmp_path / "s.db")
    done = subprocess.run(
        [sys.executable, "-c", spy, "run", *args, "--no-input"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED ")]
    return list(json.loads(line.removeprefix("IMPORTED ")))


def test_a_run_reading_the_settings_it_read_before_does_not_check_them_again(tmp_path: Path) -> None:
    """The second run with the same flujo.toml reads its settings from the cache folder (docs/configuration.md,
    "The cache folder"): the settings' checks (pydantic's validators) are not imported for them."""
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    (tmp_path / "flujo.toml").write_text('default_model = "echo"\n[history]\nmax_tokens = 2000\n')
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    checks = ("core.settings.validating",)
    assert _imported(tmp_path, "one.yaml", "--input", "hi", never=checks, env=env) == list(checks)
    assert _imported(tmp_path, "one.yaml", "--input", "hi", never=checks, env=env) == []


# pydantic's model machinery (defining one model imports it: ~195 M instructions, docs/performance.md), the
# validation modules that use it, and what only some runs need of the standard library.
VALIDATION = (
    "pydantic.main",
    "pydantic.fields",
    "pydantic.type_adapter",
    "pydantic._internal._model_construction",
    "blueprints.schema.validating",
    "core.settings.validating",
    "blueprints.reading.ensemble_file",  # an ensemble file's reading: a file not kept checked only
    "ctypes",  # a command agent's child only
    "gzip",  # tiktoken's rank files only
    "secrets",
)


def test_a_run_of_files_read_before_imports_no_pydantic_model(tmp_path: Path) -> None:
    """The settings and the blueprint are plain dataclasses; a run whose files were checked before reads what
    was kept of them (the cache folder) and validates nothing: pydantic's models are never imported. The first
    run validates both (so the spy sees the modules it asks about)."""
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    (tmp_path / "flujo.toml").write_text("default_context_window = 4096\n[history]\nmax_tokens = 2000\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = _imported(tmp_path, "one.yaml", "--input", "hi", never=VALIDATION, env=env)
    assert {"pydantic.main", "pydantic.type_adapter", "blueprints.schema.validating"} <= set(first)
    assert "core.settings.validating" in first
    assert _imported(tmp_path, "one.yaml", "--input", "hi", never=VALIDATION, env=env) == []


def test_a_one_step_run_imports_no_extra(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    assert _imported(tmp_path, "one.yaml", "--input", "hi") == []


@pytest.mark.slow
def test_a_conversational_run_imports_no_extra(tmp_path: Path) -> None:
    blueprint, answers = write(1, tmp_path)
    never = tuple(module for module in NEVER if module != "core.conversation.summary")
    imported = _imported(tmp_path, str(blueprint), "--input", "Plan", "--answers", str(answers), never=never)
    assert imported == []


def test_the_spy_sees_a_module_that_is_imported(tmp_path: Path) -> None:
    """The check above can fail: a settings file makes the run read TOML."""
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    (tmp_path / "flujo.toml").write_text("default_context_window = 8192\n")
    assert _imported(tmp_path, "one.yaml", "--input", "hi") == ["tomllib"]


def test_a_run_calling_a_model_imports_httpx_without_its_command_line(tmp_path: Path) -> None:
    """httpx's package imports its command line (click, rich's progress and syntax, pygments) when those are
    installed; flujo gives it a stand-in first (core/agents/httpx_import.py): 55 ms and 5 MB less per run
    that calls a model."""
    from tests.support.fakes.openai_server import FakeLLM

    agent = 'version: "0.1"\nagents:\n  a: {model: "openai:gpt-test"}\nsteps:\n  - {name: s, uses: agents.a}\n'
    (tmp_path / "model.yaml").write_text(agent)
    watched = ("httpx", "httpx._client", "pygments", "rich.syntax", "rich.progress", "click")
    with FakeLLM() as fake:
        fake.reply("hello back")
        imported = _imported(tmp_path, "model.yaml", "--input", "hi", never=watched, env=fake.env())
        assert [request.body["messages"][-1]["content"] for request in fake.requests] == ["hi"]
    assert imported == ["httpx", "httpx._client"]  # the model was called over httpx, and nothing more came


def _lazy_patterns() -> set[str]:
    """The regular expressions of flujo's run path that are compiled at their first use, not at import: a
    plain run never needs them, and compiling them cost every run about 30 M instructions (3 % of a
    one-step run's start-up; docs/performance.md, "Start-up margin (session 21)")."""
    from blueprints.checking import model_overrides
    from blueprints.checking.checks import control, conversation
    from core.conversation import replies, threads
    from core.settings import file
    from core.text import ascii_tokens, embedded_json, redaction, sandbox, templates, tokens
    from flujo_cli import typed_values
    from flujo_cli.commands import run

    compiled = [
        *redaction._patterns(),
        embedded_json._key(),
        embedded_json._quotes_and_brackets(),
        embedded_json._number(),
        sandbox._printf_spec(),
        sandbox._digits(),
        replies._fence(),
        ascii_tokens._pieces(),
        tokens._part_end(),
    ]
    patterns = {pattern.pattern for pattern in compiled if isinstance(pattern, re.Pattern)}
    patterns |= {pattern.pattern for pattern in redaction._patterns().builtin}
    return patterns | {
        file._AT, file._HEADER, file._ASSIGNMENT, file._DOTTED_PART, templates._TAG, templates._HB_TOKEN,
        templates._HB_THIS, templates._HB_INDEX, templates._NO_ATTRIBUTE, templates._SINGLE_EXPRESSION,
        threads._NAME, typed_values._WHOLE, typed_values._DECIMAL, run._SECRET_KEY, model_overrides._AGENT,
        model_overrides._NAME, control._CONTEXT_TARGET, conversation._LONE,
    }  # fmt: skip


def _compiled(tmp_path: Path, *args: str) -> set[str]:
    """The regular expressions a ``flujo run`` process compiles (each compilation, whatever ``re``'s cache
    keeps)."""
    spy = (
        "import atexit, json, re, sys; seen = []; compile = re._compiler.compile; "
        "re._compiler.compile = lambda pattern, flags: seen.append(pattern) or compile(pattern, flags); "
        "atexit.register(lambda: print('COMPILED', json.dumps([p for p in seen if isinstance(p, str)]), "
        "file=sys.stderr)); from flujo_cli.main import main; main()"
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env["FLUJO_STATE_URI"] = str(tmp_path / "s.db")
    done = subprocess.run(
        [sys.executable, "-c", spy, "run", *args, "--no-input"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("COMPILED ")]
    return set(json.loads(line.removeprefix("COMPILED ")))


def test_a_one_step_run_compiles_none_of_the_patterns_it_does_not_use(tmp_path: Path) -> None:
    """The redactor's patterns wait for a text that may hold a secret, the settings file's for its errors,
    the templates' for a template, the token counter's for a text to count."""
    (tmp_path / "one.yaml").write_text(ONE_STEP)
    lazy = _lazy_patterns()
    assert len(lazy) == 41
    assert _compiled(tmp_path, "one.yaml", "--input", "hi") & lazy == set()


def test_the_pattern_spy_sees_a_pattern_compiled_at_its_first_use(tmp_path: Path) -> None:
    """The check above can fail: an input that looks like a secret makes the redactor compile its patterns,
    and a template the templates' own."""
    templated = ONE_STEP.replace("uses: agents.a}", 'uses: agents.a, input: "{{ previous_step }}!"}')
    (tmp_path / "one.yaml").write_text(templated)
    compiled = _compiled(tmp_path, "one.yaml", "--input", "my password is hunter22")
    from core.text import redaction, templates

    assert redaction._patterns().prose_password.pattern in compiled
    assert templates._TAG in compiled
