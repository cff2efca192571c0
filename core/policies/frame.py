"""The execution frame: what every step policy shares during one run.

It holds the injected ports (store, human, reporter), the journal of steps already committed by an
earlier attempt of this run (resume replays them instead of executing them again), the usage meter, the
redactor and the thread the run continues. Policies receive it explicitly; there is no global state.

A sub-workflow runs with a frame of its own (its child run's id and journal) whose ``parent`` is the
frame of the run that called it: usage added to a child is added to every ancestor too, and the limits
(checks and the reservations of calls in flight) are the top-level frame's, so a budget covers the whole
tree of runs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.answering.order import Answering
from core.context import RunContext
from core.conversation import ThreadBinding
from core.model.calls import ChatMessage
from core.model.errors import FlujoError, LimitReached, RunError, StoreUnavailable
from core.model.events import AgentStarted, CallSent, KnownEvent, ProcessStarted, ReplyReceived
from core.model.records import Journal, RunRecord, StepRecord, StepStatus, TraceEvent, interrupted_calls
from core.model.usage import FREE_INTERRUPTED_CALL, INTERRUPTED_CALL, ZERO_USAGE, Usage
from core.model.views import ATOMIC, LazyView, copied
from core.ports import Agent, HumanInput, Reporter, RunStore, ToolSessions
from core.steps.kinds import Limits
from core.steps.paths import path_segment
from core.text.redaction import Redactor
from core.text.tokens import count_messages

if TYPE_CHECKING:  # only types here: a replay's and a simulated person's code loads when one is used
    from core.replay.recording import RecordedCall
    from core.replay.replayer import Replay


@dataclass
class Frame:
    run_id: str
    store: RunStore
    human: HumanInput
    reporter: Reporter
    redactor: Redactor
    limits: Limits = field(default_factory=Limits)
    journal: Mapping[str, StepRecord] = field(default_factory=dict)
    usage: Usage = ZERO_USAGE
    # What the calls with a known price cost. ``usage.cost_usd`` is None (unknown) once a model without a
    # price has been called; ``max_cost_usd`` still holds against this lower bound.
    known_cost_usd: float = 0.0
    replays: int = 0  # leaf steps replayed from the journal instead of executed
    # Each recorded failure → the innermost step it failed (composites re-raise the same error object, so
    # the first commit wins). Keyed by the error, not "first failure of the run": a failure that a parallel
    # absorbed (on_branch_failure: ignore) must not be reported as where a later error happened.
    failures: dict[FlujoError, str] = field(default_factory=dict)
    summarizer_failures: int = 0  # consecutive; at 3 the history manager stops summarizing for this run
    # What the calls in flight hold against the limits (``reserve``), until their usage replaces it.
    reserved_tokens: int = 0
    reserved_cost_usd: float = 0.0
    # What the calls interrupted before their reply was recorded may have used (``charge_interrupted``): held
    # against the limits for the rest of the run, as reservations that their usage never replaces.
    interrupted_tokens: int = 0
    interrupted_cost_usd: float = 0.0
    thread: ThreadBinding | None = None  # the thread this run continues (core.conversation), if any
    parent: Frame | None = None  # the calling run's frame, for a sub-workflow's child run
    # Step path → how many times an agent with side effects started there in this run (``begin_attempt``);
    # read from the store's ``agent.started`` events at the first such start, then counted here.
    started: dict[str, int] | None = None
    # Step path → the process group its command agent last started in an earlier process of this run (read
    # with ``started``): what is left of it is ended before the step runs again (``begin_attempt``).
    groups: dict[str, ProcessStarted] = field(default_factory=dict)
    answering: Answering = field(default_factory=Answering)  # who answers besides the human (core.answering.order)
    # What the run's tools share (MCP servers), made by the first tool that uses it (``sessions``: a run without
    # tools imports none of their modules); the engine closes it when the run ends. A sub-workflow's child run
    # shares its parent's.
    tool_sessions: ToolSessions | None = None
    # The recording this run is served from (``flujo run --replay``, ``flujo test``): each agent call, tool
    # call and question is compared with it and served when equal (core.replay). A child run's is its
    # parent's, ``within`` its step.
    replay: Replay | None = None
    # A run taken again by a worker: its child runs as the taking transaction read them (``Journal.children``),
    # by id, each entered once from there (``core.policies.workflow``) instead of from the store.
    taken_children: dict[str, tuple[RunRecord, Journal]] = field(default_factory=dict)

    def sessions(self) -> ToolSessions:
        """What the run's tools share, made at the first use: a child run's is its parent's."""
        if self.tool_sessions is None:
            if self.parent is not None:
                self.tool_sessions = self.parent.sessions()
            else:
                from core.tools.sessions import OpenSessions

                self.tool_sessions = OpenSessions()
        return self.tool_sessions

    def event(self, path: str, event: KnownEvent, sent: Sequence[ChatMessage] | None = None) -> TraceEvent:
        """``event`` of the step at ``path`` with secrets masked, ready to store. Tracing never fails a run:
        a payload that cannot be prepared is replaced by a note saying why. ``sent`` is the messages of an
        ``agent.prompt`` event, given as the message objects (and left out of ``event``): they are masked
        through ``Redactor.messages``, which masks each message object once. Its ``why`` is ids only (step
        paths, agent names, run ids, turn numbers: ``core.model.provenance``), never masked, as an
        event's path is not: walking it for secrets was most of what recording it cost."""
        try:
            payload = event.to_payload()
            why = payload.pop("why", None) if sent is not None else None
            masked = self.redactor.value(payload)
            if sent is not None:
                masked["messages"] = self.redactor.messages(sent)
                if why:  # nothing to say (the turns' origins all said before, the notes as before): none
                    masked["why"] = why
        except Exception as exc:  # a tracing failure must not become the step's failure
            masked = {"trace_error": f"this {event.kind} event could not be recorded: {type(exc).__name__}: {exc}"}
        return TraceEvent(kind=event.kind, path=path, payload=masked, ts=time.time())

    def served_reply(self, prompt: TraceEvent) -> RecordedCall | None:
        """Under a replay, the recorded call that answers the agent call whose ``agent.prompt`` event is
        ``prompt`` (its messages compared as masked); None when the call is to be made (no replay, or it went
        live). ReplayStop when it diverges and the replay stops there."""
        if self.replay is None:
            return None
        messages, tools = prompt.payload.get("messages"), prompt.payload.get("tools")
        return self.replay.agent_reply(
            prompt.path,
            messages if isinstance(messages, list | tuple) else (),
            tools=tools if isinstance(tools, list | tuple) else None,
        )

    def served_event(self, path: str, call: RecordedCall, output: Any = None) -> TraceEvent:
        """The ``agent.reply`` event of a reply served from the recording (``output``: the reply as the
        step uses it, when not the recorded one as it is)."""
        assert self.replay is not None
        reply = ReplyReceived(
            call.output if output is None else output, call.model, replayed_from=self.replay.recording.run_id
        )
        return self.event(path, reply)

    def replayed(self, path: str) -> StepRecord | None:
        """The committed result of ``path`` from an earlier attempt of this run, if any."""
        record = self.journal.get(path)
        return record if record is not None and record.status == "completed" else None

    async def begin_attempt(self, path: str, agent: str) -> int:
        """Record, committed before it starts, that the agent ``agent`` of the step at ``path`` starts its
        side effects; which attempt of that step in this run it is (1 the first time). A step whose process
        was killed after its side effect but before its commit is executed again on resume: its next start
        says attempt 2, so a script can tell that it may have done its work already."""
        if self.started is None:
            counts, groups = _attempts(await self.store.events(self.run_id))
            if self.started is None:  # a parallel branch may have read them meanwhile
                self.started = counts
                self.groups = groups
        left = self.groups.pop(path, None)
        if left is not None:  # an earlier process of this run was killed while this step's command ran
            from core.agents.child_process import end_leftovers

            end_leftovers(left.group, boot=left.boot, since=left.since, run_id=self.run_id)
        attempt = self.started[path] = self.started.get(path, 0) + 1
        await self.record_events([self.event(path, AgentStarted(agent=agent, attempt=attempt))])
        return attempt

    async def process_started(self, path: str, agent: str, pid: int) -> None:
        """Record, committed at once, that the command of the step at ``path`` runs as the leader of process
        group ``pid`` (``ProcessStarted``), where the system lets us tell that group apart later (Linux)."""
        from core.agents.child_process import group_mark

        mark = group_mark(pid)
        if mark is not None:
            boot, since = mark
            event = ProcessStarted(agent=agent, group=pid, boot=boot, since=since)
            await self.record_events([self.event(path, event)])

    async def record_events(self, events: Sequence[TraceEvent]) -> None:
        """Store ``events`` of this run (one transaction) and tell the reporter."""
        await self.store.record_events(self.run_id, events)
        self.reporter.events_committed(events)

    def absorbed_failure(self, path: str) -> str | None:
        """The error of ``path`` if it failed in an earlier attempt inside a step that then completed anyway
        (a parallel with ``on_branch_failure: ignore``): resume replays that failure rather than running
        the step again, because what followed was built on its absence."""
        record = self.journal.get(path)
        if record is None or record.status != "failed":
            return None
        parts = path.split("/")
        for end in range(len(parts) - 1, 0, -1):
            enclosing = self.journal.get("/".join(parts[:end]))
            if enclosing is not None and enclosing.status == "completed":
                return record.error or "failed"
        return None

    def failed_step(self, error: FlujoError) -> str | None:
        """The path of the innermost step ``error`` failed, when a step recorded it."""
        return self.failures.get(error)

    async def commit(
        self,
        *,
        path: str,
        name: str,
        kind: str,
        status: StepStatus,
        started: float,
        input: Any = None,
        output: Any = None,
        error: str | None = None,
        usage: Usage = ZERO_USAGE,
        events: Sequence[TraceEvent] = (),
        failure: FlujoError | None = None,
    ) -> StepRecord:
        """Store one step result with its events (one transaction) and tell the reporter.

        ``failure`` is the error a failed step raises; it remembers where it failed (``failed_step``). A
        store that became unavailable is no step's failure (``StoreUnavailable``): it is raised again, and
        nothing is recorded. A composite step that an earlier attempt already committed as completed (it
        is re-entered on resume to replay its leaves) is not stored again: its events would be duplicated
        in the trace."""
        if isinstance(failure, StoreUnavailable):
            raise failure
        record = StepRecord(
            run_id=self.run_id,
            path=path,
            name=name,
            kind=kind,
            status=status,
            input=input,
            output=output,
            error=error,
            started_at=started,
            duration_s=max(0.0, time.time() - started),
            usage=usage,
        )
        if status != "completed" or self.replayed(path) is None:
            await self.store.record_step(record, events)
            if events:
                self.reporter.events_committed(events)
        if failure is not None:
            self.failures.setdefault(failure, path)
        self.reporter.step_finished(record)
        return record

    async def begin_call(
        self, path: str, step: str, agent: Agent, sent: Sequence[ChatMessage], *, started: float
    ) -> Reservation:
        """Before a call of ``agent`` (by the step at ``path``, whose attempt started at ``started``) sending
        ``sent``: ``reserve_call``, and when a provider serves it (``Agent.provider_served``) a ``CallSent``
        event, committed before the call is sent, so that a resumed run counts the call even if this process
        stops before it records the reply. Offline and script agents write nothing here (a loop of them
        runs at the speed of its commits)."""
        if not agent.provider_served:
            return self.reserve_call(step, agent, sent)
        tokens = count_messages(sent, agent.model_name)
        cap, cost = agent.reply_cap, agent.estimate_cost_usd(tokens)
        held = self.reserve(step, tokens, cost, reply_tokens=cap or 0)
        held.call = CallSent(agent.label, agent.model_name, started, tokens, cap, cost)
        try:
            await self.record_events([self.event(path, held.call)])
        except BaseException:
            self.release(held)
            raise
        return held

    def abandon(self, held: Reservation | None) -> None:
        """A call ended without a result to commit (cancelled, or a signal stopped its step): its reservation
        is given back, unless the call was journaled (``begin_call``), which then counts as interrupted
        (``charge_interrupted``), as a resumed run will count it."""
        if held is None or held.released:
            return
        self.release(held)
        if held.call is not None:
            self.charge_interrupted(held.call)

    def charge_interrupted(self, call: CallSent) -> None:
        """Count ``call``, sent but its reply never recorded, as one request of unknown usage
        (``INTERRUPTED_CALL``), and hold what it may have used against the limits from now on. Its cost is
        known when the most it could cost, prompt and capped reply, is nothing (a local model): 0."""
        free = call.cost_usd == 0.0 and call.reply_cap is not None
        self.add_usage(FREE_INTERRUPTED_CALL if free else INTERRUPTED_CALL)
        top = self
        while top.parent is not None:  # the limits are the top-level run's
            top = top.parent
        top.interrupted_tokens += call.most_tokens
        top.interrupted_cost_usd += call.cost_usd or 0.0

    async def count_interrupted(self) -> None:
        """When an earlier process ran this run: count the calls it sent whose reply it never recorded
        (``core.model.records.interrupted_calls``), each ``charge_interrupted``. Read once, when the run (or a
        child run) is entered again; the run's usage is counted afresh at each resume, so each once."""
        events = await self.store.events(self.run_id, kind=CallSent.kind)
        for call in interrupted_calls(events, self.journal):
            self.charge_interrupted(call)

    def go_on_from(self, earlier: Journal) -> None:
        """This run (or child run) entered again from ``earlier``, what it had recorded as read with the run
        taken again (``Journal``), instead of from the store: the journal of its steps, the attempts its
        agents started and their processes (``begin_attempt`` reads none), its interrupted calls counted
        (``count_interrupted``), and its child runs to enter from there."""
        self.journal = {step.path: step for step in earlier.steps}
        self.started, self.groups = _attempts(earlier.events)
        for call in interrupted_calls(earlier.events, self.journal):
            self.charge_interrupted(call)
        self.taken_children = {record.run_id: (record, journal) for record, journal in earlier.children}

    def reserve(self, step: str, tokens: int, cost_usd: float | None = None, *, reply_tokens: int = 0) -> Reservation:
        """Before a call: hold what it may use, or LimitReached when a limit is already spent or when the
        call's most — ``tokens`` of prompt plus ``reply_tokens`` (its reply cap), and ``cost_usd`` (its most
        expensive outcome, None when the price is unknown) — on top of what is spent and what calls in
        flight hold, would take the run past ``max_tokens`` / ``max_cost_usd``. The hold lasts until the
        call's reported usage replaces it (``charge`` / ``add_usage`` with ``releasing=``, or ``release``),
        so calls running at the same time (parallel branches) cannot together overrun a limit that each
        alone would respect."""
        if self.parent is not None:  # the limits are the top-level run's, spent by the whole tree
            return self.parent.reserve(step, tokens, cost_usd, reply_tokens=reply_tokens)
        self.check_limits()
        token_limit, cost_limit = self.limits.max_tokens, self.limits.max_cost_usd
        most = tokens + reply_tokens if tokens else 0
        held_tokens = self.reserved_tokens + self.interrupted_tokens
        if token_limit is not None and most and self.usage.total_tokens + held_tokens + most > token_limit:
            reply = f" and its reply up to {reply_tokens}" if reply_tokens else ""
            held = f", and {self.reserved_tokens} more are held by calls in flight" if self.reserved_tokens else ""
            if self.interrupted_tokens:
                held += f", and {self.interrupted_tokens} more by interrupted calls of unknown usage"
            raise LimitReached(
                f"token limit reached before calling {step!r}: its prompt needs about {tokens} tokens{reply} and "
                f"{self.usage.total_tokens} of the {token_limit} allowed are used{held}",
                usage=self.usage,
            )
        held_cost = self.reserved_cost_usd + self.interrupted_cost_usd
        if cost_limit is not None and cost_usd and self.known_cost_usd + held_cost + cost_usd > cost_limit:
            held = (
                f", and ${self.reserved_cost_usd:.4f} more is held by calls in flight" if self.reserved_cost_usd else ""
            )
            if self.interrupted_cost_usd:
                held += f", and ${self.interrupted_cost_usd:.4f} more by interrupted calls of unknown usage"
            raise LimitReached(
                f"cost limit reached before calling {step!r}: the call may cost up to ${cost_usd:.4f} and "
                f"${self.known_cost_usd:.4f} of the ${cost_limit:.4f} allowed are spent{held}",
                usage=self.usage,
            )
        reservation = Reservation(
            most if token_limit is not None else 0, (cost_usd or 0.0) if cost_limit is not None else 0.0
        )
        self.reserved_tokens += reservation.tokens
        self.reserved_cost_usd += reservation.cost_usd
        return reservation

    def release(self, held: Reservation | None) -> None:
        """Give back what ``held`` reserved (once; a released reservation is released again as a no-op)."""
        if self.parent is not None:  # reservations are held by the top-level frame
            self.parent.release(held)
            return
        if held is None or held.released:
            return
        held.released = True
        self.reserved_tokens -= held.tokens
        self.reserved_cost_usd -= held.cost_usd

    def charge(self, usage: Usage, *, releasing: Reservation | None = None) -> None:
        """Add a call's usage to the run total (in place of its reservation, ``releasing``); LimitReached
        when a run-wide limit is now exceeded."""
        self.add_usage(usage, releasing=releasing)
        self.check_limits()

    def add_usage(self, usage: Usage, *, releasing: Reservation | None = None) -> None:
        """Add usage to the run total without checking the limits: for steps replayed from the journal, and
        for a failed step's calls (a LimitReached must not hide that failure; if the run goes on, the check
        before its next agent call sees the spend). The reservation ``releasing`` is given back in the same
        step, so no other call ever sees neither."""
        self.release(releasing)
        self.usage = self.usage + usage
        self.known_cost_usd += usage.cost_usd or 0.0
        if self.parent is not None:
            self.parent.add_usage(usage)

    def check_limits(self) -> None:
        """LimitReached when the run has already spent more than a limit allows. Called before each agent
        call too: a parallel branch must not start a call after a sibling has spent a limit."""
        if self.parent is not None:
            self.parent.check_limits()
            return
        limits = self.limits
        if limits.max_tokens is not None and self.usage.total_tokens > limits.max_tokens:
            raise LimitReached(
                f"token limit reached: {self.usage.total_tokens} tokens used, limit is {limits.max_tokens}",
                usage=self.usage,
            )
        if limits.max_cost_usd is not None and self.known_cost_usd > limits.max_cost_usd:
            raise LimitReached(
                f"cost limit reached: {self._spent()}, limit is ${limits.max_cost_usd:.4f}", usage=self.usage
            )

    def reserve_call(self, step: str, agent: Agent, sent: Sequence[ChatMessage]) -> Reservation:
        """``reserve`` for one call of ``agent`` whose prompt is ``sent``: the prompt is counted (with the
        model's tokenizer) only when a limit needs it, and only model agents are counted."""
        if (self.limits.max_tokens is None and self.limits.max_cost_usd is None) or not agent.is_model:
            return self.reserve(step, 0)
        tokens = count_messages(sent, agent.model_name)
        return self.reserve(step, tokens, agent.estimate_cost_usd(tokens), reply_tokens=agent.reply_cap or 0)

    def _spent(self) -> str:
        spent = f"${self.known_cost_usd:.4f} spent"
        if self.usage.cost_usd is None:
            unknown = self.usage.interrupted
            why = "an interrupted call's usage is unknown" if unknown else "a model without a price was called too"
            spent = f"at least {spent} ({why})"
        return spent

    def restate(self, signal: LimitReached) -> LimitReached:
        """``signal`` (raised by one of several calls running at the same time) with the run's spend once
        they have all ended, when the others spent more after it was raised: the message states the truth."""
        if self.parent is not None:
            return self.parent.restate(signal)
        if signal.usage is None or signal.usage == self.usage:
            return signal
        cost = f", {self._spent()}" if self.limits.max_cost_usd is not None else ""
        return LimitReached(
            f"{signal.detail} (when the calls running at the same time ended: "
            f"{self.usage.total_tokens} tokens used{cost})",
            usage=self.usage,
        )


@dataclass
class Reservation:
    """What one call in flight holds against the run's limits (``Frame.reserve``) until its usage is known."""

    tokens: int = 0
    cost_usd: float = 0.0
    released: bool = False
    call: CallSent | None = None  # the call as journaled before it was sent (``Frame.begin_call``)


_NOT_VIEWS = ATOMIC | {dict, list}  # told without an ABC check (a view is a Mapping)


def scope(ctx: RunContext, previous: Any, *, iteration: int | None = None) -> dict[str, Any]:
    """Variables for templates and expressions at this point of the run: copies, never live state.

    ``context`` and ``steps`` are lazy views (copied when read), so preparing a scope costs the same at
    iteration 1,000 as at iteration 1."""
    view = ctx.lazy_view()
    variables: dict[str, Any] = {
        "context": view,
        "previous_step": copied(previous)
        if type(previous) in _NOT_VIEWS or not isinstance(previous, LazyView)
        else previous,
        "steps": view["steps"],
        "initial_prompt": view["initial_prompt"],
    }
    if iteration is not None:
        variables["iteration"] = iteration
    return variables


def child_path(prefix: str, name: str) -> str:
    """The path of the child ``name`` (a step name, a branch key, an iteration) of the step at ``prefix``."""
    segment = path_segment(name)
    return f"{prefix}/{segment}" if prefix else segment


def joined_path(prefix: str, path: str) -> str:
    """``path`` (already a path, of a sub-workflow's child run) seen from the step at ``prefix``."""
    return f"{prefix}/{path}" if prefix and path else prefix or path


def step_error(exc: Exception, what: str) -> FlujoError:
    """``exc`` as the FlujoError a step fails with: ours unchanged, anything else (a user's ``module:function``
    condition or hook raising KeyError, say) wrapped in a RunError naming the step."""
    if isinstance(exc, FlujoError):
        return exc
    return RunError(f"{what} failed: {type(exc).__name__}: {exc}")


def numbered(events: list[TraceEvent], kind: str, told: Mapping[str, int]) -> None:
    """The newest event of ``kind`` in ``events`` replaced by ``with_turn`` of it."""
    for index in range(len(events) - 1, -1, -1):
        if events[index].kind == kind:
            events[index] = with_turn(events[index], told)
            return


def with_turn(event: TraceEvent, told: Mapping[str, int]) -> TraceEvent:
    """``event`` made again to also say the number of the conversation's turn its step made (``told``:
    ``core.model.provenance.told``; a stored payload is never changed), after its payload's first key
    (``{"output": ..., "turn": 3, "model": ...}``): where the store's codes of the keys after it
    (``core.model.pack_tables.JSON_CODES``) still match."""
    items = iter(event.payload.items())
    first = next(items, None)
    payload = {**told} if first is None else {first[0]: first[1], **told, **dict(items)}
    return TraceEvent(event.kind, event.path, payload, event.ts)


def _attempts(events: Sequence[TraceEvent]) -> tuple[dict[str, int], dict[str, ProcessStarted]]:
    """Step path → how many times an agent started there (``agent.started``), and the process group its
    command agent last started in (``agent.process``), from a run's ``events``."""
    counts: dict[str, int] = {}
    groups: dict[str, ProcessStarted] = {}
    for event in events:
        if event.kind == AgentStarted.kind:  # decoding every event of a long run costs
            counts[event.path] = counts.get(event.path, 0) + 1
        elif event.kind == ProcessStarted.kind and isinstance(group := event.data, ProcessStarted):
            groups[event.path] = group
    return counts, groups
