"""What an agent call carries and gives back, as plain values: chat messages, the call, the reply and its
repair, a retry and what the call is doing meanwhile; and the question a run asks a person.

The protocols that send and answer them (``Agent``, ``HumanInput``) are in ``core.ports``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from core.model.usage import ZERO_USAGE, Usage

if TYPE_CHECKING:
    from core.model.tools import ToolCall

# Who says a turn of a conversation; a chat message may also be the system prompt, or (in an agent step's
# tool loop, never in a conversation) a tool's result.
Role = Literal["user", "assistant"]
ChatRole = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ChatMessage:
    """One message of a prompt. In a tool loop an ``assistant`` message may carry the ``tool_calls`` the model
    asked for, and a ``tool`` message is the result of the call whose id is ``tool_call_id`` (``name`` is the
    tool's)."""

    role: ChatRole
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Retry:
    """A provider call that failed in a way worth another try, about to be tried again: ``attempt`` is the
    next attempt (2 for the first retry) of at most ``attempts``, made after ``delay_s`` seconds; ``reason``
    says briefly what went wrong (``timed out after 2 s``, ``HTTP 503: ...``). ``cut`` is set when the
    failed attempt was a streamed reply cut off before its end: the text it had received (and streamed)."""

    attempt: int
    attempts: int
    delay_s: float
    reason: str
    cut: str | None = None


@dataclass(frozen=True)
class Activity:
    """What an agent call is doing before its reply comes, for the person watching: ``loading`` a model on
    this machine (``subject`` names it and its size: ``SmolLM2-135M-Instruct (98 MB)``), then ``thinking``
    (the request is sent; nothing of the reply has come yet). The reporter words it."""

    kind: Literal["loading", "thinking"]
    subject: str = ""


@dataclass(frozen=True)
class AgentCall:
    """Everything an agent receives for one call.

    ``input`` is the step's current input (any JSON-like value); ``history`` the prior conversation
    turns to inject (empty outside conversational loops); ``context`` a read-only plain-data view of the
    run context (script agents may read it; only their return value changes state); ``on_text`` receives
    streamed text deltas when the agent streams; ``on_retry`` hears of each retry of a provider call, before
    its delay; ``on_activity`` hears what the call is doing until its reply comes (``Activity``).

    ``run_id`` and ``path`` name the step execution in the run store (the key a side effect can be made
    idempotent with). ``begin_attempt``, awaited by an agent with side effects just before it starts them,
    durably records that this step starts (an ``agent.started`` trace event, committed at once) and returns
    which attempt of the step in this run it is: 1, then 2 and more when a resume executes it again after a
    failure or a crash (docs/durability.md, at-least-once). ``process_started``, awaited by a command agent
    with its process id once the process started (the leader of its own process group), records it, so
    that a resumed run ends what is left of that group before it executes the step again.
    """

    input: Any
    step: str
    history: Sequence[ChatMessage] = ()
    context: Mapping[str, Any] = field(default_factory=dict)
    on_text: Callable[[str], None] | None = None
    run_id: str = ""
    path: str = ""
    begin_attempt: Callable[[], Awaitable[int]] | None = None
    on_retry: Callable[[Retry], None] | None = None
    process_started: Callable[[int], Awaitable[None]] | None = None
    on_activity: Callable[[Activity], None] | None = None


@dataclass(frozen=True)
class OutputRepair:
    """A structured reply that did not match the agent's ``output_schema``, and the one repair exchange
    that followed: the reply as received, why it was rejected, the repair request sent, and the reply
    to that request as received (the agent's output when valid, else the cause of ``AgentOutputError``)."""

    first_reply: str
    error: str
    request: str
    second_reply: str

    def to_dict(self) -> dict[str, str]:
        return {
            "first_reply": self.first_reply,
            "error": self.error,
            "request": self.request,
            "second_reply": self.second_reply,
        }


@dataclass(frozen=True)
class AgentReply:
    """An agent's answer: the output value (text or JSON-like data) and what it cost. ``repair`` is set
    when the first reply did not match the output_schema and a repair request was needed."""

    output: Any
    usage: Usage = ZERO_USAGE
    model: str | None = None
    attempts: int = 1
    repair: OutputRepair | None = None


YES_WORDS = frozenset({"y", "yes", "allow", "ok", "true", "1"})  # an answer that allows a tool call
NO_WORDS = frozenset({"n", "no", "deny", "decline", "false", "0"})


def yes_or_no(answer: str) -> bool | None:
    """An answer to a ``[y/N]`` question read as a person means it: True for a yes word, False for a no word
    (any case, a trailing ``.`` or ``!`` ignored), None for anything else (a typo such as ``yse``)."""
    word = answer.strip().lower().rstrip(".!")
    return True if word in YES_WORDS else False if word in NO_WORDS else None


@dataclass(frozen=True)
class HumanQuestion:
    """A HITL question. ``error`` is set when the previous answer was rejected and this is a re-ask.
    ``path`` is the asking step's path in its own run; ``full_path`` in the run that was started (a
    sub-workflow's question under the path of the step that runs it; the same as ``path`` elsewhere).
    ``yes_no``: a ``[y/N]`` question (a tool call's approval), which a person at a terminal answers with a
    yes or a no word (Enter: no); what is given otherwise allows the call only when it is a yes word."""

    step: str
    path: str
    message: str
    input_schema: Mapping[str, Any] | None = None
    error: str | None = None
    full_path: str = ""
    yes_no: bool = False
