"""An agent step whose model may use tools: ask the model, run the calls it asks for, send the results back,
until it answers (or asks for more than ``max_tool_calls`` calls).

Durable like every leaf: each model turn of the loop is a child record ``P/model/K`` (its reply: text and the
calls asked for) and each tool call a child record ``P/tool/N`` (N from 1 in each step; its result as it was),
committed as it ends. A resumed run replays them in order and so sends the model exactly what it was sent
before; only the turn or call in flight when the process stopped is made again. An approval (``approve:
ask``) is an ordinary question at ``P/tool/N/approve``, committed as a ``hitl`` record.

Kept out of the conversation: the loop's messages live here only. The step's output (and its assistant turn)
is the model's final answer; the tool calls and results are the children's records and ``tool.call`` events.
The step's own record holds the usage of every turn (the turns' records hold none, so that nothing counts
twice); a turn's usage is in its record's output, for a resumed run to count it.

The tools an MCP server lists (a ``ToolSource``) are asked for when the step starts, and what the server listed
is kept in the record of the step's first model turn (``listed``): a resumed step is told the same tools. A
``workflow:`` tool runs as a sub-workflow child run at its ``P/tool/N`` path (``core.policies.tool_workflow``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.model.calls import YES_WORDS, AgentCall, ChatMessage
from core.model.errors import ControlSignal, FlujoError, PromptTooLarge, StepFailed
from core.model.events import PromptSent, ReplyReceived, ToolCalled
from core.model.records import MODEL_TURN_KIND, TOOL_CALL_KIND, StepRecord, TraceEvent
from core.model.tools import ModelTurn, ToolCall, ToolCallContext, ToolDef, ToolMode, ToolOutcome, result_text
from core.model.usage import ZERO_USAGE, Usage
from core.policies.body import BodyRunner
from core.policies.frame import Frame, Reservation
from core.policies.person import PersonQuestion, ask_person
from core.ports import Agent, Tool, ToolTurns
from core.steps.kinds import AgentStep, ToolUse
from core.text.schema_check import schema_errors
from core.text.tokens import count_messages, count_tokens
from core.tools.offered import offered_tools
from core.tools.workflow_tool import WorkflowTool

MODEL_KIND = MODEL_TURN_KIND
TOOL_KIND = TOOL_CALL_KIND
APPROVAL_KIND = "hitl"
_SHORTENED = "[shortened to fit the context window: {kept} of {total} characters]"
_CUT = "\n[cut: the tool's result was {total} characters; the first {kept} are above]"


@dataclass
class LoopSpend:
    """What the loop has spent so far (every model turn, replayed or made): the step's usage, read by the
    agent step's policy when the loop fails as well as when it ends."""

    # The step's ``agent.prompt`` event without its messages (what history went with them): each turn's
    # prompt event is this one with the messages that turn sent.
    prompt: PromptSent
    usage: Usage = ZERO_USAGE
    turns: int = 0
    calls: int = 0
    # What each tool source (an MCP server) listed, kept with the step's first model turn.
    listed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def turns_taken(path: str, frame: Frame) -> int:
    """How many model turns the finished tool loop of the step at ``path`` took, from the journal (each is
    recorded at ``path/model/K``): a stateful agent (``model: scripted``) replaying the step advances past
    each of them, not past one reply."""
    turns = 0
    while frame.replayed(f"{path}/{MODEL_KIND}/{turns + 1}") is not None:
        turns += 1
    return max(turns, 1)


def tool_agent(step: AgentStep, agent: Agent) -> ToolTurns:
    """``agent`` as one that takes tool turns (the blueprint checker refuses tools on any other agent)."""
    if not isinstance(agent, ToolTurns):
        raise StepFailed(
            f"step {step.name!r}: agent {agent.label} cannot use tools",
            step=step.name,
            hint="give tools to a model agent",
        )
    return agent


async def run_tool_loop(
    step: AgentStep,
    agent: Agent,
    call: AgentCall,
    path: str,
    frame: Frame,
    spend: LoopSpend,
    body: BodyRunner | None = None,
) -> Any:
    """The model's final answer, once it gives one; ``spend`` holds what it cost (also when this raises).
    ``body`` runs a ``workflow:`` tool's steps (the dispatcher's ``run_steps``)."""
    use = step.tools
    assert use is not None
    turns = tool_agent(step, agent)
    mode: ToolMode = use.mode or turns.tool_mode
    first = frame.replayed(f"{path}/{MODEL_KIND}/1")
    recorded = first.output.get("listed") if first is not None and isinstance(first.output, Mapping) else None
    offered = await offered_tools(
        use.tools,
        frame.sessions(),
        frame.run_id,
        recorded if isinstance(recorded, Mapping) else None,
        who=use.agent or agent.label,
    )
    definitions, tools, spend.listed = offered.definitions, offered.tools, offered.listed
    # The tools offered are sent with every turn's messages: recorded with them (a replay compares both).
    spend.prompt = replace(spend.prompt, tools=tuple(tool.to_dict() for tool in definitions))
    said: list[ChatMessage] = []  # this step's assistant messages and tool results, in order
    while True:
        spend.turns += 1
        turn = await _model_turn(step, agent, turns, call, said, definitions, mode, path, frame, spend)
        if not turn.tool_calls:
            return turn.answer
        said.append(ChatMessage("assistant", turn.text, tool_calls=turn.tool_calls))
        for asked in turn.tool_calls:
            spend.calls += 1
            if spend.calls > use.max_tool_calls:
                who = use.agent or agent.label
                raise StepFailed(
                    f"agent {who!r} asked for more than its max_tool_calls ({use.max_tool_calls}) tool calls in "
                    f"step {step.name!r}",
                    step=step.name,
                    hint=f"raise agents.{who}.max_tool_calls, or tell the model in its system prompt when to answer",
                )
            tpath = f"{path}/tool/{spend.calls}"
            outcome = await _tool_call(step, use, tools, definitions, asked, tpath, frame, body)
            said.append(ChatMessage("tool", outcome.content, tool_call_id=asked.id, name=asked.name))


async def _model_turn(
    step: AgentStep,
    agent: Agent,
    turns: ToolTurns,
    call: AgentCall,
    said: list[ChatMessage],
    tools: Sequence[ToolDef],
    mode: ToolMode,
    path: str,
    frame: Frame,
    spend: LoopSpend,
) -> ModelTurn:
    tpath = f"{path}/{MODEL_KIND}/{spend.turns}"
    replay = frame.replayed(tpath)
    if replay is not None:
        frame.replays += 1
        agent.replayed()
        turn = _turn_of(replay)
        frame.add_usage(turn.usage)
        spend.usage = spend.usage + turn.usage
        return turn
    started = time.time()
    sent = fit_window(step, agent, turns, call, said, tools, mode)
    events = [frame.event(tpath, spend.prompt, sent)]
    held: Reservation | None = None
    served = frame.served_reply(events[0])
    if served is not None:  # a replay: the recorded turn (text and calls asked for), no model called
        agent.replayed()
        output = served.output if isinstance(served.output, Mapping) else {}
        turn = ModelTurn.from_dict(output, ZERO_USAGE)
        events.append(frame.served_event(tpath, served, turn.to_dict()))
        if turn.text and turn.tool_calls and call.on_text is not None:  # shown as a model streams it (the
            call.on_text(turn.text)  # answer, a turn without calls, is shown as the step's reply)
    else:
        held = await frame.begin_call(tpath, step.name, agent, sent, started=started)
        try:
            turn = await turns.tool_turn(call, sent, tools, mode)
        except ControlSignal:
            frame.abandon(held)
            raise
        except FlujoError:
            frame.release(held)
            raise
        except BaseException:
            frame.abandon(held)
            raise
        usage = turn.usage.to_dict()
        events.append(frame.event(tpath, ReplyReceived(turn.to_dict(), turn.model, turn.attempts, usage)))
    record = {**turn.to_dict(), "usage": turn.usage.to_dict()}
    if spend.turns == 1 and spend.listed:
        record["listed"] = spend.listed
    await frame.commit(
        path=tpath, name=step.name, kind=MODEL_KIND, status="completed", started=started, output=record, events=events
    )
    frame.charge(turn.usage, releasing=held)
    spend.usage = spend.usage + turn.usage
    return turn


def _turn_of(record: StepRecord) -> ModelTurn:
    output = record.output if isinstance(record.output, Mapping) else {}
    usage = output.get("usage")
    return ModelTurn.from_dict(output, Usage.from_dict(usage) if isinstance(usage, Mapping) else ZERO_USAGE)


def fit_window(
    step: AgentStep,
    agent: Agent,
    turns: ToolTurns,
    call: AgentCall,
    said: Sequence[ChatMessage],
    tools: Sequence[ToolDef],
    mode: ToolMode,
) -> list[ChatMessage]:
    """The messages of the next turn, within the agent's prompt budget: the conversation's history is cut
    first (oldest first), then the oldest tool results of this step are shortened (each keeps its place, so
    a call and its result are never parted); PromptTooLarge when even that does not fit."""
    history = list(call.history)
    tail = list(said)
    sent = turns.tool_messages([*agent.prompt(replace(call, history=history)), *tail], tools, mode)
    budget = agent.prompt_budget
    if budget is None:
        return sent
    # The tools' definitions go with every turn: natively beside the messages; in json mode the system prompt
    # (in ``sent``) describes them and the response format repeats their schemas. Either way they take room.
    budget -= count_tokens(_json([tool.to_dict() for tool in tools]), agent.model_name) if tools else 0
    needed = _tokens(sent, agent)
    while needed > budget and history:
        history = history[1:]
        sent = turns.tool_messages([*agent.prompt(replace(call, history=history)), *tail], tools, mode)
        needed = _tokens(sent, agent)
    for index, message in enumerate(tail):
        if needed <= budget:
            break
        if message.role != "tool" or len(message.content) <= 200:
            continue
        kept = 100
        note = _SHORTENED.format(kept=kept, total=len(message.content))
        tail[index] = replace(message, content=f"{message.content[:kept]}\n{note}")
        sent = turns.tool_messages([*agent.prompt(replace(call, history=history)), *tail], tools, mode)
        needed = _tokens(sent, agent)
    if needed > budget:
        raise PromptTooLarge(
            f"step {step.name!r}: the next call of its tool loop needs {needed:,} tokens, but {agent.label} has "
            f"room for {budget:,}, even with the history cut and the tool results shortened",
            step=step.name,
            needed=needed,
            budget=budget,
            hint="lower max_tool_calls, make the tools return less, or set a larger context_window",
        )
    return sent


def _tokens(messages: Sequence[ChatMessage], agent: Agent) -> int:
    model = agent.model_name
    total = count_messages(messages, model)
    for message in messages:
        for asked in message.tool_calls:
            total += count_tokens(asked.name, model) + count_tokens(_json(asked.arguments), model)
    return total


async def _tool_call(
    step: AgentStep,
    use: ToolUse,
    tools: Mapping[str, Tool],
    definitions: Sequence[ToolDef],
    asked: ToolCall,
    path: str,
    frame: Frame,
    body: BodyRunner | None,
) -> ToolOutcome:
    replay = frame.replayed(path)
    if replay is not None:
        frame.replays += 1
        return _outcome_of(replay, use)
    started = time.time()
    frame.reporter.step_started(path, asked.name, TOOL_KIND)
    events: list[TraceEvent] = []
    # Whether the call may run is settled first, as when it was recorded: a call the tool's schema refuses
    # is not run, and the approval question (``approve: ask``) is asked before the call, in a replay too (its
    # recorded answer is served, so a recorded "no" refuses the call again and the journal keeps the answer).
    outcome, approval = await _refusal(step, use, tools, definitions, asked, path, frame)
    if not approval and frame.replay is not None:  # the recorded call was approved: the tool no longer asks
        frame.replay.not_asked(f"{path}/approve")
    served = (
        frame.replay.tool_outcome(path, asked.name, frame.redactor.value(asked.arguments))
        if frame.replay is not None
        else None
    )
    if outcome is None and served is not None:  # a replay: the recorded outcome; the tool does not run
        outcome = _served_outcome(served.output, use)
    elif outcome is None:
        outcome = cut(await _outcome(use, tools, asked, path, frame, body), use.result_chars)
    else:
        outcome = cut(outcome, use.result_chars)
    called = ToolCalled(asked.name, asked.arguments, outcome.content, outcome.error, outcome.declined or None)
    if served is not None and frame.replay is not None:
        called = replace(called, replayed_from=frame.replay.recording.run_id)
    events.append(frame.event(path, called))
    await frame.commit(
        path=path,
        name=asked.name,
        kind=TOOL_KIND,
        status="completed",
        started=started,
        input={"id": asked.id, "arguments": asked.arguments},
        output=outcome.to_dict(),
        events=events,
    )
    return outcome


def _served_outcome(output: Any, use: ToolUse) -> ToolOutcome:
    if isinstance(output, Mapping):
        return ToolOutcome.from_dict(output)
    return cut(ToolOutcome(result_text(output), output), use.result_chars)


def _outcome_of(record: StepRecord, use: ToolUse) -> ToolOutcome:
    output = record.output
    if record.kind == TOOL_KIND and isinstance(output, Mapping):
        return ToolOutcome.from_dict(output)
    return cut(ToolOutcome(result_text(output), output), use.result_chars)  # a workflow tool's child run


async def _refusal(
    step: AgentStep,
    use: ToolUse,
    tools: Mapping[str, Tool],
    definitions: Sequence[ToolDef],
    asked: ToolCall,
    path: str,
    frame: Frame,
) -> tuple[ToolOutcome | None, bool]:
    """Why the call ``asked`` is not run (its outcome: an error the model is told, or the person's refusal),
    or None when it may run: the tool exists, its arguments fit its schema and, for a tool with ``approve:
    ask``, the person allowed it; and whether the person was asked."""
    tool = tools.get(asked.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return ToolOutcome(f"Error: there is no tool named {asked.name!r}; the tools are: {known}.", error=True), False
    if asked.arguments_error is not None:
        return ToolOutcome(f"Error: the arguments are not valid JSON: {asked.arguments_error}", error=True), False
    arguments = {} if asked.arguments is None else asked.arguments
    if not isinstance(arguments, dict):
        return ToolOutcome("Error: the arguments must be a JSON object.", error=True), False
    schema = next(d.input_schema for d in definitions if d.name == asked.name)
    problem = schema_errors(arguments, schema) if schema else None
    if problem is not None:
        return ToolOutcome(f"Error: the arguments do not match the tool's schema: {problem}", error=True), False
    if tool.approve != "ask":
        return None, False
    if not await _approved(step, use, asked, path, frame):
        declined = f"The person declined this call of {asked.name}; it was not run."
        return ToolOutcome(declined, error=True, declined=True), True
    return None, True


async def _outcome(
    use: ToolUse,
    tools: Mapping[str, Tool],
    asked: ToolCall,
    path: str,
    frame: Frame,
    body: BodyRunner | None,
) -> ToolOutcome:
    """Run the call ``asked`` (``_refusal`` allowed it)."""
    tool = tools[asked.name]
    arguments = {} if asked.arguments is None else asked.arguments
    assert isinstance(arguments, dict)
    if isinstance(tool, WorkflowTool) and body is not None:  # a child run, with its own journal
        from core.policies.tool_workflow import call_workflow_tool

        return await call_workflow_tool(tool, arguments, path, frame, body)
    attempt = await frame.begin_attempt(path, f"tool:{asked.name}")
    where = ToolCallContext(
        run_id=frame.run_id,
        path=path,
        attempt=attempt,
        on_progress=frame.reporter.note,
        process_started=lambda pid: frame.process_started(path, f"tool:{asked.name}", pid),
    )
    return await tool.call(arguments, where, frame.sessions())


async def _approved(step: AgentStep, use: ToolUse, asked: ToolCall, path: str, frame: Frame) -> bool:
    """Ask the person whether the call may run: an ordinary question (``approve:TOOL`` for ``--answers``),
    journaled at ``P/tool/N/approve``."""
    qpath = f"{path}/approve"
    name = f"approve:{asked.name}"
    replay = frame.replayed(qpath)
    if replay is not None:
        frame.replays += 1
        return allows(replay.output)
    who = use.agent or step.name
    message = f"Allow {who} to call {asked.name}({_json(asked.arguments)})? [y/N]"
    started = time.time()
    frame.reporter.step_started(qpath, name, APPROVAL_KIND)  # as any question: a spinner stops before it is asked
    answer = await ask_person(PersonQuestion(name, qpath, message, started=started, yes_no=True), frame)
    events = answer.trace(frame, qpath, message)
    await frame.commit(
        path=qpath,
        name=name,
        kind=APPROVAL_KIND,
        status="completed",
        started=started,
        input=message,
        output=answer.value,
        usage=answer.usage,
        events=events,
    )
    return allows(answer.value)


def allows(answer: Any) -> bool:
    """Whether an answer to an approval question allows the call: yes, y, allow, ok (any case), or true."""
    if isinstance(answer, bool):
        return answer
    return isinstance(answer, str) and answer.strip().lower().rstrip(".!") in YES_WORDS


def cut(outcome: ToolOutcome, limit: int) -> ToolOutcome:
    """``outcome`` with its content cut to ``limit`` characters, saying so (the value stays whole)."""
    total = len(outcome.content)
    if total <= limit:
        return outcome
    return replace(outcome, content=outcome.content[:limit] + _CUT.format(total=total, kept=limit))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
