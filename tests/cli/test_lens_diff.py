"""``flujo lens diff RUN_A RUN_B`` through the real CLI, on runs of blueprints with scripted agents that
``flujo run`` stored in SQLite: which call differs first and how (the -/+ lines of its prompt), every one
with ``--all``, calls one run made and the other did not, tool calls, sub-workflows in step order, the
``--json`` document, two stores, masking, and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo

SECRET = "sk-proj-Zq8Xw2Lm4Np6Rt0Vb3Hj5Kd7Fg9Sa1Qe"  # the shape of an OpenAI key: masked wherever lens shows it


def blueprint(
    folder: Path,
    name: str,
    *,
    writer: str = "You write short poems.",
    critic: str = "You critique poems.",
    verdict: str = "Fine, but short.",
) -> Path:
    """A blueprint of two agent steps (draft, then review of the draft), with these system prompts; the
    critic's reply (the ``verdict``) is the run's output."""
    path = folder / f"{name}.yaml"
    path.write_text(
        f"""\
version: "0.1"
name: poems
agents:
  writer:
    model: scripted
    system_prompt: "{writer}"
    replies: ["Cats nap in the sun."]
  critic:
    model: scripted
    system_prompt: "{critic}"
    replies: ["{verdict}"]
steps:
  - {{kind: step, name: draft, uses: agents.writer}}
  - {{kind: step, name: review, uses: agents.critic}}
""",
        encoding="utf-8",
    )
    return path


def run(path: Path, *args: str, text: str = "cats") -> str:
    code, out, err = flujo(["run", str(path), "--input", text, *args, "--json"])
    assert code == exit_codes.OK, err
    return str(json.loads(out)["run_id"])


def diff(*args: str) -> tuple[int, str, str]:
    return flujo(["lens", "diff", *args])


def diff_json(*args: str) -> dict[str, Any]:
    code, out, err = diff(*args, "--json")
    assert code == exit_codes.OK, err
    document: dict[str, Any] = json.loads(out)
    return document


def test_the_same_blueprint_twice_sent_the_same_prompts(tmp_path: Path, state_db: Path) -> None:
    flow = blueprint(tmp_path, "poems")
    a, b = run(flow), run(flow)
    code, out, err = diff(a, b[:6])  # a prefix is enough
    assert (code, err) == (exit_codes.OK, "")
    assert out == (
        f"runs {a} and {b} sent the same prompts and got the same replies (2 calls), and gave the same output\n"
    )
    document = diff_json(a, b)
    assert document == {
        "a": a, "b": b, "status": {"a": "completed", "b": "completed"}, "same": True, "same_prompts": True,
        "calls": {"a": 2, "b": 2}, "differing_calls": 0, "shown": "first", "differences": [],
    }  # fmt: skip


def test_a_replay_sent_the_same_prompts_though_it_spent_nothing(tmp_path: Path, state_db: Path) -> None:
    """A replayed call is served from the recording (usage zero): usage is said only beside a call that
    differs, so a clean replay compares as the same run."""
    flow = blueprint(tmp_path, "poems")
    a = run(flow)
    b = run(flow, "--replay", a)
    document = diff_json(a, b, "--all")
    assert (document["same"], document["differences"]) == (True, [])


def test_a_changed_system_prompt_shows_the_step_and_the_changed_lines(tmp_path: Path, state_db: Path) -> None:
    a = run(blueprint(tmp_path, "before"))
    b = run(blueprint(tmp_path, "after", critic="You critique poems harshly."))
    code, out, _ = diff(a, b)
    assert code == exit_codes.OK
    assert out == (
        f"runs {a} and {b} differ at 1 of 2 calls, the first at review\n"
        "\n"
        "prompt at review:\n"
        f"--- {a} review\n"
        f"+++ {b} review\n"
        "@@ -1,4 +1,4 @@\n"
        " [1] system\n"
        "-    You critique poems.\n"
        "+    You critique poems harshly.\n"
        " [2] user\n"
        "     Cats nap in the sun.\n"
    )
    document = diff_json(a, b)
    assert (document["same"], document["same_prompts"], document["differing_calls"]) == (False, False, 1)
    [prompt] = document["differences"]
    assert {key: prompt[key] for key in ("path", "what", "call", "kind")} == {
        "path": "review", "what": "prompt", "call": 1, "kind": "agent",
    }  # fmt: skip
    assert "-    You critique poems.\n+    You critique poems harshly." in prompt["diff"]


def test_all_shows_every_differing_prompt(tmp_path: Path, state_db: Path) -> None:
    a = run(blueprint(tmp_path, "before"))
    b = run(blueprint(tmp_path, "after", writer="You write long poems.", critic="You critique poems harshly."))
    code, out, _ = diff(a, b)
    assert code == exit_codes.OK
    assert out.startswith(f"runs {a} and {b} differ at 2 of 2 calls, the first at draft\n")
    assert "prompt at draft:" in out and "+    You write long poems." in out
    assert "prompt at review:" not in out and out.endswith("\n1 more call differs: add --all to see every one\n")

    code, out, _ = diff(a, b, "--all")
    assert code == exit_codes.OK
    assert out.index("prompt at draft:") < out.index("prompt at review:")
    assert "+    You critique poems harshly." in out and "more call" not in out
    document = diff_json(a, b, "--all")
    assert document["shown"] == "all"
    assert [(d["path"], d["what"]) for d in document["differences"]] == [("draft", "prompt"), ("review", "prompt")]
    assert [d["path"] for d in diff_json(a, b)["differences"]] == ["draft"]


def test_a_step_added_in_b_is_missing_in_a(tmp_path: Path, state_db: Path) -> None:
    flow = blueprint(tmp_path, "before")
    longer = tmp_path / "after.yaml"
    longer.write_text(
        flow.read_text(encoding="utf-8").replace(
            "  - {kind: step, name: review,",
            "  - {kind: step, name: polish, uses: agents.writer}\n  - {kind: step, name: review,",
        ),
        encoding="utf-8",
    )
    a, b = run(flow), run(longer)
    code, out, _ = diff(a, b, "--all")
    assert code == exit_codes.OK
    assert out.startswith(f"runs {a} and {b} differ at 1 call (2 calls in {a}, 3 in {b}), the first at polish\n")
    assert f"agent call at polish: only in {b} (run {a} made none there)\n--- {a} polish\n+++ {b} polish\n" in out
    assert "+    You write short poems.\n" in out
    document = diff_json(a, b, "--all")
    assert document["calls"] == {"a": 2, "b": 3}
    [missing] = document["differences"]  # review's prompt is the same: the draft it reviews is
    assert (missing["path"], missing["what"], missing["kind"]) == ("polish", "missing_in_a", "agent")

    document = diff_json(b, a)  # the other way round, it is missing in B
    assert [(d["path"], d["what"]) for d in document["differences"]] == [("polish", "missing_in_b")]


TOOLS = '''\
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b
'''

CALCULATOR = """\
version: "0.1"
name: calculator
tools:
  add: {python: "lens_diff_tools:add"}
  multiply: {python: "lens_diff_tools:multiply"}
agents:
  calculator:
    model: scripted
    system_prompt: "Use the tools for arithmetic."
    tools: [add, multiply]
    replies:
      - {tool: add, arguments: {a: 2, b: 3}}
      - {tool: multiply, arguments: {a: 5, b: FACTOR}}
      - "The answer is ANSWER."
steps:
  - {kind: step, name: answer, uses: agents.calculator}
"""


def test_tool_calls_are_compared_by_name_arguments_and_result(tmp_path: Path, state_db: Path) -> None:
    (tmp_path / "lens_diff_tools.py").write_text(TOOLS, encoding="utf-8")
    runs = []
    for factor in (4, 5):
        flow = tmp_path / f"calc{factor}.yaml"
        text = CALCULATOR.replace("FACTOR", str(factor)).replace("ANSWER", str(5 * factor))
        flow.write_text(text, encoding="utf-8")
        runs.append(run(flow, text="What is (2 + 3) * 4?"))
    a, b = runs
    document = diff_json(a, b, "--all")
    found = [(d["path"], d["what"], d["kind"]) for d in document["differences"]]
    assert found == [
        ("answer/model/2", "output", "agent"),  # the model asked for another call
        ("answer/tool/2", "tool_call", "tool"),
        ("answer/tool/2", "output", "tool"),
        ("answer/model/3", "prompt", "agent"),  # the result it was sent
        ("answer/model/3", "output", "agent"),
        (None, "final_output", None),
    ]  # the first tool call (add 2 3) and the first turn are the same in both runs
    call = document["differences"][1]
    assert (call["a"], call["b"]) == (
        {"tool": "multiply", "arguments": {"a": 5, "b": 4}},
        {"tool": "multiply", "arguments": {"a": 5, "b": 5}},
    )
    result = document["differences"][2]
    assert (result["a"]["value"], result["b"]["value"]) == (20, 25)
    final = document["differences"][-1]
    assert (final["a"], final["b"]) == ("The answer is 20.", "The answer is 25.")

    code, out, _ = diff(a, b, "--all")
    assert code == exit_codes.OK
    assert "tool call at answer/tool/2:\n" in out and '-    "b": 4\n+    "b": 5\n' in out
    assert "result at answer/tool/2:\n" in out and '-  "content": "20",\n+  "content": "25",\n' in out
    assert "final output:\n" in out and "-The answer is 20.\n+The answer is 25.\n" in out


def test_a_sub_workflow_s_calls_come_where_its_step_ran(tmp_path: Path, state_db: Path) -> None:
    """The critique inside the review sub-workflow differs first, and the publish step after it (its
    prompt carries the critique) second, though the child run's calls are read after the parent's."""
    parent = tmp_path / "parent.yaml"
    parent.write_text(
        """\
version: "0.1"
name: parent
agents:
  writer: {model: scripted, replies: ["A draft."]}
  publisher: {model: scripted, replies: ["Published."]}
imports:
  review: child.yaml
steps:
  - {kind: step, name: draft, uses: agents.writer}
  - {kind: step, name: review, uses: imports.review}
  - {kind: step, name: publish, uses: agents.publisher}
""",
        encoding="utf-8",
    )
    runs = []
    for critic, reply in (("Critique.", "Good."), ("Critique harshly.", "Bad.")):
        (tmp_path / "child.yaml").write_text(
            f"""\
version: "0.1"
name: child
agents:
  critic: {{model: scripted, system_prompt: "{critic}", replies: ["{reply}"]}}
steps:
  - {{kind: step, name: critique, uses: agents.critic}}
""",
            encoding="utf-8",
        )
        runs.append(run(parent))
    a, b = runs
    code, out, _ = diff(a, b)
    assert code == exit_codes.OK
    assert out.startswith(f"runs {a} and {b} differ at 2 of 3 calls, the first at review/critique\n")
    assert "-    Critique.\n+    Critique harshly.\n" in out and "reply at review/critique:\n" in out
    document = diff_json(a, b, "--all")
    assert [(d["path"], d["what"]) for d in document["differences"]] == [
        ("review/critique", "prompt"),
        ("review/critique", "output"),
        ("publish", "prompt"),
    ]


def test_runs_in_two_stores(tmp_path: Path, state_db: Path) -> None:
    flow = blueprint(tmp_path, "poems")
    other = tmp_path / "other" / "flujo.db"
    a = run(flow)
    b = run(flow, "--state", str(other), text="dogs")
    code, out, _ = diff(a, b, "--other-state", str(other))
    assert code == exit_codes.OK
    assert out.startswith(f"runs {a} and {b} differ at 1 of 2 calls, the first at draft\n")
    assert "-    cats\n+    dogs\n" in out
    document = diff_json(b, a, "--state", str(other), "--other-state", str(state_db))
    assert (document["a"], document["b"], document["differing_calls"]) == (b, a, 1)  # review's draft is the same

    code, out, err = diff(a, b)  # B is not in A's store
    assert (code, out) == (exit_codes.FAILED, "")
    assert f"no run matches {b!r} in {state_db}" in err
    code, out, err = diff(a, a, "--other-state", str(other))
    assert (code, out) == (exit_codes.FAILED, "")
    assert f"no run matches {a!r} in {other}" in err and "--other-state" in err
    code, out, err = diff(a, b, "--other-state", str(tmp_path / "nowhere.db"))
    assert (code, out) == (exit_codes.STORE, "") and "there is no run store at" in err
    assert not (tmp_path / "nowhere.db").exists()  # lens never creates a store


def test_secrets_are_masked_in_the_diff(tmp_path: Path, state_db: Path) -> None:
    """In the prompts (their events are masked when stored) and in the final output, which the run store
    keeps as it was: lens masks what it reads."""
    a = run(blueprint(tmp_path, "before"), text=f"cats, my key is {SECRET}")
    b = run(blueprint(tmp_path, "after", verdict=f"Fine. Your key: {SECRET}"), text=f"dogs, my key is {SECRET}")
    for args in ((), ("--all",), ("--json",), ("--all", "--json")):
        code, out, _ = diff(a, b, *args)
        assert code == exit_codes.OK
        assert SECRET not in out and SECRET[:12] not in out and "[REDACTED]" in out
    code, out, _ = diff(a, b, "--all")
    assert "-    cats, my key is [REDACTED]\n+    dogs, my key is [REDACTED]\n" in out
    assert "final output:" in out and "+Fine. Your key: [REDACTED]\n" in out
    final = diff_json(a, b)["differences"][-1]
    assert (final["what"], final["b"]) == ("final_output", "Fine. Your key: [REDACTED]")


def test_exit_codes(tmp_path: Path, state_db: Path) -> None:
    a = run(blueprint(tmp_path, "poems"))
    code, out, err = diff(a, "nope")
    assert (code, out) == (exit_codes.FAILED, "")
    assert f"no run matches 'nope' in {state_db}" in err and "flujo lens list" in err
    code, out, err = diff("nope", a)
    assert (code, out) == (exit_codes.FAILED, "") and "no run matches 'nope'" in err
    code, _, err = diff(a)
    assert code == exit_codes.USAGE and "RUN_B" in err
    code, _, err = diff(a, a, "--every")
    assert code == exit_codes.USAGE
    code, out, err = diff(a, a, "--state", str(tmp_path / "missing.db"))
    assert (code, out) == (exit_codes.STORE, "") and "there is no run store at" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("option", ["--all", "--json", "--other-state"])
def test_help_names_the_options(option: str) -> None:
    code, out, _ = flujo(["lens", "diff", "--help"])
    assert code == exit_codes.OK and option in out and "RUN_A" in out and "RUN_B" in out
