"""What bounds the history an agent is sent in a ``conversation: true`` loop: the context window counted on
the prompt as sent, the summarizer's own call, and never an answer without its question."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from blueprints import load_pipeline
from core import ChatMessage, ConversationTurn, load_settings
from core.conversation.history import bound, drop_oldest, turn_cost
from core.text.tokens import count_messages
from tests.core.test_conversation_runs import ANSWERS, EXAMPLE, Q1, Q2, SUMMARIZED, compile_text, prompts, run, sent
from tests.support.fakes.openai_server import FakeLLM


def size(payload: dict[str, Any], model: str | None = None) -> int:
    """The tokens of an ``agent.prompt`` payload's messages, as ``model`` counts them."""
    return count_messages([ChatMessage(m["role"], m["content"]) for m in payload["messages"]], model)


TEMPLATE_WINDOW = """\
version: "0.1"
agents:
  bot: {model: scripted, replies: [q1, q2, q3, q4], context_window: 80}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 4
      history_template: |
        {{#each history}}
        <turn note="a long wrapper written around every turn" role="{{ this.role }}">{{ this.content }}</turn>
        {{/each}}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


async def test_the_context_window_counts_the_rendered_history_block_not_only_the_turns(tmp_path: Path) -> None:
    outcome, store, _ = await run(compile_text(tmp_path, TEMPLATE_WINDOW), "goal", ["a1", "a2", "a3"])
    assert outcome.status == "paused", outcome.error
    calls = await prompts(store, outcome.run_id)
    assert [size(calls[f"chat/{n}/talk"]) <= 80 for n in (1, 2, 3, 4)] == [True] * 4
    # The newest whole unit still fits (the question before the answer that is the message).
    fourth = calls["chat/4/talk"]
    assert fourth["history"]["mode"] == "text" and fourth["history"]["dropped"] > 0
    assert fourth["history"]["turns"] + fourth["history"]["dropped"] == 6 and fourth["history"]["turns"] >= 1
    [(role, text)] = sent(fourth)
    assert role == "user" and text.endswith('role="assistant">q3</turn>\n\na3')


KOREAN = [
    "그 여행은 가족을 위한 것이고 유월에 떠납니다",
    "아이들이 둘 있고 바다를 좋아합니다",
    "예산은 넉넉하지 않습니다",
]
CL100K_WINDOW = """\
version: "0.1"
agents:
  bot: {model: "openai:gpt-4", context_window: 110, model_settings: {max_tokens: 10}}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 4
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


async def test_the_context_window_counts_history_messages_with_the_models_own_tokenizer(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    for question in ("어디로 가나요?", "누구와 가나요?", "언제 가나요?", "좋아요"):
        fake_llm.reply(question)
    path = tmp_path / "flow.yaml"
    path.write_text(CL100K_WINDOW, encoding="utf-8")
    outcome, store, _ = await run(load_pipeline(path, fake_llm.settings()), "가족 여행", KOREAN)
    assert outcome.status == "paused", outcome.error
    calls = await prompts(store, outcome.run_id)
    budget = 110 - 10  # the window minus the reply cap
    assert [size(calls[f"chat/{n}/talk"], "openai:gpt-4") <= budget for n in (1, 2, 3, 4)] == [True] * 4
    assert calls["chat/4/talk"]["history"]["dropped"] > 0


def summarized(summarizer: str, *, limits: str = "", history_tokens: int = 50) -> str:
    text = SUMMARIZED % (summarizer, 8)
    text = text.replace("max_tokens: 50}", f"max_tokens: {history_tokens}, summarize_ratio: 0.9}}")
    return text.replace('version: "0.1"\n', f'version: "0.1"\n{limits}', 1)


async def test_the_summarizer_call_is_reserved_against_the_limits_like_any_call(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.reply("a summary", usage=(400, 100))
    # Its worst case (a reply cap of 100,000 tokens at $0.60 per million) is $0.06: over the $0.01 limit.
    summarizer = '{model: "openai:gpt-4o-mini", model_settings: {max_tokens: 100000}}'
    path = tmp_path / "flow.yaml"
    path.write_text(summarized(summarizer, limits="limits: {max_cost_usd: 0.01}\n"), encoding="utf-8")
    outcome, store, _ = await run(load_pipeline(path, fake_llm.settings()), "my goal", ANSWERS)

    assert outcome.status == "limit_reached"
    assert outcome.detail == (
        "cost limit reached before calling 'chat.summarize': the call may cost up to $0.0600 and $0.0000 of "
        "the $0.0100 allowed are spent"
    )
    assert fake_llm.requests == []  # never sent
    assert not [e for e in await store.events(outcome.run_id) if e.path.endswith("/summarize")]


async def test_the_summarizer_request_fits_the_summarizers_context_window(tmp_path: Path) -> None:
    text = summarized("{model: scripted, replies: [S1, S2, S3, S4], context_window: 60}", history_tokens=60)
    outcome, store, _ = await run(compile_text(tmp_path, text), "my goal", ANSWERS)
    assert outcome.status == "completed", outcome.error
    requests = {p: v for p, v in (await prompts(store, outcome.run_id)).items() if p.endswith("/summarize")}
    records = [r for r in await store.steps(outcome.run_id) if r.kind == "summarize"]
    assert records and len(requests) == len(records)
    for record in records:
        payload = requests[record.path]
        assert payload["purpose"] == "summarize" and size(payload) <= 60
        # The summary replaces exactly the turns it was sent (fewer than summarize_ratio asked for).
        [(_, request)] = sent(payload)
        block = request.split("<conversation_history>\n", 1)[1].removesuffix("\n</conversation_history>")
        assert len(block.splitlines()) == record.input["cut"] == len(record.input["turns"]) >= 2
    unbounded = summarized("{model: scripted, replies: [S1, S2, S3, S4]}", history_tokens=60)
    plain, plain_store, _ = await run(compile_text(tmp_path, unbounded), "my goal", ANSWERS)
    first = next(r for r in await plain_store.steps(plain.run_id) if r.kind == "summarize")
    assert (first.path, records[0].path) == ("chat/6/talk/summarize", "chat/6/talk/summarize")
    assert records[0].input["cut"] < first.input["cut"]  # the ratio alone asked for more than fits


async def test_truncation_never_sends_an_answer_without_the_question_it_answers(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, env={}, overrides={"history": {"max_tokens": 12}})
    outcome, store, _ = await run(load_pipeline(EXAMPLE, settings), None, ["Plan a trip", "My family", "June"])
    assert outcome.status == "completed", outcome.error
    calls = await prompts(store, outcome.run_id)
    # 12 tokens hold no turn of this history; the question the message answers is sent with it anyway.
    third = calls["clarification_loop/3/clarify"]
    assert sent(third)[1:] == [("assistant", Q2), ("user", "June")]
    assert third["history"] == {"conversation": "clarification_loop", "turns": 1, "dropped": 3, "mode": "messages"}
    assert sent(calls["clarification_loop/2/clarify"])[1:] == [("assistant", Q1), ("user", "My family")]


def test_bound_keeps_the_newest_turns_it_is_told_to_keep_and_counts_them() -> None:
    history = [ConversationTurn(role, f"{role[0]}{n}", 5) for n, role in enumerate(["user", "assistant"] * 3)]
    cost = turn_cost(history[0])
    assert [t.content for t in bound(history, max_tokens=cost - 1, keep_last=1)] == ["a5"]
    assert [t.content for t in bound(history, max_turns=0, keep_last=1)] == ["a5"]
    # The kept turn counts towards the bound: one more unit (a3, u4) needs 3 turns' worth.
    assert [t.content for t in bound(history, max_tokens=3 * cost - 1, keep_last=1)] == ["a5"]
    assert [t.content for t in bound(history, max_tokens=3 * cost, keep_last=1)] == ["a3", "u4", "a5"]
    assert [t.content for t in drop_oldest(history[3:], 9, keep_last=1)] == ["a5"]
