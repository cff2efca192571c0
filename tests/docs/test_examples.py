"""Documented examples are tests: what the docs show is what flujo does.

- Every blueprint in ``docs/examples/`` and ``blueprints/examples/`` validates without errors and runs
  offline to completion through the real CLI, with the input and answers listed in ``RUNS`` below. A new
  example without an entry in ``RUNS`` fails with a message saying what to add.
- Every ```yaml block in ``docs/*.md`` that starts with ``# docs/examples/NAME.yaml`` is that file, byte
  for byte; every complete blueprint shown in the docs (a block with ``version:`` and ``steps:``) is such
  a block; every file in ``docs/examples/`` is shown somewhere in the docs.
- A ```text block that shows ``$ flujo run ... 2>/dev/null`` shows that command's real stdout.
- The blueprints in ``docs/examples/invalid/`` fail validation, and the ``flujo validate`` output the docs
  show for them is the real output; the other YAML fragments parse, and every ``flujo.toml`` shown loads.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from core import load_settings
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo

DOCS = ROOT / "docs"
DOC_EXAMPLES = DOCS / "examples"
INVALID = DOC_EXAMPLES / "invalid"
_UNSET: Any = object()


@dataclass(frozen=True)
class Run:
    """How to run one example offline: its ``--input``, its ``--answer`` values, and (optionally) the output."""

    input: str | None = None
    answers: tuple[str, ...] = ()
    output: Any = _UNSET
    local: bool = False  # runs the real model on this machine (model: local): a slow test


RUNS: dict[str, Run] = {
    "docs/examples/ensemble.yaml": Run(
        input="a poem about rain",
        answers=("yes",),
        output={"poem": "Soft rain on the roof at night", "published": "yes", "rounds": 5, "ended": "completed"},
    ),
    "blueprints/examples/chat.yaml": Run(answers=("Hi!", "bye"), local=True),
    "docs/examples/ensemble_persona.yaml": Run(
        input="a poem about rain", output={"poem": "Soft rain on the roof at night", "published": "true"}
    ),
    "blueprints/examples/clarify.yaml": Run(
        answers=("Plan a trip", "My family", "June"),
        output="The goal is clear.\nGoal: Plan a trip\n- Who is it for? My family\n- By when should it be done? June\n",
    ),
    "blueprints/examples/conversation.yaml": Run(
        answers=("Plan a trip", "My family", "June"),
        output="User: Plan a trip\n"
        "Assistant: Who is it for?\n"
        "User: My family\n"
        "Assistant: By when should it be done?\n"
        "User: June\n"
        "Assistant: The goal is clear.",
    ),
    "docs/examples/conversation_script.yaml": Run(
        input="n=0", output="User: n=0\nAssistant: n=1\nAssistant: n=2\nAssistant: n=3"
    ),
    "blueprints/examples/conditional.yaml": Run(input="The app crashes on start", answers=("3",)),
    "blueprints/examples/map.yaml": Run(input='["apples", "pears"]'),
    "blueprints/examples/parallel.yaml": Run(input="My draft"),
    "docs/examples/hello.yaml": Run(answers=("Ada",), output="Please greet Ada."),
    "docs/examples/persona.yaml": Run(answers=("4", "yes"), output="4 guests, confirmed: true"),
    "docs/examples/persona_conversation.yaml": Run(
        input="Plan a trip",
        output="User: Plan a trip\n"
        "Assistant: Who is it for?\n"
        "User: My family\n"
        "Assistant: By when?\n"
        "User: June\n"
        "Assistant: A family trip in June.",
    ),
    "docs/examples/create_clarify.yaml": Run(
        answers=("Plan a trip", "The views", "No flights"),
        output="User: Plan a trip\n"
        "Assistant: What matters most to you about it?\n"
        "User: The views\n"
        "Assistant: Is there anything to avoid, or a deadline?\n"
        "User: No flights\n"
        "Assistant: That is all I need. Thank you!",
    ),
    "docs/examples/create_refine.yaml": Run(input="a haiku about rain", output={"draft": "A good draft.", "score": 9}),
    "docs/examples/conversation.yaml": Run(
        answers=("Plan a trip", "My family"),
        output="User: Plan a trip\nAssistant: Who is it for?\nUser: My family\nAssistant: A trip for the family.",
    ),
    "docs/examples/thread.yaml": Run(input="Lisbon in June", output="User: Lisbon in June\nAssistant: Noted."),
    "docs/examples/conversation_sources.yaml": Run(
        input="Tea",
        output={
            "topic": "Tea",
            "transcript": "User: Tea\nAssistant: Tea is old.\n"
            'User: {"action": "revise", "note": "Say where it is loved."}\n'
            "Assistant: Tea is old and loved in many countries.\n"
            'User: {"action": "finish", "note": "Good."}',
        },
    ),
    "docs/examples/conversation_summarize.yaml": Run(
        input="Practice sums",
        answers=("4", "6", "8"),
        output="User: Practice sums\nAssistant: What is 2+2?\nUser: 4\nAssistant: And 3+3?\nUser: 6\n"
        'Assistant: And 4+4?\nUser: 8\nAssistant: {"action": "finish"}',
    ),
    "docs/examples/agents.yaml": Run(
        input="Write about tea", output='Outline for Tea: ["history", "kinds", "brewing"]'
    ),
    "docs/examples/templates.yaml": Run(
        input='{"city": "Lima", "days": 3}',
        output=(
            'Trip to Lima ({"city": "Lima", "days": 3})\n0. passport\n1. umbrella\nNo coat needed.\nBudget: not set\n'
        ),
    ),
    "docs/examples/hitl.yaml": Run(
        answers=("4", "yes", "window", "no nuts"),
        output="4 guests, confirmed: true, seat: window, notes: no nuts",
    ),
    "docs/examples/loop.yaml": Run(
        input="a haiku about rain",
        output={
            "best": "Soft rain taps the glass, night listens",
            "scores": [4, 7, 9],
            "topic": "a haiku about rain",
            "run_input": "a haiku about rain",
        },
    ),
    "docs/examples/agent_finished.yaml": Run(
        input="a birthday party", answers=("Saturday", "12"), output="A party on Saturday for 12."
    ),
    "docs/examples/parallel.yaml": Run(
        input="Our new logo",
        output="Verdict ship from 2 reviews: Bold and clear. / Too close to a rival's logo.",
    ),
    "docs/examples/conditional.yaml": Run(input="URGENT: the site is down", output="paged on-call, sent to ops"),
    "docs/examples/map.yaml": Run(
        input='["milk", "rice", "bread"]',
        output={
            "count": 3,
            "questions": [
                "Where is milk in Corner Shop?",
                "Where is rice in Corner Shop?",
                "Where is bread in Corner Shop?",
            ],
        },
    ),
    "docs/examples/subworkflow.yaml": Run(
        input="tea", answers=("yes",), output="approved: Clear, but say where tea is loved. (published: true)"
    ),
    "docs/examples/review.yaml": Run(
        input="Tea is old.", answers=("no",), output="rejected: Clear, but say where tea is loved."
    ),
    "docs/examples/mcp_tools.yaml": Run(
        input="Who is customer 42?",
        answers=("n",),
        output="Customer 42 is Ada Lovelace (pro plan); she prefers email.",
    ),
    "docs/examples/local_tools.yaml": Run(input="Add 17 and 25.", local=True),
    "docs/examples/tools.yaml": Run(input="What is (2 + 3) * 4?", answers=("y",), output="(2 + 3) * 4 is 20."),
    "docs/examples/shipping.yaml": Run(input="Ship order A-1.", output="Order A-1 is shipped."),
    "docs/examples/reduce_modes.yaml": Run(
        output={
            "keys": ["a", "b"],
            "values": [["tea", "milk"], ["milk", "bread"]],
            "concat": ["tea", "milk", "milk", "bread"],
            "union": ["tea", "milk", "bread"],
            "dedupe": ["tea", "milk", "bread"],
            "first": ["tea", "milk"],
            "last": ["milk", "bread"],
        },
    ),
}

# docs/loops.md shows each loop block twice: a "before" (or "explicit") file without it and an "after" (or
# "friendly") file with it. Both files of a pair run with the same input and answers and give the same
# output; tests/docs/test_line_savings.py also checks that their agents are sent the same prompts.
LOOP_PAIRS: dict[tuple[str, str], Run] = {
    ("docs/examples/init_before.yaml", "docs/examples/init_after.yaml"): Run(
        input='{"product": "a bakery", "tone": "warm"}',
        output=["brief: a bakery", "Fresh every morning", "Warm bread, warm hearts"],
    ),
    ("docs/examples/notes_before.yaml", "docs/examples/notes_after.yaml"): Run(
        input="first-time visitors", output="Review for first-time visitors:\n- Shorten the intro.\n- Add a map."
    ),
    ("docs/examples/propagation_context_before.yaml", "docs/examples/propagation_context_after.yaml"): Run(
        input="a picnic",
        output={
            "initial_prompt": "a picnic",
            "scratchpad": {"budget": 20},
            "steps": {"think": {"output": "a picnic"}},
            "hitl_history": [],
            "conversation_history": [],
        },
    ),
    ("docs/examples/propagation_auto_before.yaml", "docs/examples/propagation_auto_after.yaml"): Run(
        input="a picnic",
        output={
            "stateful": {
                "initial_prompt": "a picnic",
                "scratchpad": {"budget": 20},
                "steps": {"think": {"output": "a picnic"}, "estimate": {"output": {"budget": 20}}},
                "hitl_history": [],
                "conversation_history": [],
            },
            "stateless": {"budget": 20},
        },
    ),
    ("docs/examples/next_input_before.yaml", "docs/examples/next_input_after.yaml"): Run(
        input="Write a haiku about rain.",
        output="Soft rain taps the glass (last request: Improve this draft (scored 4/10): Rain taps the window)",
    ),
    ("docs/examples/output_template_before.yaml", "docs/examples/output_template_after.yaml"): Run(
        input="Write a haiku about rain.", output="Soft rain taps the glass (score 9)"
    ),
    ("docs/examples/output_mapping_before.yaml", "docs/examples/output_mapping_after.yaml"): Run(
        input="Write a haiku about rain.",
        output={
            "draft": "Soft rain taps the glass",
            "score": 9,
            "request": "Write a haiku about rain.",
            "reviewed": False,
        },
    ),
    ("docs/examples/output_text_before.yaml", "docs/examples/output_text_after.yaml"): Run(
        answers=("Lima", "June"), output="Assistant: Which city?\nUser: Lima\nAssistant: Which month?\nUser: June"
    ),
    ("docs/examples/output_fields_before.yaml", "docs/examples/output_fields_after.yaml"): Run(
        input="Plan a trip",
        answers=("Lima", "June"),
        output={
            "goal": "Plan a trip",
            "clarifications": (
                "User: Plan a trip\nAssistant: Which city?\nUser: Lima\nAssistant: Which month?\nUser: June"
            ),
            "questions": 2,
        },
    ),
    ("docs/examples/stop_when_before.yaml", "docs/examples/stop_when_after.yaml"): Run(
        input="a birthday party", output={"action": "finish", "summary": "Venue and cake booked."}
    ),
    ("docs/examples/map_hooks_before.yaml", "docs/examples/map_hooks_after.yaml"): Run(
        input='["bread", "cheese", "grapes"]', output={"items": 3, "total": 14}
    ),
    ("docs/examples/reduce_before.yaml", "docs/examples/reduce_after.yaml"): Run(
        input="My draft", output=["typo in line 2", "long sentence", "passive voice"]
    ),
    ("docs/examples/refine_explicit.yaml", "docs/examples/refine_friendly.yaml"): Run(
        input="a haiku about rain",
        output={"topic": "a haiku about rain", "best": "Soft rain taps the glass, night listens", "scores": [4, 7, 9]},
    ),
    ("docs/examples/research_explicit.yaml", "docs/examples/research_friendly.yaml"): Run(
        input="green tea",
        output=(
            "Notes on green tea:\n- It comes from Camellia sinensis.\n- Its leaves are not oxidised.\n"
            "- Matcha is a powdered green tea."
        ),
    ),
}
RUNS.update({example: run for pair, run in LOOP_PAIRS.items() for example in pair})

# The keys of `flujo run --json` / `flujo resume --json` (docs/cli.md documents them).
JSON_KEYS = {"run_id", "status", "output", "error", "failed_step", "pause", "usage", "answers"}


def runnable_examples() -> list[str]:
    files = sorted(DOC_EXAMPLES.glob("*.yaml")) + sorted((ROOT / "blueprints" / "examples").glob("*.yaml"))
    return [path.relative_to(ROOT).as_posix() for path in files]


def doc_pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def fenced_blocks(text: str, language: str) -> list[str]:
    """The contents of the ```language fenced blocks of a Markdown text."""
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def test_every_example_has_a_run_entry() -> None:
    examples = set(runnable_examples())
    missing = sorted(examples - set(RUNS))
    stale = sorted(set(RUNS) - examples)
    assert not missing, (
        f"no entry in RUNS (tests/docs/test_examples.py) for {', '.join(missing)}: "
        "add Run(input=..., answers=(...)) so the example is run offline"
    )
    assert not stale, f"RUNS lists examples that do not exist: {', '.join(stale)}"


def example_params() -> list[Any]:
    """The examples, those that run the local model marked slow (and skipped without its binding)."""
    local = [
        pytest.mark.slow,
        pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="xllamacpp is not installed"),
    ]
    return [pytest.param(e, marks=local) if RUNS.get(e, Run()).local else e for e in runnable_examples()]


@pytest.mark.parametrize("example", example_params())
def test_example_validates_and_runs_offline(example: str, state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As a person runs them from a shell where flujo's virtual environment is not active: a tool's `python3` is
    # still the one with flujo's extras (the MCP SDK an example's server needs).
    monkeypatch.setenv(
        "PATH",
        os.pathsep.join(
            p for p in os.environ.get("PATH", "").split(os.pathsep) if p != str(Path(sys.executable).parent)
        ),
    )
    run = RUNS.get(example)
    if run is None:
        pytest.fail(
            f"{example} has no entry in RUNS (tests/docs/test_examples.py): "
            "add Run(input=..., answers=(...)) with what it needs to run offline"
        )
    path = str(ROOT / example)

    code, out, err = flujo(["validate", path, "--json"])
    report = json.loads(out)
    assert code == exit_codes.OK and report["errors"] == 0, f"{example} does not validate:\n{err}{out}"
    if example.startswith("docs/"):
        assert report["warnings"] == 0, f"{example} has warnings: {report['findings']}"

    args = ["run", path, "--json", "--no-input"]
    if run.input is not None:
        args += ["--input", run.input]
    for answer in run.answers:
        args += ["--answer", answer]
    code, out, err = flujo(args)
    result = json.loads(out) if out.strip() else {}
    assert code == exit_codes.OK and result.get("status") == "completed", (
        f"{example} did not complete (exit {code}; a pause means RUNS needs more answers):\n{err}"
    )
    assert set(result) == JSON_KEYS
    if run.output is not _UNSET:
        assert result["output"] == run.output


def test_documented_blueprints_are_the_example_files() -> None:
    shown: set[str] = set()
    for page in doc_pages():
        for block in fenced_blocks(page.read_text(encoding="utf-8"), "yaml"):
            header = re.match(r"# (docs/examples/[\w/.-]+\.yaml)\b", block)
            if header is None:
                complete = re.search(r"^version:", block, re.MULTILINE) and re.search(r"^steps:", block, re.MULTILINE)
                assert not complete, (
                    f"{page.name}: a complete blueprint must be a file in docs/examples/ and its block must "
                    f"start with '# docs/examples/NAME.yaml':\n{block[:200]}"
                )
                continue
            name = header.group(1)
            file = ROOT / name
            assert file.is_file(), f"{page.name} shows {name}, which does not exist"
            assert block == file.read_text(encoding="utf-8"), f"{page.name}: the block for {name} differs from the file"
            shown.add(name)
    files = {path.relative_to(ROOT).as_posix() for path in DOC_EXAMPLES.rglob("*.yaml")}
    assert not files - shown, f"examples not shown in any docs page: {sorted(files - shown)}"


def test_documented_fragments_parse(tmp_path: Path) -> None:
    """Every other ```yaml block is valid YAML, and every ```toml block is a flujo.toml that loads."""
    for page in doc_pages():
        text = page.read_text(encoding="utf-8")
        for block in fenced_blocks(text, "yaml"):
            yaml.safe_load(block)
        for number, block in enumerate(fenced_blocks(text, "toml")):
            folder = tmp_path / f"{page.stem}-{number}"
            folder.mkdir()
            (folder / "flujo.toml").write_text(block, encoding="utf-8")
            load_settings(cwd=folder, env={})  # raises ConfigError naming the bad key


def test_invalid_examples_fail_with_the_documented_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the docs show paths relative to the repository root
    documented: dict[str, str] = {}
    for page in doc_pages():
        for block in fenced_blocks(page.read_text(encoding="utf-8"), "text"):
            command = re.match(r"\$ flujo validate (docs/examples/invalid/[\w.-]+\.yaml)\n", block)
            if command is not None:
                documented[command.group(1)] = block[command.end() :]
    invalid = sorted(path.relative_to(ROOT).as_posix() for path in INVALID.glob("*.yaml"))
    assert invalid, "docs/examples/invalid/ holds no examples"
    for example in invalid:
        code, _, err = flujo(["validate", example])
        assert code == exit_codes.FAILED, f"{example} should not validate"
        assert example in documented, f"no docs page shows the output of: flujo validate {example}"
        assert documented[example] == err, f"the documented output of flujo validate {example} is not the real one"


def test_documented_run_output_is_the_real_output(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ```text block that starts with ``$ flujo run ... 2>/dev/null`` shows exactly what that prints on stdout."""
    monkeypatch.chdir(ROOT)  # the docs show paths relative to the repository root
    for page in doc_pages():
        for block in fenced_blocks(page.read_text(encoding="utf-8"), "text"):
            command = re.match(r"\$ flujo (run .+) 2>/dev/null\n", block)
            if command is None:
                continue
            code, out, err = flujo(shlex.split(command.group(1)))
            assert code == exit_codes.OK, f"{page.name}: {command.group(0)} failed:\n{err}"
            assert out == block[command.end() :], (
                f"{page.name}: the output shown for {command.group(0)} is not the real one"
            )


def test_documented_test_output_is_the_real_output(
    state_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ```text block that shows ``$ flujo test ...`` shows what that prints on stdout (its times and run ids
    aside). A block that first says ``# after changing "OLD" to "NEW" in FILE`` shows it run on a copy of the
    docs' examples with that change made."""
    change = re.compile(r'# after changing "(.+)" to "(.+)" in (docs/examples/[\w/.-]+)\n')
    shown = 0
    for page in doc_pages():
        for block in fenced_blocks(page.read_text(encoding="utf-8"), "text"):
            edit = change.match(block)
            rest = block[edit.end() :] if edit else block
            command = re.match(r"\$ flujo (test .+)\n", rest)
            if command is None:
                continue
            folder = ROOT
            if edit is not None:
                folder = tmp_path / page.stem / str(shown)
                shutil.copytree(DOC_EXAMPLES, folder / "docs" / "examples")
                edited = folder / edit.group(3)
                assert edit.group(1) in edited.read_text(encoding="utf-8"), f"{page.name}: {edit.group(0)}"
                edited.write_text(edited.read_text(encoding="utf-8").replace(edit.group(1), edit.group(2)))
            monkeypatch.chdir(folder)
            _, out, err = flujo(shlex.split(command.group(1)))
            assert _timeless(out) == _timeless(rest[command.end() :]), (
                f"{page.name}: the output shown for {command.group(0)} is not the real one:\n{out}{err}"
            )
            shown += 1
    assert shown >= 2


def _timeless(output: str) -> str:
    """``flujo test``'s output with its run ids and its time left out."""
    return re.sub(r"\(\d+\.\d+s\)", "(TIME)", re.sub(r"\b[0-9a-f]{16}\b", "RUN", output))


def test_documented_pause_and_resume(state_db: Path) -> None:
    """docs/blueprints.md: `--no-input` pauses at the first question; `flujo resume` continues the run."""
    hitl = str(DOC_EXAMPLES / "hitl.yaml")
    code, out, _ = flujo(["run", hitl, "--no-input", "--json"])
    paused = json.loads(out)
    assert code == exit_codes.PAUSED and paused["status"] == "paused"
    assert paused["pause"]["step"] == "guests"
    code, out, _ = flujo(["resume", paused["run_id"][:6], "--no-input", "--json", "-a", "4", "-a", "yes"])
    assert code == exit_codes.PAUSED and json.loads(out)["pause"]["step"] == "seat"
    code, out, err = flujo(["resume", paused["run_id"], "--json", "-a", "window", "-a", "no nuts"])
    assert code == exit_codes.OK, err
    assert json.loads(out)["output"] == RUNS["docs/examples/hitl.yaml"].output
