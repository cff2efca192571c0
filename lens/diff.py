"""``flujo lens diff RUN_A RUN_B``: two runs compared call by call, as their journals recorded them.

Each run is read as a replay reads it (``core.load_recording``: its agent calls with the messages they sent,
their replies and usage, and its tool calls with their arguments and results, a sub-workflow's child run
included under its step's path), masked again here (``compared_runs``) as everything lens shows is.

Two calls are the same call when they are at the same step path, the N-th call there in both runs (a step
retried or repaired calls its agent again at its path). ``compare_runs`` walks the calls in the order run A
made them, a call that only run B made placed after the call B made before it, and says for each call that
differs what differs:

- ``prompt``: the messages an agent was sent (a message-by-message diff, ``core.message_lines``);
- ``tool_call``: a tool call's name or arguments;
- ``output``: an agent's reply, or a tool call's result;
- ``usage``: the calls' usage, said only beside a call that differs otherwise (two runs of the same prompt
  rarely spend the same tokens, and a replayed call spends nothing);
- ``missing_in_a`` / ``missing_in_b``: a call one run made and the other did not;
- ``final_output``: the runs' outputs.

The diffs are unified diffs labelled with the runs' ids (``--- RUN_A PATH`` / ``+++ RUN_B PATH``).
``diff_lines`` words the comparison for a person; ``diff_document`` is the ``--json`` document. Both show the
first differing call, or every one (``every=True``), and the final outputs when they differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from core import Usage, message_lines, unified, value_lines
from lens.labels import usage_words
from lens.masking import Masker

if TYPE_CHECKING:
    from core import RecordedCall, Redactor, RunRecord

DifferenceKind = Literal["prompt", "tool_call", "output", "usage", "missing_in_a", "missing_in_b", "final_output"]
CallKey = tuple[str, int]  # a call's step path, and which call at that path it is (1, 2, ...)


@dataclass(frozen=True)
class ComparedRun:
    """What ``lens diff`` compares of one run, masked: its calls in the order it made them, and its output."""

    run_id: str
    status: str
    output: Any
    calls: tuple[RecordedCall, ...]


@dataclass(frozen=True)
class Difference:
    """One way the runs differ: ``what`` differs at the call ``path`` (its ``call``-th there; ``path`` None
    for the final output), of ``kind`` agent or tool; ``a`` and ``b`` are the runs' values (the messages of
    a prompt, a tool call's name and arguments, an output, a usage; for a call one run did not make, the
    other's call whole, and None), ``diff`` a unified diff of them (for usage, the two usages in words)."""

    what: DifferenceKind
    path: str | None
    diff: str
    call: int = 1
    kind: str | None = None  # the call's (``RecordedCall.kind``)
    a: Any = None
    b: Any = None

    def to_dict(self) -> dict[str, Any]:
        call = None if self.path is None else self.call
        return {"path": self.path, "what": self.what, "call": call, "kind": self.kind, "a": self.a, "b": self.b,
                "diff": self.diff}  # fmt: skip


@dataclass(frozen=True)
class RunDiff:
    """Runs ``a`` and ``b`` compared: the differences of each call that differs, in step order, and of
    their final outputs (None when the same)."""

    a: ComparedRun
    b: ComparedRun
    calls: tuple[tuple[Difference, ...], ...]
    final_output: Difference | None

    @property
    def same(self) -> bool:
        return not self.calls and self.final_output is None

    @property
    def same_prompts(self) -> bool:
        """Whether both runs made the same calls with the same prompts and tool arguments (replies aside)."""
        return all(d.what in ("output", "usage") for differences in self.calls for d in differences)

    def shown(self, *, every: bool) -> list[Difference]:
        """The differences ``diff_lines`` and ``diff_document`` show: the first differing call's (every call's
        with ``every``), then the final outputs'."""
        calls = self.calls if every else self.calls[:1]
        final = [self.final_output] if self.final_output is not None else []
        return [difference for differences in calls for difference in differences] + final


def compared_runs(redactor: Redactor, *runs: tuple[RunRecord, Iterable[RecordedCall]]) -> tuple[ComparedRun, ...]:
    """Each run (its record, and its recorded calls: ``core.load_recording``) with every text masked by
    ``redactor`` (the store's events were masked when written; lens never relies on it). One masker for all:
    two runs of a blueprint share most of their texts, each masked once."""
    masker = Masker(redactor)
    return tuple(_masked(record, calls, masker) for record, calls in runs)


def _masked(record: RunRecord, calls: Iterable[RecordedCall], masker: Masker) -> ComparedRun:
    masked = tuple(
        dataclasses.replace(
            call,
            path=masker.path(call.path),
            output=masker.value(call.output),
            messages=tuple(masker.value(dict(message)) for message in call.messages),
            arguments=masker.value(call.arguments),
            tool=masker.optional(call.tool),
        )
        for call in calls
    )
    return ComparedRun(record.run_id, record.status, masker.value(record.output), masked)


def compare_runs(a: ComparedRun, b: ComparedRun) -> RunDiff:
    """Runs ``a`` and ``b`` compared call by call (see the module docstring)."""
    in_a, in_b = _keyed(a.calls), _keyed(b.calls)
    labels = (a.run_id, b.run_id)
    differing: list[tuple[Difference, ...]] = []
    for key in _walk(list(in_a), list(in_b)):
        found = _differences(key, in_a.get(key), in_b.get(key), labels)
        if found:
            differing.append(found)
    final = None
    if a.output != b.output:
        old, new = value_lines(a.output), value_lines(b.output)
        diff = unified(old, new, path="final output", before=a.run_id, after=b.run_id)
        final = Difference("final_output", None, diff, a=a.output, b=b.output)
    return RunDiff(a, b, tuple(differing), final)


def diff_document(result: RunDiff, *, every: bool = False) -> dict[str, Any]:
    """The ``--json`` document (docs/lens.md, "Comparing two runs")."""
    return {
        "a": result.a.run_id,
        "b": result.b.run_id,
        "status": {"a": result.a.status, "b": result.b.status},
        "same": result.same,
        "same_prompts": result.same_prompts,
        "calls": {"a": len(result.a.calls), "b": len(result.b.calls)},
        "differing_calls": len(result.calls),
        "shown": "all" if every else "first",
        "differences": [difference.to_dict() for difference in result.shown(every=every)],
    }


def diff_lines(result: RunDiff, *, every: bool = False) -> list[str]:
    """The comparison as a person reads it: a sentence saying whether the runs differ and where, then each
    difference shown (``RunDiff.shown``) under a title, then how to see the calls not shown."""
    lines = [_headline(result)]
    for difference in result.shown(every=every):
        lines.append("")
        lines.append(_title(difference, result))
        if difference.diff:
            lines.extend(difference.diff.split("\n"))
    hidden = 0 if every else len(result.calls) - 1
    if hidden > 0:
        more = "call differs" if hidden == 1 else "calls differ"
        lines += ["", f"{hidden} more {more}: add --all to see every one"]
    return lines


def _headline(result: RunDiff) -> str:
    """The first line: whether the runs differ, how much, and where first."""
    a, b = result.a.run_id, result.b.run_id
    made_a, made_b = len(result.a.calls), len(result.b.calls)
    made = _calls(made_a) if made_a == made_b else f"{made_a} calls in {a}, {made_b} in {b}"
    if not result.calls:
        outputs = "and gave the same output" if result.final_output is None else "but their final outputs differ"
        return f"runs {a} and {b} sent the same prompts and got the same replies ({made}), {outputs}"
    first = result.calls[0][0]
    where = f"{first.path}" + (f" (call {first.call})" if first.call > 1 else "")
    count = len(result.calls)
    if result.same_prompts:
        replies = f"the replies differ at {_calls(count)}, the first at {where}"
        return f"runs {a} and {b} sent the same prompts ({made}), but {replies}"
    if made_a == made_b:
        return f"runs {a} and {b} differ at {count} of {made}, the first at {where}"
    return f"runs {a} and {b} differ at {_calls(count)} ({made}), the first at {where}"


def _calls(count: int) -> str:
    return "1 call" if count == 1 else f"{count} calls"


def _title(difference: Difference, result: RunDiff) -> str:
    if difference.path is None:
        return "final output:"
    where = difference.path + (f" (call {difference.call})" if difference.call > 1 else "")
    kind = f"{difference.kind} call"
    if difference.what == "missing_in_a":
        return f"{kind} at {where}: only in {result.b.run_id} (run {result.a.run_id} made none there)"
    if difference.what == "missing_in_b":
        return f"{kind} at {where}: only in {result.a.run_id} (run {result.b.run_id} made none there)"
    if difference.what == "usage":
        return f"usage at {where}:"
    named = {
        "prompt": "prompt",
        "tool_call": "tool call",
        "output": "reply" if difference.kind == "agent" else "result",
    }
    return f"{named[difference.what]} at {where}:"


def _keyed(calls: Iterable[RecordedCall]) -> dict[CallKey, RecordedCall]:
    """The calls by (path, which call at that path), in the order they were made."""
    seen: dict[str, int] = {}
    keyed: dict[CallKey, RecordedCall] = {}
    for call in calls:
        seen[call.path] = seen.get(call.path, 0) + 1
        keyed[(call.path, seen[call.path])] = call
    return keyed


def _walk(in_a: Sequence[CallKey], in_b: Sequence[CallKey]) -> list[CallKey]:
    """Every call of both runs once: in A's order, each call only B made after the call B made before it
    (those before any call both made first)."""
    shared = set(in_a) & set(in_b)
    after: dict[CallKey | None, list[CallKey]] = {}
    anchor: CallKey | None = None
    for key in in_b:
        if key in shared:
            anchor = key
        else:
            after.setdefault(anchor, []).append(key)
    walked = list(after.get(None, []))
    for key in in_a:
        walked.append(key)
        walked.extend(after.get(key, []))
    return walked


def _differences(
    key: CallKey, a: RecordedCall | None, b: RecordedCall | None, labels: tuple[str, str]
) -> tuple[Difference, ...]:
    path, number = key
    before, after = labels

    def diff(old: Sequence[str], new: Sequence[str]) -> str:
        return unified(old, new, path=path, before=before, after=after)

    if a is None or b is None or a.kind != b.kind:  # one run made no call here, or another kind of call
        missing: list[Difference] = []
        if a is not None:
            missing.append(Difference("missing_in_b", path, diff(_call_lines(a), []), number, a.kind, a=a.to_dict()))
        if b is not None:
            missing.append(Difference("missing_in_a", path, diff([], _call_lines(b)), number, b.kind, b=b.to_dict()))
        return tuple(missing)
    found: list[Difference] = []
    if a.kind == "agent" and list(a.messages) != list(b.messages):
        shown = diff(_call_lines(a), _call_lines(b))
        found.append(Difference("prompt", path, shown, number, a.kind, list(a.messages), list(b.messages)))
    elif a.kind != "agent" and _tool_call(a) != _tool_call(b):
        shown = diff(value_lines(_tool_call(a)), value_lines(_tool_call(b)))
        found.append(Difference("tool_call", path, shown, number, a.kind, _tool_call(a), _tool_call(b)))
    if a.output != b.output:
        shown = diff(value_lines(a.output), value_lines(b.output))
        found.append(Difference("output", path, shown, number, a.kind, a.output, b.output))
    if found and a.kind == "agent" and _usage(a.usage) != _usage(b.usage):
        words = f"{before}: {_usage_text(a.usage)}\n{after}: {_usage_text(b.usage)}"
        found.append(Difference("usage", path, words, number, a.kind, _usage(a.usage), _usage(b.usage)))
    return tuple(found)


def _call_lines(call: RecordedCall) -> list[str]:
    if call.kind == "agent":
        return message_lines(call.messages)
    return value_lines(_tool_call(call))


def _tool_call(call: RecordedCall) -> dict[str, Any]:
    # As the replay shows a tool call; keywords, as lens spells no step kind ("tool" is one: tests/test_layering.py).
    return dict(tool=call.tool, arguments=call.arguments)


def _usage(usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if usage is None else Usage.from_dict(usage).to_dict()


def _usage_text(usage: Mapping[str, Any] | None) -> str:
    return "not recorded" if usage is None else usage_words(Usage.from_dict(usage), always=True)
