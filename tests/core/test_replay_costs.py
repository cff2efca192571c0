"""What a replay costs per call does not grow with its recording (benchmarks/test_replay.py, issue 33).

A served tool call marks the calls its recording made inside it (a workflow tool's child run's) as used;
they are found in an index of the recording made once, not by a walk over every recorded call per tool
call (which made a replay of 1,000 tool calls cost about as much as the engine's whole run, and grew with
the square of the calls).
"""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from core import RecordedCall, Recording, Replay

MESSAGES = ({"role": "user", "content": "Which city, and when?"},)


class CountedCalls(tuple[RecordedCall, ...]):
    """The recording's calls, counting the walks over all of them."""

    walks = 0

    def __iter__(self) -> Iterator[RecordedCall]:
        CountedCalls.walks += 1
        return super().__iter__()


def _tool_using_loop(iterations: int) -> list[RecordedCall]:
    """What a loop whose agent calls a tool each iteration records: a model turn, the call, a model turn."""
    calls = []
    for n in range(iterations):
        here = f"chat/{n}/clarify"
        calls.append(RecordedCall(f"{here}/model/1", "agent", output={"tool_calls": []}, messages=MESSAGES))
        calls.append(
            RecordedCall(f"{here}/tool/1", "tool", output={"content": "ok"}, tool="lookup", arguments={"n": n})
        )
        calls.append(RecordedCall(f"{here}/model/2", "agent", output="done", messages=MESSAGES))
    return calls


def test_serving_tool_calls_walks_the_recording_once() -> None:
    calls = CountedCalls(_tool_using_loop(50))
    replay = Replay(Recording("r", calls))
    CountedCalls.walks = 0
    for n in range(50):
        here = f"chat/{n}/clarify"
        assert replay.agent_reply(f"{here}/model/1", list(MESSAGES)) is calls[3 * n]
        served = replay.tool_outcome(f"{here}/tool/1", "lookup", {"n": n})
        assert served is not None and served.output == {"content": "ok"}
        assert replay.agent_reply(f"{here}/model/2", list(MESSAGES)) is calls[3 * n + 2]
    assert replay.finish() is None and replay.clean and replay.log.served == 150
    assert CountedCalls.walks <= 2  # the index, once; finish, once (not one walk per tool call)


def test_a_resumed_replay_marks_a_done_tool_call_and_the_calls_inside_it_as_used() -> None:
    calls = (
        RecordedCall("work/tool/1", "tool", tool="review", arguments={"text": "draft"}),
        RecordedCall("work/tool/1/draft", "agent", output="A draft.", messages=MESSAGES),  # its child run's
        RecordedCall("work/tool/2", "tool", tool="review", arguments={"text": "final"}),
    )
    replay = Replay(Recording("r", calls))
    replay.resumed(["work/tool/1"])
    assert sorted(replay.log.used) == [0, 1]


_PART = st.sampled_from(["chat", "1", "2", "clarify", "tool", "model", ""])
_PATH = st.lists(_PART, min_size=1, max_size=5).map("/".join)


@given(st.lists(_PATH, max_size=12), _PATH)
def test_the_calls_under_a_path_are_those_whose_path_starts_with_it_and_a_slash(paths: list[str], path: str) -> None:
    recording = Recording("r", tuple(RecordedCall(each, "tool", tool="t") for each in paths))
    expected = tuple(index for index, each in enumerate(paths) if each.startswith(f"{path}/"))
    assert recording.inside(path) == expected
