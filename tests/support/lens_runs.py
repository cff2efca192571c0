"""Runs written straight into a run store for the lens tests, with fixed ids and a fixed clock, so what lens
shows of them is the same on every machine (tests/data/lens/*.txt hold it).

``record_demo`` writes one run that has a bit of everything lens must show: a question, a conversational
loop (history injected, an older turn dropped, a summary, a repaired reply, a long system prompt), a
parallel with a failed branch, a conditional, a sub-workflow's child run and, at the end, a failed step.
``record_others`` adds a paused run, a run paused inside its child run, and a run in a thread. The
``secret`` argument is put into prompts, inputs, outputs, answers, errors and keys (for the redaction
tests); the engine would have masked the events, but a store may come from elsewhere.
"""

from __future__ import annotations

from typing import Any

from core import RunRecord, RunStore, RunUpdate, StepRecord, TraceEvent, Usage

T0 = 1_790_000_000.0  # 2026-09-21 14:13:20 UTC
DEMO = "a1b2c3d4e5f60718"
CHILD = "c0ffee0123456789"
PAUSED = "b00c1ng000000001"
PAUSED_PARENT = "d0c5000000000002"
PAUSED_CHILD = "d0c5000000000003"
THREADED = "7a1e000000000004"

SYSTEM_PROMPT = "\n".join(
    [
        "You help a person sharpen a goal.",
        "Ask one short clarifying question at a time.",
        'Reply with JSON only: {"action": "ask", "question": "..."} to ask,',
        'or {"action": "finish", "summary": "..."} once the goal is clear.',
        "Never ask two questions at once.",
        "Keep each question under twenty words.",
    ]
)
Event = tuple[str, str, dict[str, Any]]  # kind, path, payload: stamped with the clock when recorded
GPT = Usage(input_tokens=120, output_tokens=12, requests=1, cost_usd=0.000025)


class Clock:
    """Times from ``T0`` on, advancing by ``step`` seconds at each reading."""

    def __init__(self, start: float = T0, step: float = 0.004) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def record_demo(store: RunStore, *, secret: str = "", clock: Clock | None = None) -> None:
    """The demo run ``DEMO`` (failed at its last step) and its child run ``CHILD``."""
    tick = clock or Clock()
    s = f" {secret}" if secret else ""
    await store.create_run(
        RunRecord(DEMO, "plan_trip", "running", source="/work/trip.yaml", input=f"Plan a trip{s}", created_at=T0)
    )

    async def step(path: str, kind: str, *, input: Any, output: Any, events: list[Event], **more: Any) -> None:
        started = tick()
        traced = [TraceEvent(kind, where, payload, tick()) for kind, where, payload in events]
        fields: dict[str, Any] = {"status": "completed", "usage": Usage(), "duration_s": 0.0} | more
        fields["duration_s"] = fields["duration_s"] or round(tick() - started, 3)
        name = path.rpartition("/")[2]
        name = "chat.summarize" if name == "summarize" else name
        record = StepRecord(DEMO, path, name, kind, input=input, output=output, started_at=started, **fields)
        await store.record_step(record, traced)

    def ev(kind: str, path: str, **payload: Any) -> Event:
        return (kind, path, payload)

    await step(
        "get_goal", "hitl",
        input="What do you want to achieve?", output=f"A week in Lisbon{s}",
        events=[ev("hitl.answer", "get_goal", message="What do you want to achieve?", answer=f"A week in Lisbon{s}")],
    )  # fmt: skip
    loop_started = tick()
    first_prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": f"A week in Lisbon{s}"}]
    await step(
        "chat/1/clarify", "step", input=f"A week in Lisbon{s}", output={"action": "ask", "question": "Who is going?"},
        usage=GPT,
        events=[
            ev("agent.prompt", "chat/1/clarify", agent="openai:gpt-4o-mini", messages=first_prompt,
               history_injected=False, history={"conversation": "chat", "turns": 0, "dropped": 0}),
            ev("agent.reply", "chat/1/clarify", output={"action": "ask", "question": "Who is going?"},
               model="gpt-4o-mini", attempts=1, usage=GPT.to_dict()),
        ],
    )  # fmt: skip
    await step(
        "chat/1/answer", "hitl", input="Who is going?", output=f"Two adults and a child{s}",
        events=[ev("hitl.answer", "chat/1/answer", message="Who is going?", answer=f"Two adults and a child{s}")],
    )  # fmt: skip
    await step(
        "chat/2/clarify/summarize", "summarize", input={"cut": 2}, output="They plan a week in Lisbon.",
        usage=Usage(input_tokens=60, output_tokens=8, requests=1, cost_usd=0.00001),
        events=[
            ev("agent.prompt", "chat/2/clarify/summarize", agent="openai:gpt-4o-mini", purpose="summarize",
               history_injected=False, messages=[{"role": "user", "content": "Summarize the conversation below."}]),
            ev("agent.reply", "chat/2/clarify/summarize", output="They plan a week in Lisbon.", model="gpt-4o-mini"),
            ev("history.summarized", "chat/2/clarify/summarize", turns_replaced=2, turns_kept=1),
        ],
    )  # fmt: skip
    turns = [
        {"role": "assistant", "content": "Summary of the earlier conversation: They plan a week in Lisbon."},
        {"role": "assistant", "content": "Who is going?"},
        {"role": "user", "content": f"Two adults and a child{s}"},
        {"role": "assistant", "content": "Which month?"},
        {"role": "user", "content": "June"},
        {"role": "assistant", "content": "Any budget?"},
        {"role": "user", "content": f"About 3000 euros{s}"},
    ]
    await step(
        "chat/2/clarify", "step", input="About 3000 euros", output={"action": "finish", "summary": "Lisbon, June."},
        usage=GPT + GPT,
        events=[
            ev("agent.prompt", "chat/2/clarify", agent="openai:gpt-4o-mini",
               messages=[{"role": "system", "content": SYSTEM_PROMPT}, *turns], history_injected=True,
               history={"conversation": "chat", "turns": 6, "dropped": 1, "mode": "messages"}),
            ev("agent.repair", "chat/2/clarify", first_reply="Lisbon in June!", error="not valid JSON",
               request="Reply with JSON only.", second_reply='{"action": "finish"}'),
            ev("agent.reply", "chat/2/clarify", output={"action": "finish", "summary": "Lisbon, June."},
               model="gpt-4o-mini", attempts=2, usage=(GPT + GPT).to_dict()),
        ],
    )  # fmt: skip
    await store.record_step(
        StepRecord(DEMO, "chat", "chat", "loop", "completed", input=f"A week in Lisbon{s}",
                   output="User: A week in Lisbon\nAssistant: Who is going?\nUser: Two adults and a child",
                   started_at=loop_started, duration_s=round(tick() - loop_started, 3)),
        [TraceEvent("loop.exit", "chat", {"reason": "condition", "iterations": 2,
                                          "condition": "stop_when: agent_finished"}, tick())],
    )  # fmt: skip
    parallel_started = tick()
    await step(
        "reviews/style/critic", "step", input="Lisbon, June.", output="Clear and short.",
        events=[ev("agent.prompt", "reviews/style/critic", agent="scripted", history_injected=False,
                   messages=[{"role": "user", "content": "Review: Lisbon, June."}]),
                ev("agent.reply", "reviews/style/critic", output="Clear and short.", model="scripted", attempts=1)],
    )  # fmt: skip
    await step(
        "reviews/facts/check", "step", input="Lisbon, June.", output=None, status="failed",
        error=f"provider refused the request: 401 invalid api key{s}",
        events=[ev("step.error", "reviews/facts/check", error=f"provider refused the request{s}",
                   hint="check OPENAI_API_KEY")],
    )  # fmt: skip
    await store.record_step(
        StepRecord(DEMO, "reviews", "reviews", "parallel", "completed", input="Lisbon, June.",
                   output={"style": "Clear and short."}, started_at=parallel_started,
                   duration_s=round(tick() - parallel_started, 3)),
        [TraceEvent("parallel.done", "reviews",
                    {"branches": ["style", "facts"], "failed": {"facts": "refused"}}, tick())],
    )  # fmt: skip
    publish_started = tick()
    await store.create_run(
        RunRecord(CHILD, "review", "running", input="Lisbon, June.", created_at=tick(), parent_run_id=DEMO)
    )
    child_steps = [
        StepRecord(CHILD, "critique", "critique", "step", "completed", input="Lisbon, June.",
                   output=f"Fine{s}", started_at=tick(), duration_s=0.002),
        StepRecord(CHILD, "approve", "approve", "hitl", "completed", input="Publish?", output=True,
                   started_at=tick(), duration_s=0.001),
    ]  # fmt: skip
    await store.record_step(
        child_steps[0],
        [TraceEvent("agent.prompt", "critique", {"agent": "scripted", "history_injected": False,
                                                 "messages": [{"role": "user", "content": f"Critique{s}"}]}, tick()),
         TraceEvent("agent.reply", "critique", {"output": f"Fine{s}", "model": "scripted", "attempts": 1}, tick())],
    )  # fmt: skip
    await store.record_step(
        child_steps[1], [TraceEvent("hitl.answer", "approve", {"message": "Publish?", "answer": True}, tick())]
    )
    await store.update_run(CHILD, RunUpdate(status="completed", output=f"approved{s}", finished_at=tick()))
    await store.record_step(
        StepRecord(DEMO, "publish", "publish", "workflow", "completed", input="Lisbon, June.", output="approved",
                   started_at=publish_started, duration_s=round(tick() - publish_started, 3)),
        [TraceEvent("workflow.child", "publish", {"child_run_id": CHILD, "pipeline": "review"}, publish_started)],
    )  # fmt: skip
    route_started = tick()
    await step("route/ship/notify", "step", input="approved", output="sent", events=[])
    await store.record_step(
        StepRecord(DEMO, "route", "route", "conditional", "completed", input="approved", output="sent",
                   started_at=route_started, duration_s=round(tick() - route_started, 3)),
        [TraceEvent("conditional.branch", "route",
                    {"branch": "ship", "condition": "previous_step == 'approved'"}, tick())],
    )  # fmt: skip
    await step(
        "report", "step", input={"summary": "Lisbon, June.", f"note{s}": "x"}, output=None, status="failed",
        error=f"template failed: 'steps.final' is undefined{s}",
        events=[ev("step.error", "report", error="template failed: 'steps.final' is undefined",
                   hint="check the step names in the template")],
    )  # fmt: skip
    await store.update_run(
        DEMO,
        RunUpdate(
            status="failed",
            error=f"template failed: 'steps.final' is undefined{s}",
            usage=GPT + GPT + GPT + Usage(input_tokens=60, output_tokens=8, requests=1, cost_usd=0.00001),
            finished_at=tick(),
        ),
    )


async def record_others(store: RunStore) -> None:
    """A run paused at its first question, a run paused inside its child run, and a completed run in
    thread ``trip``."""
    await store.create_run(RunRecord(PAUSED, "booking", "running", created_at=T0 + 60))
    await store.update_run(
        PAUSED, RunUpdate(status="paused", pause_path="guests", pause_message="How many guests (1-8)?")
    )
    await store.create_run(RunRecord(PAUSED_PARENT, "write_and_review", "running", input="tea", created_at=T0 + 120))
    await store.record_step(
        StepRecord(PAUSED_PARENT, "draft", "draft", "step", "completed", input="tea", output="Tea is old.",
                   started_at=T0 + 120.01, duration_s=0.003),
        [],
    )  # fmt: skip
    await store.create_run(
        RunRecord(PAUSED_CHILD, "review", "running", input="Tea is old.", created_at=T0 + 120.02,
                  parent_run_id=PAUSED_PARENT)
    )  # fmt: skip
    await store.update_run(
        PAUSED_CHILD, RunUpdate(status="paused", pause_path="approve", pause_message="Publish anyway?")
    )
    await store.update_run(
        PAUSED_PARENT, RunUpdate(status="paused", pause_path="publish/approve", pause_message="Publish anyway?")
    )
    await store.create_run(
        RunRecord(THREADED, "travel_notes", "running", input="June", created_at=T0 + 180, thread="trip")
    )
    await store.record_step(
        StepRecord(THREADED, "chat/1/note", "note", "step", "completed", input="June", output="Noted.",
                   started_at=T0 + 180.01, duration_s=0.002, usage=Usage(requests=1)),
        [TraceEvent("agent.prompt", "chat/1/note", {
            "agent": "scripted", "history_injected": True,
            "history": {"conversation": "chat", "turns": 2, "dropped": 0, "mode": "messages", "from_thread": "trip"},
            "messages": [{"role": "user", "content": "Lisbon"}, {"role": "assistant", "content": "Noted."},
                         {"role": "user", "content": "June"}]}, T0 + 180.012)],
    )  # fmt: skip
    await store.update_run(THREADED, RunUpdate(status="completed", output="Noted.", finished_at=T0 + 180.5))
