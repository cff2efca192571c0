"""Why each message of an agent call is there, and what was left out (``flujo lens trace --why``).

An ``agent.prompt`` event of a call in a conversation carries ``why`` (``PromptSent.why``,
``core.model.provenance``): the origin of its current message, the numbers of the conversation's
turns it sent, the summary's origin, the origins of the turns no earlier event gave (``said``), and notes of
what was left out. ``Provenance`` reads the events of a run in order, so the origin of each turn sent is
known from the event that first gave it; each origin (a short text of ids: ``answer chat/2/answer``) is
read into an object (``{"answer": "chat/2/answer"}``), placed on the message that carries it and said in
words. A message is placed by its position: the messages before the history are the agent's own (its system
prompt, its worked examples), then come the history's turns (as messages, or as one text block in the
current message), the current message, and in a tool loop's later turns the calls the model asked for and
their results. A call recorded before provenance (or outside a conversation) still gets its system prompt
and its input named.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from core import ChildRunStarted, QuestionAnswered, TraceEvent, read_why, step_key, told_turns
from lens.tree import CallNode, EventNode, Node, StepNode

Origin = Mapping[str, Any]


def calls_below(nodes: Sequence[Node]) -> list[CallNode]:
    """Every agent call in ``nodes`` and below them, in the tree's order."""
    found: list[CallNode] = []
    for node in nodes:
        if isinstance(node, CallNode):
            found.append(node)
        else:
            found.extend(calls_below(node.children))
    return found


class Provenance:
    """The origins of the turns of a run's conversations, read in order from its agent calls and from the
    events of the steps that made turns (``nodes``: the run's tree, or the whole of the runs it shows), to
    place on the messages of any of those calls.

    A turn's origin comes from one of two places: a prompt event's ``said`` (the seed, a thread's earlier
    turns), or the event of the step that made it (a reply's ``agent.reply``, an answer's ``hitl.answer``, a
    sub-workflow's ``workflow.child``), which carries its number (``turn``, ``user_turn``). Such an event
    belongs to the innermost conversational loop on its path: the last segment that names a conversation
    of the run's calls and is followed by an iteration number."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self._sent: dict[int, list[Origin]] = {}  # id(call) → the origins of the history turns it sent
        self._message: dict[int, Origin] = {}  # id(call) → its current message's, when that is a turn
        self._why: dict[int, Mapping[str, Any]] = {}  # id(call) → its why, whole (``provenance.read_why``)
        self._known: dict[tuple[str, str], dict[int, str]] = {}  # (run, conversation) → turn number → origin
        self._sources: dict[tuple[str, str], str] = {}  # (run, conversation) → its ai_turn_source
        self._noted: dict[tuple[str, str, str], Any] = {}  # (run, conversation, step) → its last call's notes
        order = list(_in_order(nodes))
        calls = [item for item in order if isinstance(item, CallNode) and isinstance(item.prompt.why, Mapping)]
        self._names = {_conversation(call)[1] for call in calls} - {""}  # the conversations: their loops' names
        for item in order:
            if isinstance(item, CallNode):
                self._read_call(item)
                reply = item.reply
                if reply is not None:
                    self._told(item.run_id, item.path, told_turns(item.path, reply.turn, reply.user_turn, answer=False))
                continue
            run_id, event = item
            data = event.data
            if isinstance(data, QuestionAnswered):
                self._told(run_id, event.path, told_turns(event.path, data.turn, None, answer=True))
            elif isinstance(data, ChildRunStarted):
                self._told(run_id, event.path, told_turns(event.path, data.turn, data.user_turn, answer=False))

    def _read_call(self, call: CallNode) -> None:
        stored = call.prompt.why
        history = call.prompt.history or {}
        conversation = _conversation(call)
        if not isinstance(stored, Mapping):
            # Nothing new to say is stored as no why; a run recorded before why was (its conversation's first
            # call, which says its notes, has none either) gets none.
            if conversation not in self._known:
                return
            stored = {}
        step = (*conversation, step_key(call.path))
        if "left_out" in stored:
            self._noted[step] = stored["left_out"]
        why = self._why[id(call)] = read_why(stored, history, self._noted.get(step, ()))
        turns = self._known.setdefault(conversation, {})
        said = why.get("said")
        if isinstance(said, list):
            number = 0
            for each in said:  # runs of origins, each after the number of its first turn
                if isinstance(each, int):
                    number = each
                elif number:
                    turns[number] = each
                    number += 1
        if isinstance(why.get("source"), str):
            self._sources[conversation] = why["source"]
        source = self._sources.get(conversation, "?")
        sent = [parsed(why["summary"])] if "summary" in why else []
        first, last = _pair(why.get("turns"))
        sent += [parsed(turns.get(number), source) for number in range(first, last + 1)] if first else []
        self._sent[id(call)] = sent
        message = why.get("message")
        if isinstance(message, int):  # the current message is turn N: its origin
            self._message[id(call)] = parsed(turns.get(message), source)

    def _told(self, run_id: str, path: str, told: Mapping[int, str]) -> None:
        """The origins of the turns the step at ``path`` made, as its event numbers them, in the conversation
        its path is in."""
        name = _loop_of(path, self._names) if told else None
        if name is not None:
            self._known.setdefault((run_id, name), {}).update(told)

    def message(self, call: CallNode) -> Origin | None:
        """The origin of ``call``'s current message when that is a turn of the conversation."""
        return self._message.get(id(call))

    def sent(self, call: CallNode) -> list[Origin]:
        """The origins of the history turns ``call`` sent, oldest first."""
        return self._sent.get(id(call), [])

    def why(self, call: CallNode) -> Mapping[str, Any]:
        """``call``'s why, whole (what its event leaves to its ``history`` filled in); empty when not recorded."""
        return self._why.get(id(call), {})


def _in_order(nodes: Sequence[Node], seen: set[int] | None = None) -> Iterator[CallNode | tuple[str, TraceEvent]]:
    """The agent calls below ``nodes`` and the events that number a turn (``_TURN_EVENTS``), in the order they
    happened: a step's calls and children before its own events (a sub-workflow's turn is made when its
    child run ends). An event shown as a node of its own is given there, once."""
    seen = set() if seen is None else seen
    for node in nodes:
        if isinstance(node, CallNode):
            yield node
        elif isinstance(node, EventNode):
            if node.event.kind in _TURN_EVENTS and id(node.event) not in seen:
                seen.add(id(node.event))
                yield node.run_id, node.event
        else:
            yield from _in_order(node.children, seen)
            if isinstance(node, StepNode):
                for event in node.events:
                    if event.kind in _TURN_EVENTS and id(event) not in seen:
                        seen.add(id(event))
                        yield node.run_id, event


_TURN_EVENTS = frozenset({QuestionAnswered.kind, ChildRunStarted.kind})


def _conversation(call: CallNode) -> tuple[str, str]:
    why = call.prompt.why if isinstance(call.prompt.why, Mapping) else {}
    return call.run_id, str((call.prompt.history or {}).get("conversation") or why.get("conversation") or "")


def _loop_of(path: str, names: set[str]) -> str | None:
    """The conversation an event at ``path`` belongs to: the innermost segment naming one of ``names`` that
    an iteration number follows (``chat/3/answer`` → ``chat``)."""
    segments = path.split("/")
    for index in range(len(segments) - 2, -1, -1):
        if segments[index] in names and segments[index + 1].isdigit():
            return segments[index]
    return None


def message_origins(call: CallNode, provenance: Provenance) -> list[Origin]:
    """The origin of each message ``call`` sent, in order (``{"unknown": True}`` where it cannot be told)."""
    prompt = call.prompt
    messages = prompt.messages
    why = provenance.why(call)
    history = provenance.sent(call)
    said = provenance.message(call) or (parsed(why["message"]) if isinstance(why.get("message"), str) else None)
    current = _current_index(messages, call.turn)
    mode = (prompt.history or {}).get("mode")
    in_block = mode == "text" and bool(history)
    first = current if in_block else current - len(history)
    if first < 0:  # messages merged as sent (a provider that alternates roles): say what is sure
        return [_UNKNOWN] * len(messages)
    origins: list[Origin] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if index < first:
            origins.append({"system": prompt.agent} if role == "system" else {"example": prompt.agent})
        elif index < current:
            origins.append(history[index - first])
        elif index == current:
            base = said if isinstance(said, Mapping) else _input(call)
            origins.append({**base, "block": history} if in_block else base)
        else:
            origins.append({"result": call.path} if role != "assistant" else {"calls": call.path})
    return origins


def _input(call: CallNode) -> Origin:
    """The origin of a call's message when no turn is: the summarizer's request, or the step's input."""
    return {"request": call.path} if call.prompt.summarizes else {"input": call.path}


def _current_index(messages: Sequence[Mapping[str, Any]], turn: bool) -> int:
    """Where the current message is: the last one, or in a tool loop's turn the one before the first call the
    model asked for."""
    if turn:
        for index, message in enumerate(messages):
            if message.get("tool_calls") or message.get("tool_call_id"):  # a call asked for, or its result
                return index - 1
    return len(messages) - 1


_UNKNOWN: Origin = {"unknown": True}
_CODES = {
    **{"s": "seed", "a": "answer", "u": "user", "i": "input", "t": "thread", "r": "reply", "m": "summary"},
    **{"p": "turn", "c": "cue"},  # an ensemble's
}


def parsed(origin: Any, source: str = "?") -> Origin:
    """A stored origin (``r chat/1/talk``) as an object (``{"reply": "chat/1/talk", "source": "last"}``, the
    conversation's ai_turn_source being ``source``); ``{"unknown": True}`` when it is not one."""
    if not isinstance(origin, str):
        return _UNKNOWN
    letter, _, rest = origin.partition(" ")
    code = _CODES.get(letter)
    if code is None or not rest:
        return _UNKNOWN
    if code == "reply":
        return {"reply": rest, "source": source}
    if code == "summary":
        first, last, by = [*rest.split(" ", 2), "", ""][:3]
        if not (first.isdigit() and last.isdigit()):
            return _UNKNOWN
        return {"summary": [int(first), int(last)], "by": by}
    return {code: rest}


def origin_words(origin: Origin) -> str:
    """One origin as a person reads it."""
    if "system" in origin:
        return f"the system prompt of agent {origin['system']}"
    if "example" in origin:
        return f"a worked example of agent {origin['example']}"
    words = _said_words(origin)
    block = origin.get("block")
    if isinstance(block, list) and block:
        turns = "; ".join(_said_words(each) if isinstance(each, Mapping) else "?" for each in block)
        words += f", after a history block of {len(block)} turn(s): {turns}"
    return words


def _said_words(origin: Origin) -> str:
    if "seed" in origin:
        seed = origin["seed"]
        return "the seed turn, from the loop's input" if seed == "input" else f"the seed turn, from step {seed}"
    if "answer" in origin:
        return f"the person's answer to the question at {origin['answer']}"
    if "reply" in origin:
        return f"the reply of {origin['reply']} (ai_turn_source: {origin.get('source', '?')})"
    if "user" in origin:
        return f"the output of {origin['user']}, a user turn (user_turn_sources)"
    if "summary" in origin:
        first, last = _pair(origin["summary"])
        return f"a summary of {_turns(first, last)}, made by agent {origin.get('by', '?')}"
    if "turn" in origin:
        path = str(origin["turn"])
        *_, round_number, name = ["", "", *path.split("/")]
        return f"participant {name}'s turn in round {round_number} ({path})"
    if "cue" in origin:
        return "the ensemble's cue: it is this participant's turn (it spoke last)"
    if "thread" in origin:
        return f"a turn of the thread's earlier run {origin['thread']}"
    if "request" in origin:
        return "the request to condense the conversation's oldest turns, with them as a history block"
    if "input" in origin:
        return f"the input of {origin['input']}"
    if "result" in origin:
        return "a tool call's result, in this step's tool loop"
    if "calls" in origin:
        return "the tool calls the model asked for, in this step's tool loop"
    return "not recorded (a run written before flujo recorded why)"


def left_out_words(note: Mapping[str, Any], path: str, agent: str) -> str:
    """A note of turns left out of a call, as a person reads it."""
    first, last = _pair(note.get("turns"))
    turns = _turns(first, last)
    rule = note.get("rule")
    if rule == "window":
        budget, reply = note.get("budget"), note.get("reply")
        if isinstance(budget, int) and isinstance(reply, int):
            window = f"the model's window of {budget + reply:,} tokens minus {reply:,} for the reply"
            return f"{turns} dropped to fit {window} (agent {agent})"
        room = f" of {budget:,} tokens" if isinstance(budget, int) else ""
        share = "its context window minus the reply's share"
        return f"{turns} dropped to fit the prompt budget{room} of agent {agent} ({share})"
    if rule == "use_history":
        return f"{turns} not sent: step {path} opted out (use_history: false)"
    if rule == "takes_history":
        return f"{turns} not sent: agent {agent} takes no history (it moves its input along)"
    if rule == "structured":
        return f"{turns} not sent: the input is structured, no history block can go before it"
    if "max_turns" in note:
        return f"{turns} dropped by {rule} (max_turns {note['max_turns']:,})"
    limit = note.get("max_tokens")
    return (
        f"{turns} dropped by {rule} (max_tokens {limit:,})" if isinstance(limit, int) else f"{turns} left out by {rule}"
    )


def _pair(value: Any) -> tuple[int, int]:
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(each, int) for each in value):
        return value[0], value[1]
    return 0, 0


def _turns(first: int, last: int) -> str:
    return f"turn {first}" if first == last else f"turns {first}–{last}"


def left_out(call: CallNode, provenance: Provenance) -> list[Mapping[str, Any]]:
    notes = provenance.why(call).get("left_out")
    return [note for note in notes or () if isinstance(note, Mapping)]


def why_lines(call: CallNode, provenance: Provenance) -> list[str]:
    """What ``--why`` prints for one call: a line per message (its number, role and origin), then a line per
    note of what was left out."""
    head = f"{call.path} · call {call.index + 1} · {call.prompt.agent}"
    lines = [head]
    for number, (message, origin) in enumerate(
        zip(call.prompt.messages, message_origins(call, provenance), strict=True), 1
    ):
        lines.append(f"  {number:>3} {message.get('role', '?')!s:<9} {origin_words(origin)}")
    for note in left_out(call, provenance):
        lines.append(f"  left out: {left_out_words(note, call.path, call.prompt.agent)}")
    return lines


def why_document(calls: Sequence[CallNode], provenance: Provenance) -> dict[str, Any]:
    """``--why --json``: each call's messages with their origins, and what was left out, with the words."""
    return {
        "calls": [
            {
                "path": call.path,
                "index": call.index,
                "agent": call.prompt.agent,
                "messages": [
                    {"role": message.get("role"), "origin": dict(origin), "why": origin_words(origin)}
                    for message, origin in zip(call.prompt.messages, message_origins(call, provenance), strict=True)
                ],
                "left_out": [
                    {**note, "why": left_out_words(note, call.path, call.prompt.agent)}
                    for note in left_out(call, provenance)
                ],
            }
            for call in calls
        ]
    }
