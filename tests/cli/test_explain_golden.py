"""``flujo explain`` through the real CLI, compared with golden files: every shipped example
(``blueprints/examples``, ``docs/examples``), the preset fixtures in ``tests/data/explain`` and the
blueprints the wizard writes (``tests/golden/wizard``). ``--json`` is the same explanation as data.

Golden files: tests/golden/explain/ (regenerate with FLUJO_UPDATE_GOLDEN=1, see tests/support/golden.py).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from blueprints import explain_blueprint, load_blueprint
from core import Settings
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT, flujo
from tests.support.golden import GOLDEN, UPDATE, check_golden


def explained_files() -> list[str]:
    folders = ("blueprints/examples", "docs/examples", "tests/data/explain", "tests/golden/wizard")
    return [path.relative_to(ROOT).as_posix() for folder in folders for path in sorted((ROOT / folder).glob("*.yaml"))]


def golden_name(example: str) -> str:
    return "explain/" + example.removesuffix(".yaml") + ".txt"


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Explain as the docs show it: from the repository root, 100 columns, no settings from the environment."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "100")
    for name in list(os.environ):
        if name.startswith("FLUJO_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("example", explained_files())
def test_explain_matches_the_golden_file(example: str, at_root: None) -> None:
    code, out, err = flujo(["explain", example])
    assert code == exit_codes.OK, err
    assert all(line == line.rstrip() for line in out.splitlines()), "no line ends in spaces"
    check_golden(golden_name(example), out)


@pytest.mark.parametrize("example", explained_files())
def test_json_is_the_same_explanation(example: str, at_root: None) -> None:
    code, out, err = flujo(["explain", example, "--json"])
    assert code == exit_codes.OK, err
    assert json.loads(out) == explain_blueprint(load_blueprint(example), Settings()).to_json()


def test_json_golden_of_nested_steps(at_root: None) -> None:
    code, out, _ = flujo(["explain", "docs/examples/subworkflow.yaml", "--json"])
    assert code == exit_codes.OK
    check_golden("explain/json/subworkflow.json", json.dumps(json.loads(out), indent=2, ensure_ascii=False) + "\n")


def test_no_stale_golden_files() -> None:
    if UPDATE:
        pytest.skip("regenerating")
    expected = {golden_name(example) for example in explained_files()}
    present = {path.relative_to(GOLDEN).as_posix() for path in (GOLDEN / "explain").rglob("*.txt")}
    assert present - expected == set(), "golden files of blueprints that no longer exist: delete them"


def test_documented_explain_output_is_the_real_output(at_root: None) -> None:
    """A ```text block of docs/*.md that starts with ``$ flujo explain FILE`` shows exactly its stdout."""
    shown = 0
    for page in sorted((ROOT / "docs").glob("*.md")):
        for block in re.findall(r"^```text\n(.*?)^```$", page.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE):
            command = re.match(r"\$ flujo (explain \S+)\n", block)
            if command is None:
                continue
            code, out, err = flujo(command.group(1).split())
            assert code == exit_codes.OK, err
            assert out == block[command.end() :], (
                f"{page.name}: the output shown for {command.group(0)} is not the real one"
            )
            shown += 1
    assert shown >= 2


def test_a_blueprint_with_errors_is_not_explained(at_root: None) -> None:
    example = "docs/examples/invalid/references.yaml"
    code, out, err = flujo(["explain", example])
    assert code == exit_codes.BLUEPRINT and out == ""
    assert "docs/examples/invalid/references.yaml:10:11: error: step 'draft' uses agent 'writter'" in err
    assert "3 error(s); nothing to explain. Check with: flujo validate FILE" in err
    code, out, _ = flujo(["explain", example, "--json"])
    assert code == exit_codes.BLUEPRINT
    report = json.loads(out)
    assert report["valid"] is False and report["errors"] == 3  # validate's JSON document


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = flujo(["explain", str(tmp_path / "nope.yaml")])
    assert code == exit_codes.USAGE and out == ""
    assert "no such blueprint file" in err


def test_settings_supply_the_defaults_a_blueprint_leaves_out(at_root: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLUJO_HISTORY__MAX_TOKENS", "1500")
    monkeypatch.setenv("FLUJO_LIMITS__MAX_COST_USD", "2")
    code, out, _ = flujo(["explain", "blueprints/examples/conversation.yaml"])
    assert code == exit_codes.OK
    flat = " ".join(out.split())
    assert "the most recent turns within 1500 tokens" in flat
    assert "At most $2.00 per run (the configured [limits])" in flat


def test_a_summarize_loop_without_its_own_summarizer_uses_the_configured_one(tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(
        'version: "0.1"\n'
        "agents: {tutor: {model: openai:gpt-4o-mini}}\n"
        "steps:\n"
        "  - kind: loop\n"
        "    name: quiz\n"
        "    loop:\n"
        "      conversation: true\n"
        "      max_loops: 3\n"
        "      history_management: {strategy: summarize, max_turns: 4}\n"
        "      body: [{kind: step, name: ask, uses: agents.tutor}]\n",
        encoding="utf-8",
    )
    # No summarizer of its own, none configured: the loop's last speaking agent summarizes.
    code, out, err = flujo(["explain", str(flow)])
    assert code == exit_codes.OK, err
    flat = " ".join(out.split())
    assert "tutor (the loop's last speaking agent, with the built-in summary prompt) condenses the last summary" in flat
    assert "tutor (openai:gpt-4o-mini) may also condense the history before each agent call of quiz" in flat
    # A scripted speaker cannot summarize: not valid, as for run.
    flow.write_text(
        flow.read_text(encoding="utf-8").replace("model: openai:gpt-4o-mini", "model: scripted, replies: [q]")
    )
    code, _, err = flujo(["explain", str(flow)])
    assert code == exit_codes.BLUEPRINT and "'tutor' (model: scripted) replies as written and cannot summarize" in err
    code, out, err = flujo(["explain", str(flow), "--set", "history.summarizer_model=openai:gpt-4o-mini"])
    assert code == exit_codes.OK, err
    flat = " ".join(out.split())
    assert "the configured summarizer (openai:gpt-4o-mini, history.summarizer_model) condenses the last summary" in flat
    assert "the configured summarizer (openai:gpt-4o-mini) may also condense the history before each agent call" in flat
    assert "of quiz: up to 3 times." in flat
