"""``lens.diff`` on recorded calls made here: how the calls of two runs are paired (by step path and which
call there), where a call only one run made is placed, and when usage is said."""

from __future__ import annotations

from typing import Any

from core import RecordedCall
from lens import compare_runs, diff_document, diff_lines
from lens.diff import ComparedRun

USAGE = {"input_tokens": 10, "output_tokens": 5, "requests": 1, "cost_usd": 0.001}


def agent(path: str, prompt: str, reply: Any = "ok", usage: dict[str, Any] | None = None) -> RecordedCall:
    messages = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt})
    return RecordedCall(path, "agent", output=reply, agent="a", messages=messages, usage=usage or USAGE)


def tool(path: str, name: str, arguments: Any, result: str) -> RecordedCall:
    outcome = {"content": result, "value": result, "error": False, "declined": False}
    return RecordedCall(path, "tool", output=outcome, tool=name, arguments=arguments)


def compared(run_id: str, *calls: RecordedCall, output: Any = "done") -> ComparedRun:
    return ComparedRun(run_id, "completed", output, calls)


def whats(a: ComparedRun, b: ComparedRun) -> list[tuple[str | None, str, int | None]]:
    return [(d["path"], d["what"], d["call"]) for d in diff_document(compare_runs(a, b), every=True)["differences"]]


def test_a_call_only_b_made_comes_after_the_call_b_made_before_it() -> None:
    a = compared("A", agent("plan", "x"), agent("write", "x"), agent("check", "x"))
    b = compared("B", agent("plan", "x"), agent("research", "x"), agent("write", "y"), agent("check", "x"))
    assert whats(a, b) == [("research", "missing_in_a", 1), ("write", "prompt", 1)]
    assert whats(b, a) == [("research", "missing_in_b", 1), ("write", "prompt", 1)]
    first = compared("B", agent("intro", "x"), agent("plan", "x"), agent("write", "x"), agent("check", "x"))
    assert whats(a, first)[0] == ("intro", "missing_in_a", 1)


def test_calls_at_one_path_are_paired_in_order() -> None:
    """A step that called its agent twice (a retry): the second calls are compared with each other."""
    a = compared("A", agent("draft", "x", reply="bad"), agent("draft", "x, again", reply="good"))
    b = compared("B", agent("draft", "x", reply="bad"), agent("draft", "x, once more", reply="good"))
    assert whats(a, b) == [("draft", "prompt", 2)]
    lines = diff_lines(compare_runs(a, b))
    assert lines[0] == "runs A and B differ at 1 of 2 calls, the first at draft (call 2)"
    assert lines[2] == "prompt at draft (call 2):"


def test_usage_is_said_beside_a_call_that_differs_only() -> None:
    spent = {**USAGE, "input_tokens": 12}
    same_prompt = compared("B", agent("draft", "x", usage=spent))
    assert whats(compared("A", agent("draft", "x")), same_prompt) == []  # the same call, other token counts
    other = compared("B", agent("draft", "y", usage=spent))
    assert whats(compared("A", agent("draft", "x")), other) == [("draft", "prompt", 1), ("draft", "usage", 1)]
    lines = diff_lines(compare_runs(compared("A", agent("draft", "x")), other))
    usage = lines.index("usage at draft:")
    assert lines[usage + 1 :] == ["A: 1 request · 15 tokens · $0.001000", "B: 1 request · 17 tokens · $0.001000"]


def test_same_prompts_other_replies() -> None:
    a = compared("A", agent("draft", "x", reply="one"), output="one")
    b = compared("B", agent("draft", "x", reply="two"), output="two")
    result = compare_runs(a, b)
    assert (result.same, result.same_prompts) == (False, True)
    lines = diff_lines(result)
    assert (
        lines[0] == "runs A and B sent the same prompts (1 call), but the replies differ at 1 call, the first at draft"
    )
    assert lines[1:] == [
        "", "reply at draft:", "--- A draft", "+++ B draft", "@@ -1 +1 @@", "-one", "+two",
        "", "final output:", "--- A final output", "+++ B final output", "@@ -1 +1 @@", "-one", "+two",
    ]  # fmt: skip


def test_a_tool_call_and_an_agent_call_at_one_path_are_two_calls() -> None:
    a = compared("A", tool("answer/tool/1", "add", {"a": 1, "b": 2}, "3"))
    b = compared("B", agent("answer/tool/1", "x"))
    assert whats(a, b) == [("answer/tool/1", "missing_in_b", 1), ("answer/tool/1", "missing_in_a", 1)]
    document = diff_document(compare_runs(a, b))
    assert document["differences"][0]["a"]["tool"] == "add" and document["differences"][1]["b"]["kind"] == "agent"


def test_only_the_final_outputs_differ() -> None:
    a, b = compared("A", agent("draft", "x"), output="x"), compared("B", agent("draft", "x"), output=None)
    lines = diff_lines(compare_runs(a, b))
    assert (
        lines[0]
        == "runs A and B sent the same prompts and got the same replies (1 call), but their final outputs differ"
    )
    assert lines[-2:] == ["-x", "+null"]
