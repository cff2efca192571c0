"""The interfaces core owns for its I/O: agents, the human, the run store, progress reporting; and the
conversation a run context is in. Protocols only.

What they pass are values of the rooms below: the records the run store keeps (runs, steps, trace events,
thread turns) are in ``core.model.records``, an agent's call and reply and a person's question in
``core.model.calls``, the turns of a conversation in ``core.text.turns``.

Implementations live elsewhere: model providers and script agents in ``core.agents``, the SQLite store
in ``core.store``, the terminal prompt and live display in ``flujo_cli``, offline doubles in
``core.testing``. Core never calls ``input()``: a HITL step asks the injected ``HumanInput``, which may
answer ``None`` to mean "no answer available now" (the run then pauses).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from core.model.calls import Activity, AgentCall, AgentReply, ChatMessage, HumanQuestion
from core.model.records import (
    PAGE_SIZE,
    PruneResult,
    RowMark,
    RunRecord,
    RunStatus,
    RunUpdate,
    StepRecord,
    ThreadSummary,
    ThreadTurn,
    TraceEvent,
)
from core.text.turns import ConversationTurn

if TYPE_CHECKING:  # the tools' values: imported by the steps that have tools only
    from core.model.tools import Approve, ModelTurn, ToolCallContext, ToolDef, ToolMode, ToolOutcome


class Agent(Protocol):
    """Anything that can answer an ``AgentCall``."""

    @property
    def label(self) -> str:
        """Short description for messages and traces, e.g. ``openai:gpt-4o-mini`` or ``scripted``."""
        ...

    @property
    def is_model(self) -> bool:
        """True for LLM providers (they take chat messages and report usage)."""
        ...

    @property
    def provider_served(self) -> bool:
        """True when a provider serves the calls (a hosted API, a local server): what a call uses is the
        provider's, so each is journaled before it is sent, and a call whose reply a stopped process never
        recorded still counts (docs/durability.md). False for offline doubles and script agents."""
        ...

    @property
    def takes_history(self) -> bool:
        """Whether a conversation's history is sent to this agent: as chat messages to a model, as a text
        block before the input of a script. False for agents that only move their input along (the
        ``passthrough`` and ``stringify`` builtins): a history block would become part of their output.
        The agents that take the history are also those that speak: their replies can be assistant turns."""
        ...

    @property
    def prompt_budget(self) -> int | None:
        """The most tokens a prompt to this agent may hold (its context window minus the reply reserve);
        None when unbounded (script agents) or unknown. Conversation history is cut to fit."""
        ...

    @property
    def model_name(self) -> str | None:
        """The model, for choosing a tokenizer (``openai:gpt-4o``); None for non-model agents."""
        ...

    @property
    def reply_cap(self) -> int | None:
        """The most tokens a reply may hold (``model_settings.max_tokens``); None when not capped (or not
        a model). The run reserves it, with the prompt, against ``max_tokens``."""
        ...

    def estimate_cost_usd(self, prompt_tokens: int) -> float | None:
        """The most a call with a prompt of ``prompt_tokens`` may cost: the prompt at the input price plus
        the reply cap (``model_settings.max_tokens``, when set) at the output price. 0.0 for agents that
        cost nothing; None when the price is unknown. The run reserves it against ``max_cost_usd``."""
        ...

    def prompt(self, call: AgentCall) -> list[ChatMessage]:
        """The messages this agent will send for ``call``, exactly as sent (before redaction)."""
        ...

    async def run(self, call: AgentCall) -> AgentReply: ...

    def replayed(self) -> None:
        """An earlier attempt of this run already got this call's reply (resume replays it from the
        journal instead of calling). Stateful agents, such as scripted ones, advance past it."""
        ...


class ConversationScope(Protocol):
    """The ``conversation: true`` loop a run context is in (``RunContext.conversation``), as the context and the
    layers below the conversation see it: which loop, what its current iteration received, whether it continues
    the run's thread. The conversation's own value (``core.conversation.turns.ActiveConversation``) has the
    rest: its settings and which steps make turns."""

    @property
    def loop(self) -> str: ...

    @property
    def iteration_input(self) -> Any: ...

    @property
    def threaded(self) -> bool: ...


@runtime_checkable
class ToolTurns(Protocol):
    """An agent whose model can use tools (``core.policies.tool_loop`` drives it): each turn sends the
    messages so far and the tools, and gets back text and the calls the model asks for."""

    @property
    def tool_mode(self) -> ToolMode:
        """How this agent tells its model of tools unless the blueprint says (``tool_mode``)."""
        ...

    def tool_messages(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> list[ChatMessage]:
        """The messages one turn sends, exactly as sent (before redaction): ``messages`` (the agent's prompt,
        then the loop's assistant and tool messages) as this agent words them in ``mode`` (in ``json`` mode the
        tools are described in the system prompt and the calls and results are text)."""
        ...

    async def tool_turn(
        self, call: AgentCall, messages: Sequence[ChatMessage], tools: Sequence[ToolDef], mode: ToolMode
    ) -> ModelTurn:
        """One exchange: send ``messages`` (``tool_messages``' result) offering ``tools``; the reply's text
        (streamed to ``call.on_text`` where the mode allows) and the tool calls it asks for. Retries, repairs
        and errors as ``run``'s (``ProviderError`` on failure)."""
        ...


class ToolSessions(Protocol):
    """What the tools of one run share (MCP server sessions), opened on first use and closed with the run."""

    def get(self, key: str) -> Any: ...

    def put(self, key: str, value: Any, close: Callable[[], Any]) -> None:
        """Hold ``value`` under ``key``; ``close`` (sync, or returning an awaitable) ends it with the run."""
        ...

    async def aclose(self) -> list[str]:
        """Close everything held (the engine, when the run ends); what failed to close, one line each."""
        ...


@runtime_checkable
class Tool(Protocol):
    """A tool at run time. A call never raises for a failure of the tool's own (an exception in a Python
    tool, a non-zero exit, a timeout, arguments that fail its schema): that is the outcome, ``error`` set, for
    the model to read. It raises only when the run must stop: cancellation, or a ``FlujoError`` about the run
    itself (an MCP server that will not start)."""

    @property
    def name(self) -> str: ...

    @property
    def approve(self) -> Approve:
        """Whether the person is asked before each call (known once ``definition`` has been awaited)."""
        ...

    async def definition(self, sessions: ToolSessions) -> ToolDef:
        """What the model is told of the tool (an MCP tool asks its server, started in ``sessions``)."""
        ...

    async def call(
        self, arguments: Mapping[str, Any], where: ToolCallContext, sessions: ToolSessions
    ) -> ToolOutcome: ...


@runtime_checkable
class ToolSource(Protocol):
    """Tools known only when a run asks their source (an MCP server's tools): the tool loop asks ``listing``
    (the tools as plain JSON data), keeps what it gave in the journal with the step's first model turn, and on
    resume makes the same tools again from that record (``tools``), even if the source has changed since."""

    @property
    def name(self) -> str:
        """The source's name in the blueprint (``tools.NAME``)."""
        ...

    @property
    def source(self) -> str:
        """What the source is, for a person and as the key of its listing in the journal (never a secret)."""
        ...

    async def listing(self, sessions: ToolSessions, run_id: str) -> list[dict[str, Any]]:
        """The tools the source offers now (starting it in ``sessions`` for run ``run_id`` if needed);
        ``FlujoError`` when it cannot say (an MCP server that will not start)."""
        ...

    def tools(self, listing: Sequence[Mapping[str, Any]]) -> list[Tool]:
        """The tools of ``listing`` this source exposes (``include`` limits them); ``ConfigError`` when one it
        must expose is not there."""
        ...


class HumanInput(Protocol):
    """Answers HITL questions. Returns None when no answer is available now (the run pauses)."""

    async def ask(self, question: HumanQuestion) -> str | None: ...


class RunStore(Protocol):
    """Durable storage of runs. Every method that writes commits before it returns.

    A thread is the set of runs created with the same ``RunRecord.thread``; each run owns the turns it
    added to the thread (``record_thread_turns`` replaces them), ordered by run creation, then by index.
    """

    async def create_run(self, run: RunRecord) -> None: ...

    async def record_step(self, step: StepRecord, events: Sequence[TraceEvent]) -> None:
        """Store a finished step and its trace events in one transaction."""
        ...

    async def record_events(self, run_id: str, events: Sequence[TraceEvent]) -> None: ...

    async def update_run(self, run_id: str, update: RunUpdate) -> None:
        """Change run ``run_id`` as ``update`` says; StoreError when there is no such run."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run whose id is ``run_id`` or starts with it; StoreError when a prefix is ambiguous."""
        ...

    async def list_runs(
        self,
        *,
        limit: int = 20,
        status: RunStatus | None = None,
        thread: str | None = None,
        parent_run_id: str | None = None,
        created_after: float | None = None,
        offset: int = 0,
        values: bool = True,
    ) -> list[RunRecord]:
        """Up to ``limit`` runs, newest first, after skipping the ``offset`` newest; only those with
        ``status`` / in ``thread`` / whose parent is ``parent_run_id`` (a sub-workflow's child runs) / created
        at ``created_after`` or later (seconds since the epoch) when given. ``values=False``: each run's
        ``input`` and ``output`` are None, not read (a listing that shows neither: a run's may be 40 MB)."""
        ...

    async def latest_run(self, *, source: str) -> RunRecord | None:
        """The newest run of the blueprint file ``source`` (``RunRecord.source``, the resolved path) that is not
        a sub-workflow's child run; None when there is none."""
        ...

    async def step_counts(self, run_ids: Sequence[str]) -> dict[str, int]:
        """How many steps each of ``run_ids`` has recorded (0 for a run with none or an unknown id)."""
        ...

    async def steps(self, run_id: str) -> list[StepRecord]: ...

    async def events(self, run_id: str, *, kind: str | None = None) -> list[TraceEvent]:
        """The trace events of run ``run_id`` in the order they were recorded; with ``kind``, only those of
        that kind (read without the others' payloads)."""
        ...

    async def step_page(
        self, run_id: str, *, after: int = 0, until: int | None = None, under: str | None = None, limit: int = PAGE_SIZE
    ) -> list[tuple[int, StepRecord]]:
        """A page of the steps of run ``run_id``: up to ``limit`` of them, in the order they were recorded, each
        with its number in that order (``seq``), those numbered after ``after`` (and up to ``until``, when
        given); with ``under``, only the steps at that path or below it. The next page is ``after`` the last
        number of this one. A step recorded again gets a new number (it moves to the end)."""
        ...

    async def event_page(
        self, run_id: str, *, after: int = 0, until: int | None = None, under: str | None = None, limit: int = PAGE_SIZE
    ) -> list[tuple[int, TraceEvent]]:
        """A page of the trace events of run ``run_id``, as ``step_page`` gives its steps. A run of any length
        is read in pages of the same cost (a long list of a payload is read once, not again for each page)."""
        ...

    async def marks(
        self,
        run_id: str,
        of: Literal["steps", "events"],
        *,
        after: int = 0,
        until: int | None = None,
        limit: int = PAGE_SIZE,
    ) -> list[RowMark]:
        """A page of where the steps (or the events) of run ``run_id`` are, as ``step_page`` (``event_page``)
        numbers them, without reading their values."""
        ...

    async def record_thread_turns(self, run_id: str, turns: Sequence[ConversationTurn]) -> None:
        """Replace the turns run ``run_id`` added to its thread by ``turns`` (one transaction). A run in no
        thread (never, or no longer: its thread was deleted) stores nothing; an unknown run is a StoreError."""
        ...

    async def thread_turns(self, thread: str, *, before_run: str | None = None) -> list[ThreadTurn]:
        """The turns of ``thread``: oldest run first, each run's turns in order. With ``before_run``, only
        those of the thread's runs created before run ``before_run`` (none if that run is unknown)."""
        ...

    async def get_thread(self, thread: str) -> ThreadSummary | None:
        """The thread named ``thread``, or None when no run belongs to it."""
        ...

    async def list_threads(self) -> list[ThreadSummary]:
        """Every thread, the one with the latest run first."""
        ...

    async def start_thread(self, run: RunRecord, turns: Sequence[ConversationTurn]) -> bool:
        """Create run ``run`` with ``turns`` as the turns it added to its thread ``run.thread``, in one
        transaction, when no run belongs to that thread yet; False, storing nothing, when one does (a fork of a
        thread starts a new one so: ``core.conversation.threads.fork_thread``)."""
        ...

    async def delete_thread(self, thread: str) -> ThreadSummary | None:
        """Forget ``thread`` (one transaction): its turns are deleted and its runs leave it (they stay in the
        store, in no thread). Returns what was removed, or None when there was no such thread."""
        ...

    async def prune_runs(
        self, *, created_before: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> PruneResult:
        """Delete old runs with everything that belongs to them: steps, events, stored texts, thread turns and
        their sub-workflow child runs (a child run is never chosen on its own: it goes with its parent).

        The runs chosen are the top-level runs (those with no parent in the store) created before
        ``created_before`` and, with ``keep``, not among the ``keep`` newest; both given, both must hold;
        neither given, none. A run a live process is executing (it holds the run's claim) is never deleted:
        it is reported in ``live``. The store holds the claim of each run it deletes until it is gone, so no
        process can start resuming it meanwhile. Stores with files give the freed space back afterwards.
        ``dry_run`` reports what would be deleted and deletes nothing."""
        ...

    async def claim_run(self, run_id: str) -> bool:
        """Claim run ``run_id`` for this process, so no other process executes it at the same time, and
        record this process as its owner. False when a live process (this one included) holds it already.
        A claim ends with ``release_run``, ``close``, or the process, however it ends."""
        ...

    async def release_run(self, run_id: str) -> None: ...

    async def claimed_runs(self, run_ids: Sequence[str]) -> set[str]:
        """The ids of ``run_ids`` whose claim a live process (this one included) holds: the runs being
        executed right now. Asked without taking any claim. A run left ``running`` that is not among them was
        abandoned by a process that died (killed, crashed): ``flujo resume`` takes it at once."""
        ...

    async def close(self) -> None:
        """Release this store's claims and its connection."""
        ...


class Reporter(Protocol):
    """Live progress for whoever watches the run (the CLI's status line, a test's log)."""

    def step_started(self, path: str, name: str, kind: str) -> None: ...

    def step_finished(self, record: StepRecord) -> None: ...

    def text_delta(self, path: str, text: str) -> None: ...

    def agent_replied(self, path: str, name: str, output: Any) -> None:
        """A model agent (or its offline stand-in) answered; the human should see the reply."""
        ...

    def note(self, message: str) -> None: ...

    def activity(self, path: str, activity: Activity) -> None:
        """The agent of the step at ``path`` is loading its model, or thinking (no reply text yet)."""
        ...

    def events_committed(self, events: Sequence[TraceEvent]) -> None:
        """``events`` were just stored (masked, as stored), in the store's order; a sub-workflow's at their
        place in the run (``review/critique``), as ``step_started`` names its steps."""
        ...


class NullReporter:
    """A reporter that shows nothing."""

    def step_started(self, path: str, name: str, kind: str) -> None:
        return None

    def step_finished(self, record: StepRecord) -> None:
        return None

    def text_delta(self, path: str, text: str) -> None:
        return None

    def agent_replied(self, path: str, name: str, output: Any) -> None:
        return None

    def note(self, message: str) -> None:
        return None

    def activity(self, path: str, activity: Activity) -> None:
        return None

    def events_committed(self, events: Sequence[TraceEvent]) -> None:
        return None
