"""Resume is exact, for any blueprint: a property test (hypothesis) generates blueprints of HITL questions,
scripted agents, builtins, loops (conversational or not) and conditionals, with step names that include the
path separator (``chat/1/ask``), and checks that a run paused at every question and resumed each time gives
the same output, the same recorded steps and the same conversation history as one uninterrupted run.

Every attempt loads the blueprint again (fresh agents, as a new process would) and shares one store.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from blueprints import load_pipeline
from core import Engine, HumanQuestion, Redactor, Settings
from core.store import MemoryStore

# Names a generated step may take: plain ones, and ones holding the path separator (or the escape) that
# spell the path of another step (``chat/1/ask`` is the ``ask`` step of the ``chat`` loop's first iteration).
NAMES = ("ask", "chat", "reply", "chat/1/ask", "chat/1", "chat/2/ask", "ask/1", "a%2Fb", "a/b", "1")
MAX_QUESTIONS = 12


class OneAnswer:
    """Answers at most ``count`` questions (each with a text derived from where it was asked), then pauses."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.asked = 0

    async def ask(self, question: HumanQuestion) -> str | None:
        if self.asked >= self.count:
            return None
        self.asked += 1
        return f"answer@{question.path}"


@st.composite
def blueprints(draw: st.DrawFn) -> dict[str, Any]:
    """A blueprint (as data) whose step names are unique across the whole file. A step's name may spell the
    path of a step generated before it in the same list (``chat/1/ask`` after a loop ``chat`` whose body
    has ``ask``): the names most likely to break a journal keyed by paths."""
    used: set[str] = set()

    def name(spelled: list[str]) -> str:
        pool = list(NAMES) + spelled * 3
        base = draw(st.sampled_from(pool))
        unique, n = base, 2
        while unique in used:
            unique, n = f"{base}{n}", n + 1
        used.add(unique)
        return unique

    def leaf(spelled: list[str]) -> dict[str, Any]:
        kind = draw(st.sampled_from(["hitl", "hitl", "scripted", "stringify"]))
        if kind == "hitl":
            return {"kind": "hitl", "name": name(spelled), "message": "question?"}
        if kind == "scripted":
            return {"kind": "step", "name": name(spelled), "uses": "agents.talker"}
        return {
            "kind": "step",
            "name": name(spelled),
            "agent": {"id": "flujo.builtins.stringify"},
            "input": "seen {{ previous_step }}",
        }

    def steps(depth: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        spelled: list[str] = []  # paths, relative to this list, of the steps generated in it so far
        for _ in range(draw(st.integers(1, 3))):
            shape = draw(st.sampled_from(["leaf", "leaf", "loop", "conditional"] if depth < 2 else ["leaf"]))
            if shape == "leaf":
                out.append(leaf(spelled))
            elif shape == "loop":
                loop: dict[str, Any] = {"max_loops": draw(st.integers(1, 2)), "body": steps(depth + 1)}
                if draw(st.booleans()):
                    loop["conversation"] = True
                out.append({"kind": "loop", "name": name(spelled), "loop": loop})
                keys = [str(i) for i in range(1, loop["max_loops"] + 1)]
                spelled += [f"{out[-1]['name']}/{k}/{child['name']}" for k in keys for child in loop["body"]]
            else:
                keys = draw(st.lists(st.sampled_from(["yes", "no", "a/b", "1"]), min_size=1, max_size=2, unique=True))
                branches = {key: steps(depth + 1) for key in keys}
                out.append(
                    {
                        "kind": "conditional",
                        "name": name(spelled),
                        "condition_expression": "'yes' if previous_step else 'no'",
                        "branches": branches,
                        "default_branch": steps(depth + 1),
                    }
                )
                spelled += [f"{out[-1]['name']}/{k}/{child['name']}" for k, body in branches.items() for child in body]
        return out

    body = steps(0)
    # The last step shows the whole context: comparing outputs compares contexts (history included).
    body.append(
        {
            "kind": "step",
            "name": "snapshot_of_context",
            "agent": {"id": "flujo.builtins.stringify"},
            "input": "{{ context }}",
        }
    )
    return {
        "version": "0.1",
        "name": "generated",
        "agents": {"talker": {"model": "scripted", "replies": ["first", {"action": "go", "n": 2}, "third"]}},
        "steps": body,
    }


def _run(document: dict[str, Any], *, pause_every_question: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "generated.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        return asyncio.run(_attempts(path, pause_every_question=pause_every_question))


SETTINGS = Settings()


async def _attempts(path: Path, *, pause_every_question: bool) -> dict[str, Any]:
    store = MemoryStore()

    def engine(answers: int) -> Engine:
        return Engine(store=store, human=OneAnswer(answers), redactor=Redactor())

    if not pause_every_question:
        outcome = await engine(MAX_QUESTIONS * 10).run(load_pipeline(path, SETTINGS), "start")
        attempts = 1
    else:
        outcome = await engine(0).run(load_pipeline(path, SETTINGS), "start")
        attempts = 1
        while outcome.status == "paused":
            assert attempts < 200, "the run kept pausing"
            outcome = await engine(1).resume(load_pipeline(path, SETTINGS), outcome.run_id)
            attempts += 1
    assert outcome.status == "completed", (outcome.status, outcome.detail, outcome.error)
    steps = sorted((s.path, s.kind, s.status, repr(s.output)) for s in await store.steps(outcome.run_id))
    return {"output": outcome.output, "steps": steps, "attempts": attempts}


ISSUE_BLUEPRINT: dict[str, Any] = {
    "version": "0.1",
    "agents": {"top": {"model": "scripted", "replies": ["TOP-LEVEL"]}},
    "steps": [
        {"kind": "step", "name": "chat/1/ask", "uses": "agents.top"},
        {
            "kind": "loop",
            "name": "chat",
            "loop": {"max_loops": 1, "body": [{"kind": "hitl", "name": "ask", "message": "?"}]},
        },
        {
            "kind": "step",
            "name": "show",
            "agent": {"id": "flujo.builtins.stringify"},
            "input": "top={{ steps['chat/1/ask'].output }} ask={{ steps.ask.output }}",
        },
    ],
}


def test_a_step_named_like_another_steps_path_keeps_its_own_result_on_resume() -> None:
    whole = _run(ISSUE_BLUEPRINT, pause_every_question=False)
    resumed = _run(ISSUE_BLUEPRINT, pause_every_question=True)
    assert whole["output"] == "top=TOP-LEVEL ask=answer@chat/1/ask"
    assert resumed == {**whole, "attempts": 2}
    paths = [path for path, *_ in whole["steps"]]
    assert len(paths) == len(set(paths)) == 4  # chat%2F1%2Fask, chat, chat/1/ask, show: one record each


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blueprints())
@example(ISSUE_BLUEPRINT)
def test_pausing_at_every_question_then_resuming_matches_an_uninterrupted_run(document: dict[str, Any]) -> None:
    whole = _run(document, pause_every_question=False)
    resumed = _run(document, pause_every_question=True)
    assert resumed["output"] == whole["output"]
    assert resumed["steps"] == whole["steps"]
    questions = sum(1 for _, kind, *_ in whole["steps"] if kind == "hitl")
    assert resumed["attempts"] == questions + 1  # it paused at every question, once
